"""The preparers by task name: each preparer module registers itself, so adding a task is one new module.

A preparer is a module or object with ``RAW_NAME`` (its release folder under the raw root),
``OPTIONS`` (task options and their defaults), ``load_local(raw, opts)``, ``hub_spec(opts)`` and
``from_hub(ds, opts, raw)``; optionally ``generate(root, seed=0) -> folder``, generated data in its
prepared format for tests and the paper-scale dry run (:mod:`.generated` collects them). A module registers itself with ``register("clinc_oos", sys.modules[__name__])``,
an object with ``LM1B = register("lm1b", _LM1B())``. :func:`preparers` imports every module of this
package (except the command line and ``__main__``) so that each registers, and returns them by name.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

PREPARER_API = ("RAW_NAME", "OPTIONS", "load_local", "hub_spec", "from_hub")
_REGISTRY: dict[str, Any] = {}
_NOT_PREPARERS = {"__main__", "cli", "generated"}  # modules that register no preparer


def register(task: str, preparer: Any) -> Any:
    """Register ``preparer`` for ``task`` and return it; one that lacks part of :data:`PREPARER_API`, or a second preparer of the same task, raises."""
    missing = [name for name in PREPARER_API if not hasattr(preparer, name)]
    if missing:
        raise TypeError(f"the preparer of {task!r} lacks {missing}")
    if _REGISTRY.get(task, preparer) is not preparer:
        raise ValueError(f"task {task!r} already has a preparer: {_REGISTRY[task]!r}")
    _REGISTRY[task] = preparer
    return preparer


def preparers() -> dict[str, Any]:
    """Every registered preparer by task name (in the order their modules register, modules alphabetical)."""
    package = __name__.rsplit(".", 1)[0]
    for module in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if module.name not in _NOT_PREPARERS:
            importlib.import_module(f"{package}.{module.name}")
    return dict(_REGISTRY)
