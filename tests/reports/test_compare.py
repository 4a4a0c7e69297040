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
