"""Runtime data code (softmax_zoo.data, and every package outside data/) never imports preparation code."""

from __future__ import annotations

import ast
from pathlib import Path

import softmax_zoo

PACKAGE = Path(softmax_zoo.__file__).parent
PREPARE = "softmax_zoo.data.prepare"


def _imported_modules(source: str, package: str) -> list[str]:
    """Absolute names of what ``source`` imports, relative imports resolved against ``package``."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            names += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return names


def _package_of(path: Path) -> str:
    return ".".join(("softmax_zoo", *path.relative_to(PACKAGE).parent.parts))


def _runtime_files() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if PACKAGE / "data" / "prepare" not in p.parents]


def test_runtime_modules_never_import_preparation():
    files = _runtime_files()
    assert PACKAGE / "data" / "layout.py" in files and PACKAGE / "data" / "lm_stream.py" in files
    offenders = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in files
        for name in _imported_modules(path.read_text(encoding="utf-8"), _package_of(path))
        if name == PREPARE or name.startswith(PREPARE + ".")
    ]
    assert not offenders, offenders


def test_the_scan_resolves_every_import_form():
    source = "import softmax_zoo.data.prepare.io\nfrom ..data import prepare\nfrom .prepare.writer import Prepared\n"
    names = _imported_modules(source, "softmax_zoo.data")
    assert {"softmax_zoo.data.prepare.io", "softmax_zoo.data.prepare", "softmax_zoo.data.prepare.writer"} <= set(names)
