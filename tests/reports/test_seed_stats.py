"""Seed-aware deltas and the verdict vocabulary: against scipy and small hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from softmax_zoo.reports._pages import said, template_words
from softmax_zoo.reports._stats import (
    DeltaInterval,
    LinearTrend,
    min_detectable_delta,
    over_seeds,
    paired_bootstrap,
    paired_seed_deltas,
    seeds_label,
    unpaired,
)
from softmax_zoo.reports._verdicts import (
    MIN_SEEDS,
    Form,
    VerdictKind,
    by_construction,
    claimed_direction,
    deterministic,
    equivalence_verdict,
    grid_verdict,
    no_interval_verdict,
    non_inferiority_verdict,
    not_tested,
    trend_verdict,
    verdict,
)

# Per-item scores of arms A and B for seeds 0, 1, 2: per-item differences [1, 0, 2], [0.5, 0.5], [1.5] * 3,
# so Δ per seed is 1.0, 0.5, 1.5; mean 1.0, SD sqrt((0 + 0.25 + 0.25) / 2) = 0.5.
HAND = {
    0: (np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 5.0])),
    1: (np.array([1.0, 1.0]), np.array([1.5, 1.5])),
    2: (np.array([0.0, 1.0, 2.0]), np.array([1.5, 2.5, 3.5])),
}
T_975_2 = 4.302653  # t_{0.975, 2}


Z_975 = 1.959964  # z_{0.975}


def fixed(deltas: list[float], half: float = 0.3) -> DeltaInterval:
    """Deltas of seeds 0..n-1, each with an item interval delta ± half over 100 items."""
    return over_seeds(dict(enumerate(deltas)), items={s: (d - half, d + half) for s, d in enumerate(deltas)},
                      n_items=dict.fromkeys(range(len(deltas)), 100))


def one_seed() -> DeltaInterval:
    """Seed 0's Δ -0.54 with its item interval [-0.97, -0.06] over 1951 test items."""
    return over_seeds({0: -0.54}, items={0: (-0.97, -0.06)}, n_items={0: 1951})


def test_paired_seed_deltas_by_hand():
    d = paired_seed_deltas(HAND, num_samples=500)
    assert d.seeds == (0, 1, 2) and d.n == 3 and d.n_items == (3, 2, 3)
    assert d.deltas == pytest.approx((1.0, 0.5, 1.5)) and d.delta == pytest.approx(1.0) and d.sd == pytest.approx(0.5)
    half = T_975_2 * 0.5 / math.sqrt(3)
    assert d.interval == pytest.approx((1.0 - half, 1.0 + half), rel=1e-6)
    # dof 2: P(T > t) = (1 - t / sqrt(t^2 + 2)) / 2; t = 1 / (0.5 / sqrt(3)) = sqrt(12)
    t = math.sqrt(12)
    assert d.p_value == pytest.approx(1 - t / math.sqrt(t**2 + 2), rel=1e-9)
    # constant per-item differences give a zero-width item interval; seed 0's is the existing bootstrap's
    seed0 = paired_bootstrap(*HAND[0], num_samples=500, seed=0)
    assert d.item_intervals == ((seed0["low"], seed0["high"]), (0.5, 0.5), (1.5, 1.5))
    assert d.item_se * Z_975 == pytest.approx((seed0["high"] - seed0["low"]) / 2 / 3, rel=1e-6)  # the mean half-width
    assert d.min_detectable_delta == pytest.approx((1.959964 + 0.841621) * 0.5, rel=1e-6)


def test_single_seed_reproduces_the_pooled_bootstrap():
    rng = np.random.default_rng(1)
    a = rng.random(300)
    b = a + 0.02 + 0.1 * rng.standard_normal(300)
    d = paired_seed_deltas({7: (a, b)}, num_samples=2000)
    existing = paired_bootstrap(a, b, num_samples=2000)  # what the pages compute today
    assert d.deltas == (existing["delta"],) and d.item_intervals == ((existing["low"], existing["high"]),)
    assert d.item_se * Z_975 == pytest.approx((existing["high"] - existing["low"]) / 2, rel=1e-6)
    assert d.label == "seed 7" and d.n_items == (300,)
    assert all(math.isnan(x) for x in (d.sd, *d.interval, d.p_value, d.min_detectable_delta))


