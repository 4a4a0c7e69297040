"""The losses modules' paths before the split into methods/, machinery/ and parallel/ still import, and warn."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from softmax_zoo.losses._moved import MOVED, PACKAGE, new_name

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(MOVED))
def test_an_old_path_is_the_moved_module_itself(name):
    new = importlib.import_module(f"{PACKAGE}.{MOVED[name]}.{name}")
    sys.modules.pop(f"{PACKAGE}.{name}", None)  # as in a fresh process: the old path not imported yet
    with pytest.warns(DeprecationWarning, match=f"{PACKAGE}.{name} is now {PACKAGE}.{MOVED[name]}.{name}"):
        old = importlib.import_module(f"{PACKAGE}.{name}")
    assert old is new


def test_the_warning_comes_once_per_old_path():
    code = ("import warnings; warnings.simplefilter('always')\n"
            "with warnings.catch_warnings(record=True) as seen:\n"
            "    import softmax_zoo.losses.chunked\n    from softmax_zoo.losses import chunked\n    import softmax_zoo.losses.chunked\n"
            "print(sum('is now' in str(w.message) for w in seen))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


def test_a_name_that_did_not_move_is_left_to_the_real_finders():
    assert new_name(f"{PACKAGE}.functional") is None and new_name(f"{PACKAGE}.reference") is None
    assert new_name("softmax_zoo.models.chunked") is None
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"{PACKAGE}.no_such_module")


def old_path_imports(source: str) -> list[str]:
    """The old-path module imports of ``source`` (absolute: ``softmax_zoo.losses.chunked``, ``from softmax_zoo.losses import
    chunked``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if new_name(".".join(a.name.split(".")[:3]))]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [node.module] if new_name(".".join(node.module.split(".")[:3])) else []
            found += [f"{node.module}.{a.name}" for a in node.names if node.module == PACKAGE and a.name in MOVED]
    return found


def test_the_project_imports_no_old_path():
    files = [p for d in ("src", "tests", "scripts") for p in (ROOT / d).rglob("*.py") if p.name != "test_moved_paths.py"]
    found = {str(p.relative_to(ROOT)): hits for p in files if (hits := old_path_imports(p.read_text(encoding="utf-8")))}
    assert found == {}
    assert old_path_imports("from softmax_zoo.losses import chunked, SoftmaxHead\nimport softmax_zoo.losses.sparse\n") == [
        "softmax_zoo.losses.chunked", "softmax_zoo.losses.sparse"]


def test_no_subpackage_hides_a_name_the_package_exports():
    """A subpackage named like an export (``variants``, the registry's function) would replace it as the package's
    attribute once imported, and dotted paths through it (Hydra's ``_target_``) would stop resolving."""
    import hydra.utils

    import softmax_zoo.losses as losses

    assert not set(MOVED.values()) & set(losses.__all__) and callable(losses.variants)
    assert hydra.utils.get_class("softmax_zoo.losses.methods.adaptive_cutoffs.MatmulCost").__name__ == "MatmulCost"
