"""The precision page (reports/grad_precision.py): its data from a measurement, its claims rows and their form, the page."""

from __future__ import annotations

import json
import statistics

import pytest

from softmax_zoo.reports import grad_precision as page
from softmax_zoo.reports._forms import ClaimKind
from softmax_zoo.reports._pages import read_claims
from softmax_zoo.studies import grad_precision as study
from tests.studies.test_grad_precision import TINY

META = {"machine": "test machine", "cpu": {"model": "test", "capability": "AVX2"}, "versions": {"torch": "2.13.0+cpu"},
        "date": "2026-01-01 00:00 UTC", "command": "python -m softmax_zoo.studies.grad_precision classes=64",
        "git": {"commit": "0123456789abcdef", "dirty": False, "dirty_paths": [], "dirty_paths_more": 0}}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """A results folder holding a tiny measurement (p_t 0.9 and 0.9999)."""
    root = tmp_path_factory.mktemp("precision")
    (root / "diagnostics").mkdir()
    m = study.measure(**TINY) | META
    (root / page.MEASUREMENT).write_text(json.dumps(m), encoding="utf-8")
    return root, m


def test_spread_is_the_median_and_quartiles():
    assert page.spread([1.0, 2.0, 3.0, 4.0, 100.0]) == {"median": 3.0, "q1": 2.0, "q3": 4.0, "n": 5}
    assert page.spread([0.5]) == {"median": 0.5, "q1": 0.5, "q3": 0.5, "n": 1}


def test_summarise_gives_every_cell_and_one_claims_row_per_precision(measured):
    root, m = measured
    data = page.summarise(root)
    assert len(data["rows"]) == len(m["paths"]) * 3 * 2
    assert [c["id"] for c in data["claims"]] == ["grad-precision-float32", "grad-precision-bfloat16", "grad-precision-float16"]
    cell = next(r for r in data["rows"] if (r["path"], r["precision"], r["p"]) == ("stable_softmax", "float32", 0.9999))
    raw = next(r for r in m["rows"] if (r["path"], r["precision"], r["target_prob"]) == ("stable_softmax", "float32", 0.9999))
    assert cell["target"]["median"] == statistics.median(raw["target_rel"])
    assert cell["target"]["n"] == TINY["rows"] * TINY["seeds"]
    f32 = data["claims"][0]
    assert list(f32["pairs"]) == [0.9999] and f32["holds"]  # the members: p_t >= 0.999 only
    assert f32["form"].kind is ClaimKind.DETERMINISTIC and list(f32["form"].members) == [0.9999]
    assert data["sparse_backward"] == "sparse" and data["torch_lce"] is True


def test_claims_row_fails_where_the_stable_form_is_worse_and_outside_the_rounding():
    def table(standard, stable):
        return {(name, "bfloat16", 0.9999): {"target": {"median": v}}
                for name, v in ((page.STANDARD, standard), *((s, stable) for s in page.STABLE))}

    assert page.claim_row(table(0.1, 0.01), "bfloat16", [0.9999], "here")["holds"]  # below the standard
    assert page.claim_row(table(1e-3, 2e-3), "bfloat16", [0.9999], "here")["holds"]  # within bfloat16's 2^-8
    row = page.claim_row(table(1e-2, 2e-2), "bfloat16", [0.9, 0.9999], "here")
    assert not row["holds"] and row["failing"] == [0.9999] and list(row["form"].members) == [0.9999]


def test_build_writes_the_page_its_figure_and_rows_with_their_form(measured, tmp_path):
    root, _ = measured
    page.build(root, tmp_path)
    text = (tmp_path / "grad_precision.md").read_text(encoding="utf-8")
    assert "python -m softmax_zoo.studies.grad_precision classes=64" in text and "commit 0123456" in text
    assert "The sparse head's backward was the sparse one" in text
    assert (tmp_path / "grad_precision.png").stat().st_size > 0
    rows = read_claims(tmp_path / "claims.md")
    assert rows["grad-precision-float32"]["form"]["kind"] == "deterministic check"
    assert rows["grad-precision-float32"]["verdict"].startswith("deterministic (")
    assert "matches the paper" in rows["grad-precision-float32"]["verdict"]
    page.build(root, tmp_path)  # a rebuild over its own rows keeps each row's form
    assert read_claims(tmp_path / "claims.md")["grad-precision-bfloat16"]["form"]["roundoff"] == 2.0 ** -8


def test_a_missing_measurement_names_its_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="make precision"):
        page.summarise(tmp_path)
