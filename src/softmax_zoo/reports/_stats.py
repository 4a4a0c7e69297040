"""Statistics the pages share: Student-t intervals over seeds and paired bootstraps over examples."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, int]:
    """Mean and half-width of the Student-t confidence interval over seeds.

    half = t_{(1+confidence)/2, n-1} * s / sqrt(n), s the sample standard deviation (ddof=1).

    Returns:
        (mean, half_width, n); half_width is nan for a single value.
    """
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


def format_mean_ci(values: Sequence[float], scale: float = 1.0, digits: int = 2) -> str:
    """"mean ± half (n=k)" of ``values * scale``; a single value prints as "x (n=1)"."""
    m, half, n = mean_ci([v * scale for v in values])
    if n == 1:
        return f"{m:.{digits}f} (n=1)"
    return f"{m:.{digits}f} ± {half:.{digits}f} (n={n})"


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    num_samples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, float]:
    """Paired bootstrap of the difference of per-example scores ``b - a`` (e.g. sparse - softmax).

    Examples are resampled with replacement (the same indices for both systems); ``statistic``
    maps a (num_samples, n) array of resampled differences to (num_samples,) (default: mean).

    Returns:
        ``{"delta": observed statistic, "low", "high": percentile interval, "p_le_0": fraction of
        resamples with delta <= 0}``.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"a and b must be equal-length non-empty 1-d score lists, got {a.shape} and {b.shape}")
    stat = statistic or (lambda d: d.mean(axis=-1))
    diff = b - a
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(num_samples, diff.size))
    boot = stat(diff[idx])
    alpha = (1 - confidence) / 2
    return {
        "delta": float(stat(diff[None])[0]),
        "low": float(np.quantile(boot, alpha)),
        "high": float(np.quantile(boot, 1 - alpha)),
        "p_le_0": float((boot <= 0).mean()),
    }
