"""The comparison engine: a declared comparison (arms, metric, design) gives Δ, its interval and the method's name."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from softmax_zoo.reports._compare import Comparison, Design, compare, compare_values, per_seed
from softmax_zoo.reports._verdicts import VerdictKind


def runs(values: dict[int, float]) -> list[dict]:
    return [{"run_name": f"r{s}", "seed": s, "metrics": {"test/ppl": v}} for s, v in values.items()]


A, B = {0: 10.0, 1: 12.0, 2: 11.0}, {0: 13.0, 1: 14.5, 2: 13.5}


def test_per_seed_reads_one_value_per_seed_and_its_log():
    assert per_seed(runs(A), "metrics.test/ppl") == A
    assert per_seed(runs(A), "metrics.test/ppl", log=True)[1] == pytest.approx(math.log(12.0))
    with pytest.raises(ValueError, match="two records of seed 0"):
        per_seed(runs(A) + runs({0: 1.0}), "metrics.test/ppl")
    with pytest.raises(KeyError, match="no metrics.test/nope"):
        per_seed(runs(A), "metrics.test/nope")


def test_paired_by_seed_is_student_t_over_the_per_seed_deltas():
    found = compare(Comparison("a", "b", "metrics.test/ppl", Design.PAIRED_BY_SEED), runs(A), runs(B))
    d = np.array([B[s] - A[s] for s in (0, 1, 2)])
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / math.sqrt(3)
    assert found.mean == pytest.approx(d.mean()) and found.interval == pytest.approx((d.mean() - half, d.mean() + half))
    assert found.method == "paired by seed, Student-t over seeds"
    assert found.verdict(direction=+1).kind is VerdictKind.SUPPORTED and found.verdict(-0.5).kind is VerdictKind.CONTRADICTS


def test_unpaired_is_welch_and_names_it():
    found = compare_values(Comparison("a", "b", "ppl", Design.UNPAIRED), A, B)
    welch = stats.ttest_ind(list(B.values()), list(A.values()), equal_var=False)
    low, high = found.interval
    assert found.mean == pytest.approx(np.mean(list(B.values())) - np.mean(list(A.values())))
    assert low < found.mean < high and found.delta.p_value == pytest.approx(welch.pvalue)
    assert found.method == "unpaired, Welch over seeds" and found.verdict() is None  # no claimed sign, no verdict


def test_paired_by_item_needs_the_items_and_bootstraps_each_seed():
    spec = Comparison("a", "b", "rouge1", Design.PAIRED_BY_ITEM)
    with pytest.raises(ValueError, match="per-item scores"):
        compare(spec, runs(A), runs(B))
    items = {s: ([1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0 + s]) for s in (0, 1, 2)}
    found = compare(spec, items=items, num_samples=200)
    assert found.delta.deltas == pytest.approx((1.0, 1.25, 1.5)) and found.delta.n_items == (4, 4, 4)
    assert found.method.startswith("paired bootstrap over test items per seed")


def test_intervals_apart_decides_by_each_arms_interval_over_seeds():
    spec = Comparison("A", "B", "metrics.test/ppl", Design.INTERVALS_APART)
    apart = compare(spec, runs(A), runs(B))  # A 11 ± 2.48, B 13.67 ± 1.90: [8.52, 13.48] against [11.77, 15.56] overlap
    assert apart.delta.side == "overlap" and apart.method == Design.INTERVALS_APART.value
    assert apart.verdict(direction=1).kind is VerdictKind.INCONCLUSIVE
    far = compare(spec, runs(A), runs({s: v + 10 for s, v in B.items()}))
    assert far.delta.side == "higher" and far.mean == pytest.approx(12.666, abs=1e-3)
    assert far.verdict(direction=1).kind is VerdictKind.SUPPORTED and far.verdict(direction=-1).kind is VerdictKind.CONTRADICTS
    one = compare(spec, runs({0: 1.0}), runs({0: 2.0}))  # a single value is its own interval
    assert one.delta.side == "higher" and one.verdict(direction=1).kind is VerdictKind.SINGLE_RUN
    assert compare(spec, runs({0: 1.0, 1: 2.0}), runs(B)).verdict(direction=1).kind is VerdictKind.TOO_FEW_SEEDS


def test_all_apart_over_several_k_contradicts_when_one_does():
    from softmax_zoo.reports._compare import all_apart
    from softmax_zoo.reports._verdicts import Verdict

    def v(kind):
        return Verdict(kind, kind.value)

    seeds = [0, 1, 2]
    assert all_apart({5: v(VerdictKind.SUPPORTED), 10: v(VerdictKind.SUPPORTED)}, seeds, "x", "below").kind is VerdictKind.SUPPORTED
    mixed = all_apart({5: v(VerdictKind.SUPPORTED), 10: v(VerdictKind.CONTRADICTS)}, seeds, "x", "below")
    assert mixed.kind is VerdictKind.CONTRADICTS and "k=[10]" in str(mixed)
    assert all_apart({5: v(VerdictKind.INCONCLUSIVE), 10: v(VerdictKind.SUPPORTED)}, seeds, "x", "below").kind is VerdictKind.INCONCLUSIVE
    assert all_apart({5: v(VerdictKind.SINGLE_RUN)}, [0], "x", "below").kind is VerdictKind.SINGLE_RUN


def test_per_seed_partial_leaves_out_runs_without_the_metric():
    rs = runs(A) + [{"run_name": "r3", "seed": 3, "metrics": {}}]
    assert per_seed(rs, "metrics.test/ppl", partial=True) == A
    with pytest.raises(KeyError, match="r3 has no"):
        per_seed(rs, "metrics.test/ppl")
