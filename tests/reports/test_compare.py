"""The comparison engine: a declared comparison (arms, metric, design) gives Δ, its interval and the method's name."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from softmax_zoo.reports._compare import Comparison, Design, Grid, compare, compare_values, per_seed
from softmax_zoo.reports._pages import said
from softmax_zoo.reports._verdicts import Form, VerdictKind


def runs(values: dict[int, float]) -> list[dict]:
    return [{"run_name": f"r{s}", "seed": s, "metrics": {"test/ppl": v}} for s, v in values.items()]


A, B = {0: 10.0, 1: 12.0, 2: 11.0}, {0: 13.0, 1: 14.5, 2: 13.5}


def test_per_seed_reads_one_value_per_seed_and_its_log():
    assert per_seed(runs(A), "test/ppl") == A
    assert per_seed(runs(A), "test/ppl", log=True)[1] == pytest.approx(math.log(12.0))
    with pytest.raises(ValueError, match="two records of seed 0"):
        per_seed(runs(A) + runs({0: 1.0}), "test/ppl")
    with pytest.raises(KeyError, match="no metric test/nope"):
        per_seed(runs(A), "test/nope")


def test_paired_by_seed_is_student_t_over_the_per_seed_deltas():
    found = compare(Comparison("a", "b", "test/ppl", Design.PAIRED_BY_SEED), runs(A), runs(B))
    d = np.array([B[s] - A[s] for s in (0, 1, 2)])
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / math.sqrt(3)
    assert found.delta.delta == pytest.approx(d.mean()) and found.delta.interval == pytest.approx((d.mean() - half, d.mean() + half))
    assert found.method == "paired by seed, Student-t over the per-seed Δ"
    assert found.verdict(direction=+1).kind is VerdictKind.SUPPORTED and found.verdict(-0.5).kind is VerdictKind.CONTRADICTS


def test_unpaired_is_welch_and_names_it():
    found = compare_values(Comparison("a", "b", "ppl", Design.UNPAIRED), A, B)
    welch = stats.ttest_ind(list(B.values()), list(A.values()), equal_var=False)
    low, high = found.delta.interval
    assert found.delta.delta == pytest.approx(np.mean(list(B.values())) - np.mean(list(A.values())))
    assert low < found.delta.delta < high and found.delta.p_value == pytest.approx(welch.pvalue)
    assert found.method == "unpaired, Welch over seeds" and found.verdict() is None  # no claimed sign, no verdict


def test_paired_by_item_needs_the_items_and_bootstraps_each_seed():
    spec = Comparison("a", "b", "rouge1", Design.PAIRED_BY_ITEM)
    with pytest.raises(ValueError, match="per-item scores"):
        compare(spec, runs(A), runs(B))
    items = {s: ([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0 + s]) for s in (0, 1, 2)}
    found = compare(spec, items=items, num_samples=200)
    assert found.delta.deltas == pytest.approx((1.0, 1.25, 1.5)) and found.delta.n_items == (4, 4, 4)
    assert found.method.startswith("paired bootstrap over test items per seed")


def test_no_design_decides_by_overlap_of_the_arms_intervals():
    assert {d.name for d in Design} == {"PAIRED_BY_ITEM", "PAIRED_BY_SEED", "UNPAIRED"}
    # A 11 ± 2.48 and B' 11.67 ± 2.48 overlap almost wholly, yet every seed's B' − A is +0.6..+0.7: paired, that decides
    b = {s: v + 0.6 + 0.05 * s for s, v in A.items()}
    paired = compare(Comparison("A", "B", "test/ppl", Design.PAIRED_BY_SEED), runs(A), runs(b))
    assert paired.delta.interval[0] > 0 and paired.verdict(direction=1).kind is VerdictKind.SUPPORTED
    assert paired.verdict(direction=1).data["d"].method.startswith("paired t")
    unpaired = compare(Comparison("A", "B", "test/ppl", Design.UNPAIRED), runs(A), runs(b))
    welch = unpaired.verdict(direction=1)
    assert welch.kind is VerdictKind.INCONCLUSIVE and welch.data["d"].method.startswith("Welch")


def test_paired_by_seed_pairs_the_seeds_both_arms_have():
    spec = Comparison("a", "b", "test/ppl", Design.PAIRED_BY_SEED)
    found = compare(spec, runs(A), runs({1: 13.0, 2: 12.0, 7: 0.0}))
    assert found.delta.seeds == (1, 2) and found.delta.deltas == pytest.approx((1.0, 1.0))
    assert found.verdict(direction=1).kind is VerdictKind.TOO_FEW_SEEDS
    one = compare(spec, runs(A), runs({0: 11.0}))
    assert one.verdict(direction=1).kind is VerdictKind.SINGLE_RUN and "nan" not in said(one.verdict(direction=1))


def test_compared_delta_is_paired_t_or_welch():
    paired = compare(Comparison("a", "b", "test/ppl", Design.PAIRED_BY_SEED), runs(A), runs(B))
    ref = stats.ttest_rel([B[s] for s in A], [A[s] for s in A])
    assert paired.delta.p_value == pytest.approx(ref.pvalue)
    assert paired.delta.interval == pytest.approx(tuple(ref.confidence_interval(0.95)))
    assert paired.delta.method == "paired t over seeds (n=3)" and paired.delta.df == 2
    unpaired = compare_values(Comparison("a", "b", "ppl", Design.UNPAIRED), A, B)
    ref = stats.ttest_ind(list(B.values()), list(A.values()), equal_var=False)
    assert unpaired.delta.method == "Welch (n=3, 3)" and unpaired.delta.p_value == pytest.approx(ref.pvalue)
    assert unpaired.delta.df == pytest.approx(ref.df)


def test_a_margin_makes_a_two_sided_equivalence_claim_decided_by_tost():
    close = {s: v + 0.05 * (-1) ** s for s, v in A.items()}  # Δ per seed -0.05, +0.05, -0.05
    spec = Comparison("a", "b", "test/ppl", Design.PAIRED_BY_SEED, margin=0.5, margin_source="the paper's own tolerance")
    found = compare(spec, runs(A), runs(close)).verdict()
    assert found.kind is VerdictKind.SUPPORTED and found.form is Form.EQUIVALENCE and found.data["source"] == "the paper's own tolerance"
    assert found.data["eq"].margin == 0.5 and found.data["eq"].method.startswith("TOST")
    # one-sidedly "close" is not close: Δ = +2 per seed, far outside ±0.5
    far = compare(spec, runs(A), runs({s: v + 2.0 + 0.01 * s for s, v in A.items()})).verdict()
    assert far.kind is VerdictKind.CONTRADICTS
    wide = compare(spec, runs(A), runs(B)).verdict()  # Δ 3, 2.5, 2.5 ± wide: not inside ±0.5, 95% interval not wholly outside
    assert wide.kind in (VerdictKind.CONTRADICTS, VerdictKind.INCONCLUSIVE)
    welch = compare_values(Comparison("a", "b", "ppl", Design.UNPAIRED, margin=0.5, margin_source="ours"), A, close).verdict()
    assert welch.data["eq"].method.startswith("TOST at α=0.05 on Welch")
    assert welch.kind is VerdictKind.INCONCLUSIVE  # unpaired: seed spread stays in
    with pytest.raises(ValueError, match="name its source"):
        Comparison("a", "b", "ppl", Design.PAIRED_BY_SEED, margin=0.5)
    no_margin = compare(Comparison("a", "b", "test/ppl", Design.PAIRED_BY_SEED), runs(A), runs(B))
    assert no_margin.verdict() is None and no_margin.verdict(direction=1).form is Form.SIGN  # no margin: no TOST


def test_a_grid_reports_holm_adjusted_intervals_beside_the_raw_and_decides_on_them():
    spec = Comparison("a", "b", "test/ppl", Design.PAIRED_BY_SEED)
    seeds = range(5)
    base = {s: 10.0 + s for s in seeds}
    arms = {k: {s: base[s] + shift + 0.3 * ((s * k) % 3 - 1) for s in seeds} for k, shift in ((5, 1.0), (10, 0.4), (20, 2.0))}
    grid = Grid({k: compare(spec, runs(base), runs(v)) for k, v in arms.items()})
    found, holm = grid.decide(+1)
    for k, h in holm.items():
        raw = grid.compared[k].delta.interval
        assert h.delta == grid.compared[k].delta.delta and h.interval[0] <= raw[0] and h.interval[1] >= raw[1]  # never narrower
        assert (h.p_value < 0.05) == (h.interval[0] > 0 or h.interval[1] < 0) and h.confidence >= 0.95
    raw_apart = [k for k in arms if grid.compared[k].delta.interval[0] > 0]
    adjusted_apart = [k for k in arms if holm[k].interval[0] > 0]
    assert set(adjusted_apart) <= set(raw_apart)
    expected = VerdictKind.SUPPORTED if len(adjusted_apart) == len(arms) else VerdictKind.INCONCLUSIVE
    assert found.kind is expected and found.form is Form.GRID and found.data["m"] == 3 and "margin" not in found.data
    down, _ = Grid({5: grid.compared[5], 99: compare(spec, runs(base), runs({s: v - 3 for s, v in base.items()}))}).decide(+1)
    assert down.kind is VerdictKind.CONTRADICTS and down.data["keys"] == [99]
    with pytest.raises(ValueError, match="direction"):
        grid.decide()


def test_a_grid_of_equivalence_claims_needs_every_one():
    spec = Comparison("a", "b", "test/ppl", Design.PAIRED_BY_SEED, margin=1.0, margin_source="ours")
    near = {s: v + 0.1 * (-1) ** s for s, v in A.items()}
    far = {s: v + 5 + 0.1 * s for s, v in A.items()}
    found, _ = Grid({5: compare(spec, runs(A), runs(near)), 50: compare(spec, runs(A), runs(far))}).decide()
    assert found.kind is VerdictKind.CONTRADICTS and found.data["keys"] == [50]
    assert (found.data["margin"], found.data["source"]) == (1.0, "ours") and found.data["method"].startswith("TOST")
    found, _ = Grid({5: compare(spec, runs(A), runs(near))}).decide()
    assert found.kind is VerdictKind.SUPPORTED


def test_per_seed_partial_leaves_out_runs_without_the_metric():
    rs = runs(A) + [{"run_name": "r3", "seed": 3, "metrics": {}}]
    assert per_seed(rs, "test/ppl", partial=True) == A
    with pytest.raises(KeyError, match="r3 has no"):
        per_seed(rs, "test/ppl")
