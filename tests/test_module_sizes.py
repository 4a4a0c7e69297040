"""Where runs become pages stays readable: a page module fits on a few screens, a function on one.

A page module (reports/, each module not starting with "_", and each of its parts) is at most
:data:`PAGE_LINES` lines; no function in reports/, studies/ or engine.py is over :data:`FUNCTION_LINES`
lines, a nested function counted inside the one that holds it and on its own. A page that grows splits
into ``_``-prefixed parts, each named in the package's ``Modules::`` block.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "softmax_zoo"
PAGE_LINES = 350
FUNCTION_LINES = 60


def long_functions(source: str, limit: int = FUNCTION_LINES) -> list[str]:
    """``"name (N lines)"`` for each function of ``source`` longer than ``limit`` lines, decorators included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if (lines := node.end_lineno - start + 1) > limit:
                found.append(f"{node.name} ({lines} lines)")
    return found


def ids(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


@pytest.mark.parametrize("path", sorted((PACKAGE / "reports").glob("*.py")), ids=ids)
def test_a_page_module_is_at_most_350_lines(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= PAGE_LINES, f"{ids(path)} has {lines} lines (at most {PAGE_LINES}): split a part into a _-prefixed module"


@pytest.mark.parametrize("path", [*sorted((PACKAGE / "reports").glob("*.py")), *sorted((PACKAGE / "studies").glob("*.py")),
                                  PACKAGE / "engine.py"], ids=ids)
def test_no_function_is_over_60_lines(path):
    assert long_functions(path.read_text(encoding="utf-8")) == [], f"{ids(path)}: functions over {FUNCTION_LINES} lines"


def test_the_count_sees_a_long_function_and_its_decorators():
    body = "".join(f"    x{i} = {i}\n" for i in range(58))
    assert long_functions(f"def f():\n{body}    return 0\n") == []  # 60 lines: at the limit
    assert long_functions(f"@cache\ndef f():\n{body}    return 0\n") == ["f (61 lines)"]
    method = "".join(f"        x{i} = {i}\n" for i in range(59))
    assert long_functions(f"class A:\n    def g(self):\n{method}        return 1\n") == ["g (61 lines)"]