def test_custom_bootstrap_and_sorted_seeds():
    calls = []

    def corpus(a, b):  # stands in for a corpus statistic over (items, counts) arrays
        calls.append((a.shape, b.shape))
        delta = float(b.sum() - a.sum())
        return {"delta": delta, "low": delta - 1, "high": delta + 1, "p_le_0": 0.0}

    scores = {2: (np.zeros((4, 3)), np.ones((4, 3))), 0: (np.zeros((5, 3)), np.full((5, 3), 2.0))}
    d = paired_seed_deltas(scores, bootstrap=corpus)
    assert d.seeds == (0, 2) and d.deltas == (30.0, 12.0) and d.n_items == (5, 4) and len(calls) == 2
    assert d.item_intervals == ((29.0, 31.0), (11.0, 13.0))
    assert d.item_se == pytest.approx(1.0 / Z_975, rel=1e-6)  # one standard deviation, as the between-seed SD


def test_student_t_against_scipy():
    x = np.random.default_rng(3).normal(0.4, 1.0, size=6)
    d = fixed(list(x))
    ref = stats.ttest_1samp(x, 0.0)
    assert d.interval == pytest.approx(tuple(ref.confidence_interval(0.95)), rel=1e-12)
    assert d.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    assert d.interval == pytest.approx(stats.t.interval(0.95, 5, loc=x.mean(), scale=stats.sem(x)), rel=1e-12)
    assert d.sd == pytest.approx(np.std(x, ddof=1))
    two = fixed([1.0, 2.0])  # 1 degree of freedom: t_{0.975, 1} = 12.706
    assert (two.high - two.low) / 2 == pytest.approx(12.706205 * math.sqrt(0.5) / math.sqrt(2), rel=1e-6)


def test_welch_against_scipy_and_by_hand():
    a, b = {0: 1.0, 1: 2.0, 2: 3.0}, {0: 4.0, 1: 6.0, 2: 8.0}
    d = unpaired(a, b)
    # var a = 1, var b = 4: se^2 = 1/3 + 4/3, dof = (5/3)^2 / ((1/3)^2 / 2 + (4/3)^2 / 2) = 50/17
    half = stats.t.ppf(0.975, 50 / 17) * math.sqrt(5 / 3)
    assert d.delta == 4.0 and d.interval == pytest.approx((4.0 - half, 4.0 + half), rel=1e-9)
    ref = stats.ttest_ind([4.0, 6.0, 8.0], [1.0, 2.0, 3.0], equal_var=False)
    assert d.interval == pytest.approx(tuple(ref.confidence_interval(0.95)), rel=1e-12)
    assert d.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    rng = np.random.default_rng(4)
    xa, xb = rng.normal(0, 1, 5), rng.normal(0.5, 2, 4)
    d = unpaired(dict(enumerate(xa)), dict(enumerate(xb, start=10)))
    ref = stats.ttest_ind(xb, xa, equal_var=False)
    assert d.interval == pytest.approx(tuple(ref.confidence_interval(0.95)), rel=1e-10)
    assert d.p_value == pytest.approx(ref.pvalue, rel=1e-10) and d.n == 4
    assert d.label == "seeds 0, 1, 2, 3, 4 (A) and seeds 10, 11, 12, 13 (B)"
    one = unpaired({0: 1.0}, {0: 2.0, 1: 3.0})
    assert one.n == 1 and all(math.isnan(x) for x in (*one.interval, one.p_value))


def test_min_detectable_delta_by_hand():
    # (z_{0.975} + z_{0.80}) * sd = (1.959964 + 0.841621) * sd
    assert min_detectable_delta(0.5) == pytest.approx(1.4007925, rel=1e-6)
    assert min_detectable_delta(1.0, power=0.5) == pytest.approx(1.959964, rel=1e-6)  # the significance threshold
    # per-arm SD s1 with independent arms: sd of the difference is sqrt(2) * s1, threshold 2.77 * s1
    assert min_detectable_delta(math.sqrt(2) * 1.0, power=0.5) == pytest.approx(2.771808, rel=1e-6)
    assert math.isnan(min_detectable_delta(math.nan))
    # the page note states the numbers the code computes
    note = template_words("_verdicts.j2").SEED_INTERVAL_NOTE
    assert f"{min_detectable_delta(1.0):.2f}" in note and f"t = {stats.t.ppf(0.975, 1):.1f}" in note


