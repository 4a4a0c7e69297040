"""Pages and studies read a run record's fields as :class:`softmax_zoo.run_record.RunRecord` attributes.

Read from the syntax tree of every module of reports/ and studies/: no string naming a path into a record
(``"config.loss.k"``, ``"metrics.test/f1"``, as :func:`softmax_zoo.records.get` and ``group_by`` take), no subscript
or ``.get`` of a record's field (``r["config"]``, ``r.get("metrics")``), no call of ``records.get``.
A Hydra override (``"model.dropout=0.0"``) names a config key, not a record's field: it is no path.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from softmax_zoo.run_record import RunRecord

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "softmax_zoo"
FIELDS = {"config", "metrics", "choices", "timing", "git", "task_info"}  # the fields a record is never subscripted with
TOP = sorted(RunRecord.__dataclass_fields__)
PATH = re.compile(rf"^({'|'.join(TOP)})\.[^=]*$")  # "config.loss.k": a record's field, a dot, a key below it (no "=")


def modules() -> list[Path]:
    return sorted(p for d in ("reports", "studies") for p in (PACKAGE / d).glob("*.py"))


def field_reads(source: str) -> list[str]:
    """Each place ``source`` reaches a record field by a path string, a field subscript or ``records.get``: "line: what"."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value in FIELDS:
            found.append((node.lineno, f"{node.lineno}: [{node.slice.value!r}]"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args
              and isinstance(node.args[0], ast.Constant) and node.args[0].value in FIELDS):
            found.append((node.lineno, f"{node.lineno}: .get({node.args[0].value!r})"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PATH.match(node.value):
            found.append((node.lineno, f"{node.lineno}: path {node.value!r}"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("records") and any(a.name == "get" for a in node.names):
            found.append((node.lineno, f"{node.lineno}: imports records.get"))
    return [what for _, what in sorted(found)]


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_record_field_is_read_by_a_path(path):
    name = str(path.relative_to(PACKAGE))
    found = field_reads(path.read_text(encoding="utf-8"))
    assert not found, f"{name} reads record fields by paths (use RunRecord's attributes): {found}"


def test_the_scan_sees_each_form():
    source = ('get(r, "config.loss.k")\nr["metrics"]["x"]\nr.get("timing")\nfrom ..records import get\nr.option("loss", "k")\n'
              'overrides = ["model.dropout=0.0"]\n')
    assert [f.split(": ")[1].split(" ")[0] for f in field_reads(source)] == ["path", "['metrics']", ".get('timing')", "imports"]
