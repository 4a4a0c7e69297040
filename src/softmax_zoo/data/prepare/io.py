"""File helpers of data preparation: atomic folder writes, JSON Lines writers, raw lines.

The readers shared with the runtime (UTF-8 text and ``.gz``, JSON and JSON Lines with file:line
errors) are in :mod:`softmax_zoo.data.layout`; file fingerprints in :mod:`softmax_zoo.files`.

A prepared folder only ever appears complete: everything is written into a hidden temporary
sibling (``.<name>.tmp-<pid>``) that is renamed onto ``<name>`` at the very end, so an
interrupted run leaves at most a hidden ``.tmp`` folder, never a ``data/<task>/`` that looks done.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator

from softmax_zoo.data.layout import open_text


def read_lines(path: str | Path) -> list[str]:
    """Lines of a text file without their endings (LF or CRLF; a missing final newline is fine)."""
    with open_text(path) as f:
        return [line.rstrip("\r\n") for line in f]


def dumps_line(obj: dict) -> str:
    """One JSON Lines record: UTF-8 kept as is, keys in the order given, no trailing spaces."""
    return json.dumps(obj, ensure_ascii=False) + "\n"


def write_jsonl(path: str | Path, records: Iterable[dict]) -> int:
    """Write records one per line; returns how many were written."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for rec in records:
            f.write(dumps_line(rec))
            n += 1
    return n


def write_json(path: str | Path, obj: Any) -> None:
    """Write a JSON document deterministically (sorted keys, 2-space indent, final newline)."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


@contextlib.contextmanager
def atomic_dir(final: str | Path) -> Iterator[Path]:
    """Yield a fresh temporary folder that replaces ``final`` only if the block completes.

    The temporary folder is a hidden sibling of ``final`` (same file system, so the rename is
    atomic). On any exception, KeyboardInterrupt included, it is removed and ``final`` is left as
    it was. Stale temporary folders of earlier interrupted runs are removed first.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    for stale in final.parent.glob(f".{final.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
    tmp.mkdir()
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
