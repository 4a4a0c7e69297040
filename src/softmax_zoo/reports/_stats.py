"""Statistics the pages share: Student-t intervals over seeds, paired bootstraps over test items, Δ of two arms with
its interval in one type for every design (:class:`DeltaInterval`), TOST, Holm, and a linear trend's slope."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, int]:
    """(mean, half-width, n) of the Student-t interval over seeds: half = t_{(1+confidence)/2, n-1} · s / √n, s the
    sample standard deviation (ddof 1); the half-width is nan for a single value."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("mean_ci needs at least one value, got none")
    if x.size == 1:
        return float(x[0]), math.nan, 1
    half = stats.t.ppf((1 + confidence) / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half), int(x.size)


def mean(values: Sequence[float]) -> float:
    """The mean of ``values`` (nan for none)."""
    return mean_ci(values)[0] if len(values) else math.nan


def format_mean_ci(values: Sequence[float], scale: float = 1.0, digits: int = 2, notation: str = "f") -> str:
    """"mean ± half (n=k)" of ``values * scale``, fixed ("f": ``digits`` decimals) or scientific ("e": the half-width
    with one digit fewer, "1.12e-08 ± 5.1e-09 (n=3)"); a single value prints as "x (n=1)"."""
    m, half, n = mean_ci([v * scale for v in values])
    half_digits = digits - 1 if notation == "e" else digits
    return f"{m:.{digits}{notation}}" + ("" if n == 1 else f" ± {half:.{half_digits}{notation}}") + f" (n={n})"


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, num_samples: int = 10_000, confidence: float = 0.95,
                     seed: int = 0) -> dict[str, float]:
    """Paired bootstrap of the mean difference of per-example scores ``b - a`` (e.g. sparse - softmax), examples resampled
    with replacement, the same indices for both systems: ``{"delta": the observed mean, "low", "high": percentile
    interval, "p_le_0": fraction of resamples with delta <= 0}``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"a and b must be equal-length non-empty 1-d score lists, got {a.shape} and {b.shape}")
    diff = b - a
    boot = diff[np.random.default_rng(seed).integers(0, diff.size, size=(num_samples, diff.size))].mean(axis=-1)
    alpha = (1 - confidence) / 2
    return {"delta": float(diff.mean()), "low": float(np.quantile(boot, alpha)), "high": float(np.quantile(boot, 1 - alpha)),
            "p_le_0": float((boot <= 0).mean())}


def min_detectable_delta(sd_delta: float, confidence: float = 0.95, power: float = 0.8) -> float:
    """(z_{(1+confidence)/2} + z_{power}) · sd_delta: the true Δ whose one paired Δ̂ ~ N(Δ, sd_delta²) clears the
    two-sided bar with probability ``power`` (2.802 · sd_delta at 95% and 0.8), sd_delta taken as known."""
    return float((stats.norm.ppf((1 + confidence) / 2) + stats.norm.ppf(power)) * sd_delta)


def _t_interval(mean_value: float, se: float, dof: float, confidence: float) -> tuple[float, float]:
    half = stats.t.ppf((1 + confidence) / 2, dof) * se
    return float(mean_value - half), float(mean_value + half)


def seeds_label(seeds: Sequence[int]) -> str:
    """"seed 0" or "seeds 0, 1, 2": how a claims row names its seeds."""
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(str(s) for s in seeds)


@dataclass(frozen=True)
class DeltaInterval:
    """Δ, a difference of means, with its t interval at ``confidence``, the p-value of Δ = 0, standard error, df, ``n``
    (the seeds behind Δ; for Welch the smaller arm's) and ``method``, the test's name on the row; nan for one seed.
    Paired designs hold each seed's Δ (by item also its bootstrap interval over test items); Welch's both arms' seeds."""

    delta: float
    low: float
    high: float
    p_value: float
    se: float
    df: float
    n: int
    confidence: float
    method: str
    seeds: tuple[int, ...] = ()
    deltas: tuple[float, ...] = ()  # per seed, in the order of ``seeds``
    item_intervals: tuple[tuple[float, float], ...] = ()  # per seed: (low, high) of the bootstrap over its test items
    n_items: tuple[int, ...] = ()  # per seed: test items paired
    seeds_b: tuple[int, ...] = ()

    @classmethod
    def from_bootstraps(cls, per_seed: Mapping[int, dict[str, float]], n_items: Mapping[int, int],
                        confidence: float = 0.95) -> DeltaInterval:
        """From seed -> ``{"delta", "low", "high", ...}`` (as :func:`paired_bootstrap` returns) and seed -> items."""
        return over_seeds({s: float(b["delta"]) for s, b in per_seed.items()}, confidence,
                          items={s: (float(b["low"]), float(b["high"])) for s, b in per_seed.items()}, n_items=n_items)

    def at(self, confidence: float) -> tuple[float, float]:
        return _t_interval(self.delta, self.se, self.df, confidence)

    @property
    def interval(self) -> tuple[float, float]:
        return self.low, self.high

    @property
    def label(self) -> str:
        """"seeds 0, 1, 2", or for unpaired arms with different seeds "seeds 0, 1 (A) and seed 2 (B)"."""
        if self.seeds_b and self.seeds_b != self.seeds:
            return f"{seeds_label(self.seeds)} (A) and {seeds_label(self.seeds_b)} (B)"
        return seeds_label(self.seeds)

    @property
    def sd(self) -> float:
        """Between-seed standard deviation of the per-seed Δ (ddof 1); nan for one seed."""
        return float(np.std(self.deltas, ddof=1)) if len(self.deltas) > 1 else math.nan

    @property
    def item_se(self) -> float:
        """The mean over seeds of the item bootstraps' half-widths over z_{(1+c)/2}: the item standard error of a seed's Δ."""
        if not self.item_intervals:
            return math.nan
        half = float(np.mean([(high - low) / 2 for low, high in self.item_intervals]))
        return half / float(stats.norm.ppf((1 + self.confidence) / 2))

    @property
    def detectable_factor(self) -> float:
        """The smallest Δ one run per arm detects per unit of between-seed SD: :func:`min_detectable_delta` of 1 (2.80 at 95%)."""
        return min_detectable_delta(1.0, self.confidence)

    @property
    def min_detectable_delta(self) -> float:
        """:func:`min_detectable_delta` of the between-seed SD (95%, power 0.8: 2.80 · SD); nan for one seed."""
        return min_detectable_delta(self.sd, self.confidence)


def _interval(delta: float, se: float, df: float, n: int, confidence: float, method: str, **detail: Any) -> DeltaInterval:
    if not 0.5 < confidence < 1:
        raise ValueError(f"confidence must lie in (0.5, 1), got {confidence}")
    low, high = _t_interval(delta, se, df, confidence)
    p_value = float(2 * stats.t.sf(abs(delta / se), df)) if se != 0 else math.nan if delta == 0 else 0.0  # two-sided, of Δ = 0
    return DeltaInterval(delta, low, high, p_value, se, df, n, confidence, method, **detail)


def over_seeds(deltas: Mapping[int, float], confidence: float = 0.95, *, items: Mapping[int, tuple[float, float]] | None = None,
               n_items: Mapping[int, int] | None = None) -> DeltaInterval:
    """Student-t over seeds of the per-seed Δ (seed -> Δ), as scipy.stats.ttest_1samp; ``items`` and ``n_items``: each
    seed's bootstrap interval over its test items and their count (paired by item)."""
    seeds = tuple(sorted(deltas))
    if not seeds:
        raise ValueError("a Δ over seeds needs at least one seed, got none")
    detail = {}
    if items is not None or n_items is not None:
        if not set(items or ()) == set(n_items or ()) == set(seeds):
            raise ValueError(f"need an item interval and an item count per seed {seeds}, got {items} and {n_items}")
        detail = {"item_intervals": tuple(items[s] for s in seeds), "n_items": tuple(int(n_items[s]) for s in seeds)}  # type: ignore[index]
    d = np.array([deltas[s] for s in seeds], dtype=np.float64)
    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.nan
    return _interval(float(d.mean()), se, d.size - 1, d.size, confidence, f"paired t over seeds (n={d.size})", seeds=seeds,
                     deltas=tuple(float(x) for x in d), **detail)


def paired_seed_deltas(scores: Mapping[int, tuple[Any, Any]], *, num_samples: int = 10_000,
                       bootstrap: Callable[[Any, Any], dict[str, float]] | None = None) -> DeltaInterval:
    """Δ = B − A per seed from ``scores`` (seed -> (A's per-item scores, B's)) with its :func:`paired_bootstrap`, or
    ``bootstrap(a, b)`` for a statistic that is not a mean over items (corpus BLEU); Student-t over the seeds at 95%."""
    run = bootstrap or (lambda a, b: paired_bootstrap(a, b, num_samples=num_samples))
    per_seed = {seed: run(a, b) for seed, (a, b) in scores.items()}
    return DeltaInterval.from_bootstraps(per_seed, {seed: len(a) for seed, (a, _) in scores.items()})


def unpaired(a: Mapping[int, float], b: Mapping[int, float], confidence: float = 0.95) -> DeltaInterval:
    """Welch's t of Δ = mean(B) − mean(A) over two arms not paired by seed (seed -> value each), as
    scipy.stats.ttest_ind(b, a, equal_var=False); an arm of one value gives a nan interval."""
    seeds_a, seeds_b = tuple(sorted(a)), tuple(sorted(b))
    if not seeds_a or not seeds_b:
        raise ValueError(f"Welch needs values in both arms, got {len(seeds_a)} and {len(seeds_b)}")
    va, vb = [float(a[s]) for s in seeds_a], [float(b[s]) for s in seeds_b]
    n, se, df = min(len(va), len(vb)), math.nan, math.nan
    if n > 1:
        var_a, var_b = (np.var(v, ddof=1) / len(v) for v in (va, vb))
        se = float(math.sqrt(var_a + var_b))
        df = float((var_a + var_b) ** 2 / (var_a**2 / (len(va) - 1) + var_b**2 / (len(vb) - 1)) if var_a + var_b else math.inf)
    return _interval(float(np.mean(vb) - np.mean(va)), se, df, n, confidence, f"Welch (n={len(vb)}, {len(va)})",
                     seeds=seeds_a, seeds_b=seeds_b)


@dataclass(frozen=True)
class LinearTrend:
    """The least-squares slope through points (each one replicate, e.g. a mean over seeds) and its Student-t interval
    from scipy.stats.linregress's standard error; (nan, nan) with 2 points."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y) or len(self.x) < 2 or len(set(self.x)) < 2:
            raise ValueError(f"a trend needs >= 2 points with distinct x, got x={self.x}, y={self.y}")

    @property
    def n_points(self) -> int:
        return len(self.x)

    @property
    def slope(self) -> float:
        return float(stats.linregress(self.x, self.y).slope)

    @property
    def interval(self) -> tuple[float, float]:
        if self.n_points < 3:
            return math.nan, math.nan
        return _t_interval(self.slope, float(stats.linregress(self.x, self.y).stderr), self.n_points - 2, self.confidence)


@dataclass(frozen=True)
class Tost:
    """Two one-sided tests of |Δ| < ``margin`` at ``alpha``: the numbers an equivalence verdict is decided on."""

    delta: float  # the estimate of Δ
    tost_interval: tuple[float, float]  # at 1 − 2α: inside ±margin is equivalence
    interval: tuple[float, float]  # at 1 − α: wholly outside ±margin is non-equivalence
    p_value: float  # the larger of the two one-sided p-values
    margin: float
    alpha: float
    method: str


def tost(delta: DeltaInterval, margin: float, alpha: float = 0.05) -> Tost:
    """TOST of |Δ| < ``margin`` (> 0: :class:`._compare.Comparison` validates it with its source) at ``alpha``."""
    tost_interval, two_sided = delta.at(1 - 2 * alpha), delta.at(1 - alpha)
    with np.errstate(divide="ignore"):  # se = 0: t = ±inf, p = 0 or 1
        low_t, high_t = (np.float64(delta.delta) + margin) / delta.se, (np.float64(delta.delta) - margin) / delta.se
    p = max(float(stats.t.sf(low_t, delta.df)), float(stats.t.cdf(high_t, delta.df)))
    return Tost(delta.delta, tost_interval, two_sided, p, margin, alpha, f"TOST at α={alpha:g} on {delta.method}")


def holm(p_values: Sequence[float]) -> tuple[float, ...]:
    """Holm's step-down adjusted p-values, in the input order: reject at α iff the adjusted p-value < α."""
    p = np.asarray(p_values, dtype=np.float64)
    if p.ndim != 1 or not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"holm needs p-values in [0, 1], got {list(p_values)}")
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(1.0, (p.size - np.arange(p.size)) * p[order]))
    out = np.empty_like(p)
    out[order] = stepped
    return tuple(float(x) for x in out)


def holm_intervals(comparisons: Sequence[DeltaInterval], alpha: float = 0.05) -> tuple[DeltaInterval, ...]:
    """Each comparison with its Holm-adjusted p-value and interval, in the input order: step i (from 0, smallest p first)
    gets the level 1 − α/(m − i) while every earlier step rejected, those not rejected the level of the first such
    step (Strassburger & Bretz 2008), so an adjusted interval excludes 0 exactly when Holm rejects at α."""
    adjusted, m, steps, stop = holm([c.p_value for c in comparisons]), len(comparisons), {}, None
    order = sorted(range(m), key=lambda i: comparisons[i].p_value)
    for i, j in enumerate(order):  # i = 0 for the smallest p
        if stop is None and not comparisons[j].p_value < alpha / (m - i):
            stop = i
        steps[j] = 1 - alpha / (m - (i if stop is None else stop))
    return tuple(replace(c, low=c.at(steps[j])[0], high=c.at(steps[j])[1], p_value=adjusted[j], confidence=steps[j],
                         method=f"Holm-adjusted {c.method}") for j, c in enumerate(comparisons))
