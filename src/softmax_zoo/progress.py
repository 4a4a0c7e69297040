"""Progress bars for training, evaluation and decoding: on at a terminal, off in logs and pipes.

``train.progress`` (auto, true, false) decides; :func:`softmax_zoo.engine.run` calls
:func:`configure` once per run, and evaluation and decoding loops wrap their batches in :func:`bar`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
_enabled = False


def wanted(setting: Any) -> bool:
    """``train.progress`` -> whether to draw bars: auto means "stderr is a terminal"."""
    if setting == "auto":
        return sys.stderr.isatty()
    if isinstance(setting, bool):
        return setting
    raise ValueError(f"train.progress must be auto, true or false, got {setting!r}")


def configure(setting: Any) -> bool:
    """Switch the bars of :func:`bar` on or off for this process; return the choice."""
    global _enabled
    _enabled = wanted(setting)
    return _enabled


def enabled() -> bool:
    """Whether :func:`bar` draws bars."""
    return _enabled


def bar(iterable: Iterable[T], desc: str, total: int | None = None, unit: str = "batch") -> Iterator[T]:
    """``iterable`` with a tqdm bar (on stderr) when enabled, as it is otherwise."""
    if not _enabled:
        return iter(iterable)
    from tqdm.auto import tqdm

    return iter(tqdm(iterable, desc=desc, total=total, unit=unit, leave=False, dynamic_ncols=True))
