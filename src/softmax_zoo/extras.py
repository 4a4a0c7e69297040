"""The package's extras (pyproject.toml ``[project.optional-dependencies]``) and the check that names a missing one.

The core (``softmax_zoo.losses``) needs torch and numpy only. :func:`require` is called where a part that needs an
extra starts (``softmax_zoo.hf``, ``python -m softmax_zoo.train``, ``python -m softmax_zoo.reports``), so that without
it the error is one line naming the extra to install, not the first module that fails to import.
"""

from __future__ import annotations

import importlib.util

# extra -> the modules it installs that its parts import (their import names).
EXTRAS = {
    "hf": ("transformers", "hydra", "omegaconf"),
    "pipelines": ("transformers", "hydra", "omegaconf", "scipy", "accelerate", "wandb", "rouge_score", "sacrebleu",
                  "matplotlib", "jinja2"),
}


class MissingExtra(ModuleNotFoundError):
    """A part of the package was used without the extra that installs what it needs."""


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` (:data:`EXTRAS`) that cannot be imported here."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require(extra: str, part: str, entry_point: bool = False) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be imported: "softmax_zoo.hf needs the hf
    extra: pip install "softmax_zoo[hf]" (missing: omegaconf)". ``entry_point``: a ``python -m`` command, which
    exits with that line alone instead of a traceback."""
    gone = missing(extra)
    if not gone:
        return
    message = f'{part} needs the {extra} extra: pip install "softmax_zoo[{extra}]" (missing: {", ".join(gone)})'
    if entry_point:
        raise SystemExit(message)
    raise MissingExtra(message, name=gone[0])