def test_invalid_inputs():
    with pytest.raises(ValueError, match="an item interval and an item count per seed"):
        over_seeds({0: 1.0, 1: 2.0}, items={0: (0.0, 1.0)}, n_items={0: 3, 1: 3})
    with pytest.raises(ValueError, match="at least one seed"):
        over_seeds({})
    with pytest.raises(ValueError, match="at least one seed"):
        paired_seed_deltas({})
    with pytest.raises(ValueError, match="values in both arms, got 0 and 1"):
        unpaired({}, {0: 1.0})
    with pytest.raises(ValueError, match="confidence must lie in"):
        over_seeds({0: 1.0, 1: 2.0}, confidence=0.4)


def test_seeds_label():
    assert seeds_label([0]) == "seed 0" and seeds_label((0, 1, 2)) == "seeds 0, 1, 2"


def test_verdict_needs_three_seeds():
    assert MIN_SEEDS == 3
    two = fixed([1.0, 1.01])  # interval 1.005 ± 0.064 excludes 0, but 2 seeds decide nothing
    assert two.interval[0] > 0
    for direction in (1, -1):
        v = verdict(two, direction)
        assert v.kind is VerdictKind.TOO_FEW_SEEDS and "seeds 0, 1" in said(v) and "supported" not in said(v)


def test_verdict_by_direction_with_three_seeds():
    up = fixed([1.0, 1.2, 1.1])
    v = verdict(up, +1)
    assert v.kind is VerdictKind.SUPPORTED and said(v).startswith("supported (seeds 0, 1, 2): Δ +1.10 [")
    assert verdict(up, -1).kind is VerdictKind.CONTRADICTS
    down = fixed([-1.0, -1.2, -1.1])
    assert verdict(down, -1).kind is VerdictKind.SUPPORTED and verdict(down, +1).kind is VerdictKind.CONTRADICTS
    assert said(verdict(down, +1)).startswith("contradicts (seeds 0, 1, 2): Δ -1.10 [")
    across = fixed([-0.5, 0.2, 0.6])
    for direction in (1, -1):
        v = verdict(across, direction)
        assert v.kind is VerdictKind.INCONCLUSIVE and said(v).startswith("inconclusive (seeds 0, 1, 2)")
    with pytest.raises(ValueError, match="direction"):
        verdict(up, 0)


def test_single_run_gives_its_item_interval():
    v = verdict(one_seed(), claimed_direction(0.67))
    assert v.kind is VerdictKind.SINGLE_RUN
    assert said(v) == "single run (seed 0): Δ -0.54 [-0.97, -0.06] over test items"
    lone = verdict(unpaired({0: 1.0}, {0: 1.5}), -1)
    assert lone.kind is VerdictKind.SINGLE_RUN and said(lone) == "single run (seed 0): Δ +0.50 (no interval)"


def test_unpaired_verdict():
    a = {s: v for s, v in enumerate([10.0, 10.2, 10.1])}
    b = {s: v for s, v in enumerate([9.0, 9.1, 9.2])}
    v = verdict(unpaired(a, b), -1)
    assert v.kind is VerdictKind.SUPPORTED and "seeds 0, 1, 2" in said(v)


def test_claimed_direction_and_not_tested():
    assert claimed_direction(0.67) == 1 and claimed_direction(-0.1) == -1
    with pytest.raises(ValueError, match="sign"):
        claimed_direction(0.0)
    v = not_tested("needs scale=paper")
    assert v.kind is VerdictKind.NOT_TESTED and said(v) == "not tested: needs scale=paper"


def test_every_form_has_its_words_and_a_verdict_none_of_its_own():
    """said() words a verdict of each form by that form's macro (a rule without an interval: no_interval, with the
    page's result); str() of a verdict is an error, so a template cannot print one unworded."""
    d, trend = fixed([1.0, 1.2, 1.1]), LinearTrend((1.0, 2.0, 3.0), (0.0, 1.0, 2.1))
    grid = grid_verdict({5: VerdictKind.SUPPORTED}, "seeds 0, 1, 2", method="paired t over seeds (n=3)")
    made = [verdict(d, +1), equivalence_verdict(d, 5.0, "ours"), non_inferiority_verdict(d, 5.0, "ours", "lower"), grid,
            trend_verdict(trend, [3, 3, 3], +1, unit="per k"),
            not_tested("why"), deterministic("0 vs 0", True, where="CPU"), by_construction("how", "tests/a.py::test_b")]
    assert {v.form for v in made} == set(Form) - {Form.NO_INTERVAL}
    for v in made:
        assert said(v).startswith(v.kind.value)
        with pytest.raises(TypeError, match="said"):
            str(v)
    lone = no_interval_verdict([0])
    assert lone.kind is VerdictKind.SINGLE_RUN
    assert str(template_words("_verdicts.j2").no_interval(lone, "ratio 2x")) == "single run (seed 0): ratio 2x"


