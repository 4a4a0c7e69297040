"""Claims declare their logical form; verdicts follow it: non-inferiority, every member of a declared set, regime gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softmax_zoo.reports._compare import Comparison, Design, Grid, compare_values
from softmax_zoo.reports._forms import DECIDED_BY, ClaimForm, ClaimKind, declared, up_to_quarter
from softmax_zoo.reports._pages import said
from softmax_zoo.reports._regime import DEGENERATE, TRIVIAL, failures, gated
from softmax_zoo.reports._stats import over_seeds
from softmax_zoo.reports._verdicts import Form, VerdictKind, non_inferiority_verdict, not_tested, verdict

RESULTS = Path(__file__).resolve().parents[2] / "results"


def deltas(values: list[float]):
    return over_seeds(dict(enumerate(values)))


def test_every_committed_ledger_row_declares_a_known_form():
    ledger = json.loads((RESULTS / "claims.json").read_text(encoding="utf-8"))
    kinds = {k.value for k in ClaimKind}
    assert ledger and not [cid for cid, row in ledger.items() if row.get("form", {}).get("kind") not in kinds]
    assert all(row["form"]["cue"].strip() for row in ledger.values())
    close = ledger["lm1b-adaptive-speed-ppl"]["form"]
    assert close["kind"] == "non-inferiority" and close["better"] == "lower" and close["margin"] > 0


def test_non_inferiority_is_supported_by_being_better_and_flags_better_beyond_the_margin():
    margin = 0.1
    better = non_inferiority_verdict(deltas([-0.50, -0.52, -0.48]), margin, "ours", "lower")
    assert better.kind is VerdictKind.SUPPORTED and better.data["superior"] and better.data["beyond"]
    close = non_inferiority_verdict(deltas([0.01, -0.01, 0.02]), margin, "ours", "lower")
    assert close.kind is VerdictKind.SUPPORTED and not close.data["beyond"]
    worse = non_inferiority_verdict(deltas([0.50, 0.52, 0.48]), margin, "ours", "lower")
    assert worse.kind is VerdictKind.CONTRADICTS
    wide = non_inferiority_verdict(deltas([0.3, -0.2, 0.05]), margin, "ours", "lower")
    assert wide.kind is VerdictKind.INCONCLUSIVE
    # "higher is better" mirrors it: a Δ of -0.5 on accuracy is worse
    assert non_inferiority_verdict(deltas([-0.50, -0.52, -0.48]), margin, "ours", "higher").kind is VerdictKind.CONTRADICTS
    assert non_inferiority_verdict(deltas([0.1, 0.2]), margin, "ours", "lower").kind is VerdictKind.TOO_FEW_SEEDS
    assert said(better).startswith("supported (seeds 0, 1, 2)") and "better beyond the margin" in said(better)
    with pytest.raises(ValueError, match="better"):
        non_inferiority_verdict(deltas([0.1, 0.2, 0.3]), margin, "ours", "up")


def test_a_comparison_with_better_decides_by_non_inferiority():
    spec = Comparison("a", "b", "m", Design.PAIRED_BY_SEED, margin=0.1, margin_source="ours", better="lower")
    decided = compare_values(spec, {0: 1.0, 1: 1.0, 2: 1.0}, {0: 0.5, 1: 0.52, 2: 0.48}).verdict()
    assert decided.form is Form.NON_INFERIORITY and decided.kind is VerdictKind.SUPPORTED
    with pytest.raises(ValueError, match="better"):
        Comparison("a", "b", "m", Design.PAIRED_BY_SEED, better="lower")


def test_every_member_tests_each_declared_member_on_its_own_interval():
    spec = Comparison("a", "b", "m", Design.PAIRED_BY_SEED)
    a = {0: 0.0, 1: 0.0, 2: 0.0}
    grid = Grid({5: compare_values(spec, a, {0: 1.0, 1: 1.1, 2: 0.9}), 10: compare_values(spec, a, {0: 1.0, 1: 1.2, 2: 0.8}),
                 100: compare_values(spec, a, {0: -1.0, 1: 1.0, 2: 0.1})})
    inside = grid.every([5, 10], +1)
    assert inside.kind is VerdictKind.SUPPORTED and inside.form is Form.GRID and inside.data["members"] == [5, 10]
    assert grid.every([5, 10, 100], +1).kind is VerdictKind.INCONCLUSIVE
    assert "intersection-union" in said(inside)
    with pytest.raises(ValueError, match="members"):
        grid.every([7], +1)


def test_the_wide_range_rule_keeps_k_up_to_a_quarter_of_the_classes():
    grid = [5, 10, 20, 50, 100]
    assert up_to_quarter(grid, 119) == [5, 10, 20] and up_to_quarter(grid, 400) == grid and up_to_quarter(grid, 10) == []


def test_a_form_needs_its_parameters_and_the_verdict_must_be_of_that_form():
    with pytest.raises(ValueError, match="margin"):
        ClaimForm(ClaimKind.NON_INFERIORITY, "close to", better="lower")
    with pytest.raises(ValueError, match="direction"):
        ClaimForm(ClaimKind.NON_INFERIORITY, "close to", margin=0.1, margin_source="ours")
    with pytest.raises(ValueError, match="rule"):
        ClaimForm(ClaimKind.EVERY_MEMBER, "a wide range", members=[5])
    with pytest.raises(ValueError, match="cue"):
        ClaimForm(ClaimKind.SUPERIORITY, " ")
    sign = verdict(deltas([1.0, 1.1, 0.9]), +1)
    superiority = ClaimForm(ClaimKind.SUPERIORITY, "beats")
    assert declared({"id": "x", "form": superiority, "verdict": sign}) is superiority
    with pytest.raises(ValueError, match="declares the form 'non-inferiority' but was decided by 'sign'"):
        declared({"id": "x", "form": ClaimForm(ClaimKind.NON_INFERIORITY, "close", better="lower", margin=0.1,
                                               margin_source="ours"), "verdict": sign})
    declared({"id": "x", "form": superiority, "verdict": not_tested("why")})  # an untested row keeps its claim's form
    with pytest.raises(ValueError, match="declares no form"):
        declared({"id": "x"})
    assert set(DECIDED_BY) == set(ClaimKind)


def test_a_setting_that_fails_a_gate_is_not_comparable_and_keeps_the_test_beside():
    sign = verdict(deltas([-1.0, -1.1, -0.9]), +1)
    failed = failures(DEGENERATE, {"softmax": 0.2, "sparse_softmax": 0.873})
    assert [f.arm for f in failed] == ["sparse_softmax"] and not failures(DEGENERATE, {"softmax": 0.5})
    v = gated(sign, failed)
    assert v.kind is VerdictKind.NOT_COMPARABLE and v.data["test"] is sign
    text = said(v)
    assert text.startswith("not comparable (regime): the sparse arm fails the degenerate gate: 87.3%")
    assert "the test alone: contradicts (seeds 0, 1, 2)" in text
    assert gated(sign, []) is sign and gated(not_tested("why"), failed).kind is VerdictKind.NOT_TESTED
    assert TRIVIAL.fails(1.0) and not TRIVIAL.fails(0.99)
