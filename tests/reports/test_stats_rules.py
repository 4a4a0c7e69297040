"""The rules of one comparison: paired t, Welch, TOST, Holm and the verdict, against scipy and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from softmax_zoo.reports._compare import Comparison, Design
from softmax_zoo.reports._stats import (
    DeltaInterval,
    holm,
    holm_intervals,
    over_seeds,
    tost,
    unpaired,
)
from softmax_zoo.reports._verdicts import Form, VerdictKind, decide, equivalence_verdict, verdict

RNG = np.random.default_rng(11)
A, B = RNG.normal(1.0, 1.0, 6), RNG.normal(0.0, 2.0, 5)


def with_p(p: float, df: float = 10, se: float = 1.0) -> DeltaInterval:
    """A Δ > 0 whose two-sided t p-value is ``p`` (df, se given), with its 95% interval."""
    delta = stats.t.isf(p / 2, df) * se
    half = stats.t.ppf(0.975, df) * se
    return DeltaInterval(delta, delta - half, delta + half, p, se, df, 5, 0.95, "paired t over seeds (n=5)")


def deltas(*d: float) -> DeltaInterval:
    """Student-t over seeds of per-seed deltas ``d``."""
    return over_seeds(dict(enumerate(d)))


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_paired_t_over_seeds_is_scipy_ttest_rel(alpha):
    a, b = dict(enumerate(A)), {s: A[s] - 0.4 + 0.3 * RNG.standard_normal() for s in range(6)}
    r = over_seeds({s: a[s] - b[s] for s in a}, 1 - alpha)
    ref = stats.ttest_rel([a[s] for s in range(6)], [b[s] for s in range(6)])
    assert r.delta == pytest.approx(np.mean([a[s] - b[s] for s in range(6)]), rel=1e-12)
    assert (r.low, r.high) == pytest.approx(tuple(ref.confidence_interval(1 - alpha)), rel=1e-10)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10) and r.df == ref.df == 5 and r.n == 6
    assert r.confidence == 1 - alpha and r.method == "paired t over seeds (n=6)"
    # the seeds' order in the mapping does not matter
    assert over_seeds({s: a[s] - b[s] for s in reversed(a)}, 1 - alpha) == r


def test_paired_t_over_one_seed_gives_nan():
    one = over_seeds({4: 0.5})
    assert one.delta == 0.5 and one.n == 1 and all(math.isnan(x) for x in (one.low, one.high, one.p_value))


def welch(a, b) -> DeltaInterval:
    """Welch's Δ = mean(a) − mean(b): the engine's unpaired Δ = B − A with a as B."""
    return unpaired(dict(enumerate(b)), dict(enumerate(a)))


def test_welch_is_scipy_and_the_unpaired_delta():
    r = welch(A, B)
    ref = stats.ttest_ind(A, B, equal_var=False)
    assert r.delta == pytest.approx(A.mean() - B.mean(), rel=1e-12) and r.df == pytest.approx(ref.df, rel=1e-12)
    assert (r.low, r.high) == pytest.approx(tuple(ref.confidence_interval(0.95)), rel=1e-10)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    assert r.n == 5 and r.method == "Welch (n=6, 5)"
    assert r.seeds == (0, 1, 2, 3, 4) and r.seeds_b == (0, 1, 2, 3, 4, 5)  # arm A's and arm B's
    one = welch([1.0], B)
    assert one.n == 1 and math.isnan(one.low) and math.isnan(one.p_value)


@pytest.mark.parametrize(("d", "kind"), [
    ((0.0, 0.1, -0.1, 0.05, -0.05), VerdictKind.SUPPORTED),  # equivalent
    ((5.0, 5.1, 4.9), VerdictKind.CONTRADICTS),  # not equivalent
    ((-5.0, -5.1, -4.9), VerdictKind.CONTRADICTS),
    ((0.0, 2.0, -2.0), VerdictKind.INCONCLUSIVE),
    ((0.9, 1.0, 1.1), VerdictKind.INCONCLUSIVE),  # the 90% interval crosses +margin and the 95% one reaches inside it
    ((0.0, 0.1), VerdictKind.TOO_FEW_SEEDS),
    ((0.0,), VerdictKind.SINGLE_RUN),
])
def test_equivalence_verdicts(d, kind):
    v = equivalence_verdict(deltas(*d), 1.0, "the paper's own seed spread")
    assert v.kind is kind and v.form is Form.EQUIVALENCE and v.data["source"] == "the paper's own seed spread"
    e = v.data["eq"]
    assert e.margin == 1.0 and e.method == f"TOST at α=0.05 on paired t over seeds (n={len(d)})"


def test_tost_is_two_one_sided_scipy_tests_and_the_90_percent_interval():
    x = RNG.normal(0.1, 0.3, 8)
    r = deltas(*x)
    for margin in np.linspace(0.05, 1.0, 40):
        e = tost(r, margin, alpha=0.05)
        lower = stats.ttest_1samp(x, -margin, alternative="greater").pvalue
        upper = stats.ttest_1samp(x, margin, alternative="less").pvalue
        assert e.p_value == pytest.approx(max(lower, upper), rel=1e-9)
        assert e.tost_interval == pytest.approx(tuple(stats.ttest_1samp(x, 0).confidence_interval(0.90)), rel=1e-10)
        assert e.interval == pytest.approx((r.low, r.high), rel=1e-12)
        assert (equivalence_verdict(r, margin, "hand-picked").kind is VerdictKind.SUPPORTED) == (e.p_value < 0.05)


def test_equivalence_needs_a_margin_and_its_source():
    with pytest.raises(ValueError, match="to be > 0"):
        Comparison("a", "b", "ppl", Design.PAIRED_BY_SEED, margin=0.0, margin_source="paper")
    with pytest.raises(ValueError, match="its source"):
        Comparison("a", "b", "ppl", Design.PAIRED_BY_SEED, margin=0.5, margin_source=" ")


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx((0.03, 0.06, 0.06, 0.02), rel=1e-12)
    assert holm([0.5, 0.6]) == (1.0, 1.0) and holm([0.2]) == (0.2,) and holm([]) == ()
    for bad in ([0.1, math.nan], [1.5]):
        with pytest.raises(ValueError, match="p-values in"):
            holm(bad)


def test_holm_intervals_levels_and_the_step_down_stop():
    # all reject: the smaller p at 1 - 0.05/2, the larger at 1 - 0.05/1; both exclude 0
    rows = holm_intervals([with_p(0.02), with_p(0.01)])
    assert [r.confidence for r in rows] == pytest.approx([0.95, 0.975])
    assert [r.p_value for r in rows] == pytest.approx([0.02, 0.02]) and rows[0].method == "Holm-adjusted paired t over seeds (n=5)"
    assert all(r.interval[0] > 0 for r in rows) and (rows[0].delta, rows[0].se, rows[0].df) == (with_p(0.02).delta, 1.0, 10)
    # p 0.03 fails its step (0.025): Holm rejects nothing, and p 0.04 keeps the level 0.975, so it includes 0
    rows = holm_intervals([with_p(0.04), with_p(0.03)])
    assert [r.confidence for r in rows] == pytest.approx([0.975, 0.975]) and [r.p_value for r in rows] == pytest.approx([0.06, 0.06])
    assert all(r.interval[0] <= 0 for r in rows) and with_p(0.04).low > 0


def test_holm_intervals_exclude_0_exactly_when_holm_rejects():
    rng = np.random.default_rng(3)
    for _ in range(200):
        grid = [deltas(*rng.normal(rng.uniform(0, 1.5), 1.0, 5)) for _ in range(rng.integers(1, 7))]
        for r, raw in zip(holm_intervals(grid), grid):
            assert (r.interval[0] > 0 or r.interval[1] < 0) == (r.p_value < 0.05)
            assert r.interval[0] <= raw.low and raw.high <= r.interval[1] and r.delta == raw.delta


@pytest.mark.parametrize(("interval", "direction", "kind"), [
    ((0.1, 0.5), 1, VerdictKind.SUPPORTED), ((0.1, 0.5), -1, VerdictKind.CONTRADICTS),
    ((-0.5, -0.1), -1, VerdictKind.SUPPORTED), ((-0.5, -0.1), 1, VerdictKind.CONTRADICTS),
    ((-0.1, 0.5), 1, VerdictKind.INCONCLUSIVE), ((0.0, 0.5), 1, VerdictKind.INCONCLUSIVE),
])
def test_decide_agrees_with_the_ledger(interval, direction, kind):
    row = DeltaInterval(sum(interval) / 2, *interval, math.nan, 1.0, 2, 3, 0.95, "paired t over seeds (n=3)", seeds=(0, 1, 2))
    v = verdict(row, direction)
    assert decide(interval, direction, 3) is kind is v.kind and v.form is Form.SIGN and v.data["d"] is row


def test_decide_refuses_too_few_seeds_and_bad_input():
    assert decide((0.1, 0.5), 1, 1) is VerdictKind.SINGLE_RUN
    assert decide((math.nan, math.nan), 1, 2) is VerdictKind.TOO_FEW_SEEDS
    with pytest.raises(ValueError, match="direction"):
        decide((0.1, 0.5), 0, 3)
    with pytest.raises(ValueError, match="finite interval"):
        decide((math.nan, 0.5), 1, 4)
