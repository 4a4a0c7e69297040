"""The import paths of the losses modules before their split into methods/, machinery/ and parallel/.

``import softmax_zoo.losses.chunked`` still works and gives the module ``softmax_zoo.losses.machinery.chunked`` itself
(one module object under both names, so patching either patches both), with a DeprecationWarning naming the new path
the first time the old one is imported. CHANGELOG.md lists each move.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

PACKAGE = __name__.rpartition(".")[0]  # softmax_zoo.losses
MOVED = {  # the module's name under PACKAGE before the split -> the subpackage that holds it now
    **dict.fromkeys(("_core", "chunked", "head", "lean_inference", "memory", "options", "registry", "row_loss", "sparse_linear",
                     "streaming"), "machinery"),
    **dict.fromkeys(("adaptive", "adaptive_cutoffs", "centred_kernel_sampler", "distill", "kernel_sampler", "linear_kd", "sampled",
                     "samplers", "softmax", "sparse", "stable", "stable_kd"), "methods"),
    **dict.fromkeys(("vocab_parallel", "vocab_parallel_head", "vocab_parallel_kd", "vocab_parallel_linear_kd",
                     "vocab_parallel_sampled"), "parallel"),
}


def new_name(old: str) -> str | None:
    """``softmax_zoo.losses.chunked`` -> ``softmax_zoo.losses.machinery.chunked``; None for a name that did not move."""
    package, _, name = old.rpartition(".")
    return f"{PACKAGE}.{MOVED[name]}.{name}" if package == PACKAGE and name in MOVED else None


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path (after the real files were looked for) and loads it as the moved module, warning once."""

    def find_spec(self, fullname, path=None, target=None):
        return importlib.util.spec_from_loader(fullname, self) if new_name(fullname) else None

    def create_module(self, spec) -> ModuleType:
        new = new_name(spec.name)
        warnings.warn(f"{spec.name} is now {new}: import it from there (the old path goes in a later release)",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)  # sys.modules keeps it under the old name: the warning comes once

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the moved module ran when it was imported under its new name."""


def keep_old_paths() -> None:
    """Register :class:`MovedModules` on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(MovedModules())
