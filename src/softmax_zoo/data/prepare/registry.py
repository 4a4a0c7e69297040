"""The preparers by task name: each preparer module registers itself, so adding a task is one new module.

A preparer is a module or object with ``RAW_NAME`` (its release folder under the raw root),
``KIND`` (its prepared format, one of ``layout.KINDS``: "classification", "seq2seq", "lm"),
``OPTIONS`` (task options and their defaults), ``load_local(raw, opts)``, ``hub_spec(opts)`` and
``from_hub(ds, opts, raw)``; optionally ``generate(root, seed=0) -> folder``, generated data in its
prepared format for tests and the paper-scale dry run (:mod:`.generated` collects them). A module registers itself with
``register("clinc_oos", sys.modules[__name__])``,
an object with ``LM1B = register("lm1b", _LM1B())``.

:func:`preparers` imports every module of this package (except the command line and ``__main__``)
and every module named in ``$SOFTMAX_ZOO_PREPARERS`` (comma-separated dotted names, importable, e.g.
on PYTHONPATH: a preparer outside the package), so that each registers, and returns them by name.
A module that fails to import (or to register) is left out with a warning naming it and its error;
the other tasks still prepare, and asking for a task that is missing names the failed modules
(:func:`failed_modules`).
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil
from typing import Any

from softmax_zoo.data.layout import KINDS

log = logging.getLogger(__name__)

PREPARER_API = ("RAW_NAME", "KIND", "OPTIONS", "load_local", "hub_spec", "from_hub")
PREPARER_MODULES = "SOFTMAX_ZOO_PREPARERS"  # env var: preparer modules outside this package
_REGISTRY: dict[str, Any] = {}
_FAILED: dict[str, str] = {}  # module -> its import error
_NOT_PREPARERS = {"__main__", "cli", "generated"}  # modules that register no preparer


def register(task: str, preparer: Any) -> Any:
    """Register ``preparer`` for ``task`` and return it; one that lacks part of :data:`PREPARER_API`, has
    a ``KIND`` outside ``layout.KINDS``, or is a second preparer of the same task, raises (naming its module)."""
    where = getattr(preparer, "__name__", None) or type(preparer).__module__
    missing = [name for name in PREPARER_API if not hasattr(preparer, name)]
    if missing:
        raise TypeError(f"the preparer of {task!r} ({where}) lacks {missing} (see softmax_zoo.data.prepare.registry)")
    if preparer.KIND not in KINDS:
        raise ValueError(f"the preparer of {task!r} ({where}): KIND must be one of {KINDS}, got {preparer.KIND!r}")
    if _REGISTRY.get(task, preparer) is not preparer:
        raise ValueError(f"task {task!r} already has a preparer: {_REGISTRY[task]!r}")
    _REGISTRY[task] = preparer
    return preparer


def preparer_modules() -> list[str]:
    """The modules :func:`preparers` imports: this package's (alphabetical), then ``$SOFTMAX_ZOO_PREPARERS``'."""
    package = __name__.rsplit(".", 1)[0]
    inside = [f"{package}.{m.name}" for m in pkgutil.iter_modules(importlib.import_module(package).__path__)
              if m.name not in _NOT_PREPARERS]
    return inside + [m.strip() for m in os.environ.get(PREPARER_MODULES, "").split(",") if m.strip()]


def preparers() -> dict[str, Any]:
    """Every registered preparer by task name (in the order their modules register); a module that
    fails to import is left out with a warning (:func:`failed_modules`)."""
    for module in preparer_modules():
        if module in _FAILED:
            continue
        try:
            importlib.import_module(module)
        except Exception as error:  # noqa: BLE001 - one broken preparer must not stop the others
            _FAILED[module] = f"{type(error).__name__}: {error}"
            log.warning("preparer module %s left out: %s", module, _FAILED[module])
    return dict(_REGISTRY)


def failed_modules() -> dict[str, str]:
    """Preparer modules that failed to import, with their errors (module -> "TypeError: ...")."""
    return dict(_FAILED)
