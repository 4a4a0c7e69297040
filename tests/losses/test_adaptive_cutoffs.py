"""optimal_cutoffs: the dynamic programme over the paper's cost model, checked by brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from softmax_zoo.losses import AdaptiveSoftmaxHead, optimal_cutoffs
from softmax_zoo.losses.methods.adaptive_cutoffs import MatmulCost, expected_time, measure_matmul_cost

# Illustrative constants: 20 µs per small matmul, 50 G multiply-adds/s, saturated above 10^6.
COST = MatmulCost(c_m=2e-5, lam=2e-11, w0=1e6)


def zipf_counts(num_classes: int, exponent: float = 1.0) -> np.ndarray:
    return 1e6 * np.arange(1, num_classes + 1, dtype=np.float64) ** -exponent


def test_expected_time_is_the_paper_sum():
    counts = np.array([5.0, 3, 2, 1, 1, 1, 0, 0])  # sum 13; cutoffs [2, 5]: shortlist 8/13
    cost = MatmulCost(c_m=1.0, lam=0.5, w0=10.0)
    g = lambda b, n, k: 1.0 + 0.5 * max(0.0, b * n * k - 10.0)  # noqa: E731
    d, widths, B = 16, [8, 4], 13
    p0, p1 = 4 / 13, 1 / 13  # classes 2..4 and 5..7
    want = g(B, d, 2 + 2) + g(p0 * B, d, widths[0]) + g(p0 * B, widths[0], 3) + g(p1 * B, d, widths[1]) + g(p1 * B, widths[1], 3)
    assert expected_time([2, 5], counts, d, B, cost=cost, div_value=2.0) == pytest.approx(want)
    paper = g(B, d, 2 + 2) + g(p0 * B, d, 3) + g(p1 * B, d, 3)  # every cluster at full width d
    assert expected_time([2, 5], counts, d, B, cost=cost) == pytest.approx(paper)


@pytest.mark.parametrize("div_value", [None, 2.0])
@pytest.mark.parametrize("num_clusters", [1, 2, 3])
@pytest.mark.parametrize(
    "cost",
    [COST, MatmulCost(c_m=1e-4, lam=1e-9, w0=0.0), MatmulCost(c_m=0.0, lam=1e-9, w0=5e4)],
    ids=["cpu-like", "overhead-heavy", "threshold"],
)
def test_dp_finds_the_brute_force_optimum(num_clusters, cost, div_value):
    C, d, B = 24, 64, 512
    counts = zipf_counts(C, 1.1)
    chosen = optimal_cutoffs(counts, d, num_clusters, B, cost=cost, div_value=div_value)
    best = min(
        expected_time(list(c), counts, d, B, cost=cost, div_value=div_value)
        for c in itertools.combinations(range(1, C), num_clusters)
    )
    assert expected_time(chosen, counts, d, B, cost=cost, div_value=div_value) == pytest.approx(best, rel=1e-12)


def test_grid_search_is_valid_and_near_the_exact_optimum():
    C, d, B = 1500, 128, 1024
    counts = zipf_counts(C)
    exact = optimal_cutoffs(counts, d, 2, B, cost=COST, grid=C)  # every position is a candidate
    coarse = optimal_cutoffs(counts, d, 2, B, cost=COST, grid=40)
    t_exact = expected_time(exact, counts, d, B, cost=COST)
    t_coarse = expected_time(coarse, counts, d, B, cost=COST)
    assert t_exact <= t_coarse <= 1.1 * t_exact


def test_zipf_words_get_a_shortlist_of_thousands():
    """The paper's model on 100,000 Zipf-distributed classes (B = 4096, d = 512)."""
    cutoffs = optimal_cutoffs(zipf_counts(100_000), 512, 2, 4096, cost=COST)
    assert 1000 < cutoffs[0] < 10_000 < cutoffs[1] < 100_000


def test_never_returns_invalid_cutoffs():
    rng = np.random.default_rng(0)
    for trial in range(30):
        C = int(rng.choice([5, 17, 400, 100_000]))
        J = int(rng.integers(1, min(4, C - 1) + 1))
        counts = -np.sort(-rng.pareto(1.0, C) * (rng.random(C) > 0.3))  # sorted, with zero counts
        counts[0] += 1
        cost = MatmulCost(c_m=10 ** rng.uniform(-6, -3), lam=10 ** rng.uniform(-12, -9), w0=10 ** rng.uniform(0, 8))
        div_value = [None, 4.0][trial % 2]
        cutoffs = optimal_cutoffs(counts, 512, J, int(rng.integers(1, 5000)), cost=cost, div_value=div_value)
        assert len(cutoffs) == J and all(type(c) is int for c in cutoffs), (trial, cutoffs)
        assert 0 < cutoffs[0] and all(a < b for a, b in zip(cutoffs, cutoffs[1:])) and cutoffs[-1] < C, (trial, cutoffs)
    AdaptiveSoftmaxHead(512, C, cutoffs)  # accepted by the head


def test_measured_cost_and_default_path():
    cost = measure_matmul_cost("cpu")
    assert cost.c_m > 0 and cost.lam > 0 and cost.w0 >= 0
    assert measure_matmul_cost("cpu") is cost  # cached
    cutoffs = optimal_cutoffs(torch.tensor(zipf_counts(1000)), 64, 2, 256, device="cpu")
    assert len(cutoffs) == 2 and 0 < cutoffs[0] < cutoffs[1] < 1000


def test_bad_counts_and_sizes():
    good = zipf_counts(10)
    with pytest.raises(ValueError, match=r"counts must be >= 0, got counts\[3\] = -1.0"):
        optimal_cutoffs([5, 4, 3, -1, 0], 8, 1, 4, cost=COST)
    with pytest.raises(ValueError, match=r"decreasing frequency.*counts\[1\] = 1.0 < counts\[2\] = 3.0"):
        optimal_cutoffs([5, 1, 3], 8, 1, 4, cost=COST)
    with pytest.raises(ValueError, match=r"must not all be 0"):
        optimal_cutoffs([0, 0, 0], 8, 1, 4, cost=COST)
    with pytest.raises(ValueError, match=r"counts must be finite, got counts\[1\] = nan"):
        optimal_cutoffs([5, float("nan"), 3], 8, 1, 4, cost=COST)
    with pytest.raises(ValueError, match=r"3 clusters need at least 4 classes, got 3"):
        optimal_cutoffs([5, 4, 3], 8, 3, 4, cost=COST)
    with pytest.raises(ValueError, match=r"num_clusters must be >= 1, got 0"):
        optimal_cutoffs(good, 8, 0, 4, cost=COST)
    with pytest.raises(ValueError, match=r"batch_size must be >= 1, got 0"):
        optimal_cutoffs(good, 8, 1, 0, cost=COST)
    with pytest.raises(ValueError, match=r"div_value must be > 0, got 0"):
        optimal_cutoffs(good, 8, 2, 4, cost=COST, div_value=0.0)
    with pytest.raises(ValueError, match=r"1-D"):
        optimal_cutoffs(np.ones((2, 5)), 8, 1, 4, cost=COST)
