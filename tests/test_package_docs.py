"""Every package's docstring lists each of its modules, one line each, under ``Modules::``.

The block is a reST literal block: the line ``Modules::``, a blank line, then one indented line per
module, the module's name first. A module missing from its package's list, or a listed name that
is no module of the package, fails the test.
"""

from __future__ import annotations

import ast
import pkgutil
import re
from pathlib import Path

import pytest

import softmax_zoo

REPO = Path(__file__).resolve().parents[1]

PACKAGE = Path(softmax_zoo.__file__).parent
PACKAGES = sorted(p.parent for p in PACKAGE.rglob("__init__.py"))


def listed_modules(docstring: str) -> list[str]:
    """The first word of each line of the ``Modules::`` block."""
    lines = docstring.splitlines()
    start = lines.index("Modules::") + 1
    names = []
    for line in lines[start:]:
        if not line.strip():
            if names:
                break
            continue
        if not line.startswith(" "):
            break
        names.append(line.split()[0])
    return names


def modules_of(package: Path) -> set[str]:
    return {m.name for m in pkgutil.iter_modules([str(package)])}


@pytest.mark.parametrize(
    "package",
    PACKAGES,
    ids=lambda p: ".".join(("softmax_zoo", *p.relative_to(PACKAGE).parts)),
)
def test_package_docstring_lists_every_module(package):
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert "Modules::" in docstring.splitlines(), f"{package / '__init__.py'}: no Modules:: block"
    listed = listed_modules(docstring)
    assert len(listed) == len(set(listed)), f"listed twice: {sorted({n for n in listed if listed.count(n) > 1})}"
    assert set(listed) == modules_of(package), {
        "missing": sorted(modules_of(package) - set(listed)), "not modules": sorted(set(listed) - modules_of(package))
    }


def test_the_block_parser_reads_names_and_stops_at_the_block_end():
    doc = "Title.\n\nModules::\n\n    a   the a module\n    _b  private\n\nMore prose naming c.\n"
    assert listed_modules(doc) == ["a", "_b"]


def test_architecture_names_every_module():
    """docs/architecture.md (README's Architecture pointer) names every module of the package (by its file name)."""
    section = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [str(p.relative_to(REPO)) for p in sorted((REPO / "src" / "softmax_zoo").rglob("*.py"))
               if p.stem != "__init__" and not re.search(rf"(?<!\w){re.escape(p.stem)}(?!\w)", section)]
    assert not missing, f"docs/architecture.md does not name: {missing}"
