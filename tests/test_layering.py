"""Nothing imports upward: the building blocks (losses, data, models) never import the layers built on them.

The layers, lowest first: ``losses`` < ``data`` and ``models`` < ``tasks`` < ``engine`` < ``studies`` and
``reports``. A module of a lower layer that imports ``engine``, ``tasks``, ``studies`` or ``reports``
(any import form, at module level or inside a function) fails the test, naming the file and the import.
Scripts (scripts/) build on the package only: one that imports from ``tests`` fails the test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.data.test_data_layering import PACKAGE, _imported_modules, _package_of

UPPER = ("softmax_zoo.engine", "softmax_zoo.tasks", "softmax_zoo.studies", "softmax_zoo.reports")
LOWER = ("losses", "data", "models")
SCRIPTS = PACKAGE.parents[1] / "scripts"


def _upward_imports(path: Path) -> list[str]:
    names = _imported_modules(path.read_text(encoding="utf-8"), _package_of(path))
    return sorted({n for n in names if any(n == u or n.startswith(u + ".") for u in UPPER)})


@pytest.mark.parametrize("layer", LOWER)
def test_building_blocks_never_import_upward(layer):
    files = sorted((PACKAGE / layer).rglob("*.py"))
    assert files, f"softmax_zoo/{layer} holds no modules"
    offenders = [f"{p.relative_to(PACKAGE)} imports {name}" for p in files for name in _upward_imports(p)]
    assert not offenders, offenders


def test_the_scan_sees_an_import_inside_a_function(tmp_path):
    module = PACKAGE / "models" / "distill.py"
    source = "def f():\n    from ..engine import initialise_from\n"
    assert "softmax_zoo.engine.initialise_from" in _imported_modules(source, _package_of(module))


def _test_imports(source: str) -> list[str]:
    return sorted({n for n in _imported_modules(source, "scripts") if n == "tests" or n.startswith("tests.")})


def test_scripts_never_import_from_tests():
    files = sorted(SCRIPTS.rglob("*.py"))
    assert SCRIPTS / "gpu_check.py" in files
    offenders = [f"scripts/{p.relative_to(SCRIPTS)} imports {name}" for p in files for name in _test_imports(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_the_script_scan_sees_every_import_form():
    source = "import tests.engine\ndef f():\n    from tests.lm.conftest import lm_corpus\n"
    assert _test_imports(source) == ["tests.engine", "tests.lm.conftest", "tests.lm.conftest.lm_corpus"]
    assert _test_imports("from softmax_zoo.data.prepare.generated import generated_data\n") == []