def seed_summary(d) -> str:
    return str(template_words("_verdicts.j2").seed_summary(d))


def detectability(d, paper: float) -> str:
    return str(template_words("_verdicts.j2").detectability(d, paper))


def test_seed_summary():
    d = paired_seed_deltas(HAND, num_samples=500)
    item = f"{d.item_se:.2f}"
    assert seed_summary(d) == (
        "Δ per seed +1.00, +0.50, +1.50 (seeds 0, 1, 2); mean +1.00 [-0.24, +2.24] (95%, Student-t over seeds); "
        f"between-seed SD 0.50 vs item standard error {item}; smallest Δ one run per arm detects 1.40 (at our scale)"
    )
    assert seed_summary(one_seed()) == "Δ -0.54 [-0.97, -0.06] over 1951 test items (seed 0)"


def test_detectability():
    d = paired_seed_deltas(HAND, num_samples=500)  # SD 0.5: 2.80 * 0.5 = 1.40
    assert detectability(d, 0.67) == (
        "smallest Δ one run per arm detects: 1.40 (2.80 × between-seed SD 0.50, seeds 0, 1, 2; measured at our scale) "
        "vs the paper's +0.67"
    )
    assert detectability(one_seed(), 0.67) == "smallest Δ one run per arm detects: not measured (seed 0; needs >= 2 seeds)"


def test_linear_trend_slope_and_its_student_t_interval_match_the_textbook_formula():
    x, y = (1.0, 2.0, 3.0, 4.0, 5.0), (1.1, 2.9, 5.2, 6.8, 9.1)
    line = LinearTrend(x, y)
    xs, ys = np.array(x), np.array(y)
    slope = ((xs - xs.mean()) * (ys - ys.mean())).sum() / ((xs - xs.mean()) ** 2).sum()
    resid = ys - (ys.mean() + slope * (xs - xs.mean()))
    se = math.sqrt((resid ** 2).sum() / (len(x) - 2) / ((xs - xs.mean()) ** 2).sum())
    half = stats.t.ppf(0.975, len(x) - 2) * se
    assert line.slope == pytest.approx(slope) and line.interval == pytest.approx((slope - half, slope + half))
    assert all(math.isnan(v) for v in LinearTrend((1.0, 2.0), (0.0, 1.0)).interval)  # 2 points: no interval
    with pytest.raises(ValueError, match="distinct x"):
        LinearTrend((1.0, 1.0, 1.0), (0.0, 1.0, 2.0))


def test_trend_verdict_needs_three_points_and_three_seeds_behind_each():
    rising = LinearTrend((40.0, 45.0, 50.0, 55.0), (-1.0, -0.4, 0.1, 0.8))
    assert trend_verdict(rising, [3, 3, 3, 3], +1, unit="per point").kind is VerdictKind.SUPPORTED
    assert trend_verdict(rising, [3, 3, 3, 3], -1, unit="per point").kind is VerdictKind.CONTRADICTS
    assert said(trend_verdict(rising, [3, 1, 3, 3], +1, unit="per point")).startswith("single run (the fewest seeds behind a point: 1")
    assert trend_verdict(rising, [3, 2, 3, 3], +1, unit="per point").kind is VerdictKind.TOO_FEW_SEEDS
    flat = LinearTrend((40.0, 45.0, 50.0), (0.3, -0.2, 0.25))
    assert said(trend_verdict(flat, [3, 3, 3], +1, unit="per point")).startswith("inconclusive: slope")
    two = LinearTrend((40.0, 50.0), (0.0, 1.0))
    assert said(trend_verdict(two, [3, 3], +1, unit="per point")).startswith("too few points (2; a verdict needs 3)")
