"""Choosing adaptive-softmax cluster boundaries with the cost model of Grave et al. 2017, Sec. 4.

The paper models the time of a matrix multiplication of a (B, d) batch by a (d, k) classifier as

    g(k, B) = c_m + max(0, λ (k B − k0 B0))

(constant below a work threshold k0 B0, linear above), and the expected time of an adaptive
softmax with shortlist V_h and J tail clusters V_i, cluster i reached by a fraction p_i of the
batch, as g(|V_h| + J, B) + Σ_i g(|V_i|, p_i B). Writing the work of a (B, n) @ (n, k) matmul
as B·n·k (the paper's k·B at n = d),

    g(B, n, k) = c_m + λ max(0, B n k − w0),
    T(c_0, ..., c_{J-1}) = g(B, d, c_0 + J) + Σ_i g(p_i B, d, c_{i+1} − c_i)          (the paper's)

or, with ``div_value`` given, the layout of :class:`AdaptiveSoftmaxHead` with reduced tail
widths d_i = d // div^(i+1) (Sec. 4, "adapting the classifier capacity"), two matmuls a cluster:

    T = g(B, d, c_0 + J) + Σ_i [g(p_i B, d, d_i) + g(p_i B, d_i, c_{i+1} − c_i)].

The model ignores accuracy, and the second form makes rare clusters so cheap that it favours
very short shortlists (e.g. 19 classes of 100,000); the paper partitions at full width and
reduces the capacity afterwards, hence the default ``div_value=None``.

T is a sum of per-cluster terms, each depending only on the cluster's two boundaries, so the
optimum over frequency-sorted classes is found by dynamic programming over boundary positions
(exactly, over every position when C − 1 ≤ ``grid``; over a log-spaced grid of positions plus
all small ones otherwise). Assumptions: classes are sorted by decreasing frequency (class 0
most frequent), the expected batch share of cluster i is its share of ``counts``, and the
forward matmuls stand for the whole step (the backward repeats them at about twice the cost).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..machinery._core import check_positive


def check_cutoffs(cutoffs: Sequence[int], num_classes: int) -> list[int]:
    """Return ``cutoffs`` as a list of ints; raise ``ValueError`` unless 0 < c_0 < ... < c_{J-1} < C."""
    cutoffs = list(cutoffs)
    if not cutoffs:
        raise ValueError("cutoffs must hold at least one value, got []")
    for c in cutoffs:
        if isinstance(c, bool) or int(c) != c:
            raise ValueError(f"cutoffs must be integers, got {c!r} in {cutoffs}")
    cutoffs = [int(c) for c in cutoffs]
    if any(b <= a for a, b in zip(cutoffs, cutoffs[1:])):
        raise ValueError(f"cutoffs must be strictly increasing, got {cutoffs}")
    if cutoffs[0] <= 0 or cutoffs[-1] >= num_classes:
        bad = cutoffs[0] if cutoffs[0] <= 0 else cutoffs[-1]
        raise ValueError(f"cutoffs must lie in (0, num_classes) = (0, {num_classes}), got {bad} in {cutoffs}")
    return cutoffs


def tail_widths(in_features: int, num_clusters: int, div_value: float) -> list[int]:
    """Projection width of each tail cluster: max(1, d // div^(i+1)).

    torch's ``AdaptiveLogSoftmaxWithLoss`` takes d // div^(i+1) as it is, so a small d (32 at div 4:
    8, 2, 0) leaves a late cluster a 0-dimensional projection, whose classes are then equally likely
    whatever the hidden state; here such a cluster keeps a rank-1 projection.
    """
    if div_value <= 0:
        raise ValueError(f"div_value must be > 0, got {div_value}")
    return [max(1, int(in_features // (div_value ** (i + 1)))) for i in range(num_clusters)]


@dataclass(frozen=True)
class MatmulCost:
    """g(B, n, k) = c_m + lam · max(0, B·n·k − w0) seconds for a (B, n) @ (n, k) matmul.

    Args:
        c_m: seconds of a small matmul (launch and overhead).
        lam: seconds per multiply-add once the device is saturated.
        w0: multiply-adds below which the time stays c_m (the paper's k0·B0 times d).
    """

    c_m: float
    lam: float
    w0: float

    def __call__(self, batch, n, k):
        return self.c_m + self.lam * np.maximum(0.0, np.asarray(batch, dtype=np.float64) * n * k - self.w0)


_MEASURED: dict[tuple[str, torch.dtype], MatmulCost] = {}


def _seconds_per_call(fn, sync, min_batch_s: float = 2e-3, batches: int = 5) -> float:
    """Least mean time per call over ``batches`` runs of at least ``min_batch_s`` each.

    The minimum filters out time lost to other processes (the CPU may be shared).
    """
    fn()  # warm up
    best = float("inf")
    for _ in range(batches):
        sync()
        calls, t0 = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            if time.perf_counter() - t0 >= min_batch_s:
                break
        sync()
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def measure_matmul_cost(device: torch.device | str | None = None, dtype: torch.dtype = torch.float32) -> MatmulCost:
    """Fit :class:`MatmulCost` to timed (s, 256) @ (256, s) matmuls, s = 4 ... 1024, on ``device``.

    Takes a fraction of a second; the result is cached per (device, dtype) for the process.
    c_m is the median time of the three smallest products; lam the median seconds per
    multiply-add of the three largest, where the device is saturated (time ≈ lam · work); and
    w0 = c_m / lam, where that line meets c_m. On a CPU shared with other busy processes the
    timings (small ones most) are inflated; pass ``cost=`` measured on a quiet machine instead.
    """
    device = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    key = (str(device), dtype)
    if key in _MEASURED:
        return _MEASURED[key]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sizes = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
    work, seconds = [], []
    for s in sizes:
        a = torch.randn(s, 256, device=device, dtype=dtype)
        b = torch.randn(256, s, device=device, dtype=dtype)
        work.append(s * 256 * s)
        seconds.append(_seconds_per_call(lambda: a @ b, sync))
    c_m = statistics.median(seconds[:3])
    lam = statistics.median(t / w for t, w in zip(seconds[-3:], work[-3:]))
    cost = MatmulCost(c_m=float(c_m), lam=float(lam), w0=float(c_m / lam))
    _MEASURED[key] = cost
    return cost


def _check_counts(counts, num_clusters: int) -> np.ndarray:
    q = counts.detach().cpu().double().numpy() if torch.is_tensor(counts) else np.asarray(counts, dtype=np.float64)
    if q.ndim != 1:
        raise ValueError(f"counts must be 1-D (one count per class), got shape {q.shape}")
    if q.shape[0] < num_clusters + 1:
        raise ValueError(f"{num_clusters} clusters need at least {num_clusters + 1} classes, got {q.shape[0]} counts")
    if not np.isfinite(q).all():
        i = int(np.argmin(np.isfinite(q)))
        raise ValueError(f"counts must be finite, got counts[{i}] = {q[i]}")
    if (q < 0).any():
        i = int(np.argmax(q < 0))
        raise ValueError(f"counts must be >= 0, got counts[{i}] = {q[i]}")
    if q.sum() <= 0:
        raise ValueError("counts must not all be 0")
    rising = np.nonzero(q[1:] > q[:-1])[0]
    if rising.size:
        i = int(rising[0])
        raise ValueError(
            f"counts must be sorted by decreasing frequency (class 0 the most frequent), "
            f"got counts[{i}] = {q[i]} < counts[{i + 1}] = {q[i + 1]}; renumber the classes first"
        )
    return q / q.sum()


def _check_sizes(in_features: int, num_clusters: int, batch_size: int, div_value: float | None) -> list[int] | None:
    """Validate the sizes; return the tail widths for ``div_value``, None for the paper's model."""
    check_positive(num_clusters=num_clusters, batch_size=batch_size, in_features=in_features)
    return None if div_value is None else tail_widths(in_features, num_clusters, div_value)


def expected_time(
    cutoffs: Sequence[int],
    counts,
    in_features: int,
    batch_size: int,
    *,
    cost: MatmulCost,
    div_value: float | None = None,
) -> float:
    """Modelled forward matmul seconds T(cutoffs) of an adaptive softmax (see the module docstring).

    Args:
        cutoffs: c_0 < ... < c_{J-1}, as for :class:`AdaptiveSoftmaxHead`.
        counts: (C,) class frequencies, sorted decreasing.
        in_features: d. batch_size: B. cost: the matmul model.
        div_value: None for the paper's full-width model, else the head's reduced widths.
    """
    q = _check_counts(counts, len(cutoffs))
    cutoffs = check_cutoffs(cutoffs, q.shape[0])
    widths = _check_sizes(in_features, len(cutoffs), batch_size, div_value)
    bounds = cutoffs + [q.shape[0]]
    total = float(cost(batch_size, in_features, cutoffs[0] + len(cutoffs)))
    for i in range(len(cutoffs)):
        b, k = q[bounds[i] : bounds[i + 1]].sum() * batch_size, bounds[i + 1] - bounds[i]
        if widths is None:
            total += float(cost(b, in_features, k))
        else:
            total += float(cost(b, in_features, widths[i]) + cost(b, widths[i], k))
    return total


def optimal_cutoffs(
    counts,
    in_features: int,
    num_clusters: int,
    batch_size: int,
    *,
    cost: MatmulCost | None = None,
    div_value: float | None = None,
    grid: int = 512,
    device: torch.device | str | None = None,
) -> list[int]:
    """Cutoffs minimising the modelled time T, by dynamic programming (Grave et al. 2017, Sec. 4).

    Args:
        counts: (C,) class frequencies (list, array or tensor), sorted by decreasing frequency.
        in_features: d, the hidden size.
        num_clusters: J, the number of tail clusters (the head has c_0 + J outputs).
        batch_size: B, rows per step (tokens per batch for a language model).
        cost: matmul constants; measured on ``device`` by :func:`measure_matmul_cost` if None.
        div_value: None (default) for the paper's model, every cluster at full width d; a number
            to model :class:`AdaptiveSoftmaxHead`'s reduced widths max(1, d // div_value**(i+1)).
        grid: candidate boundaries: all positions when C − 1 ≤ grid, else the first 64 and
            ``grid`` log-spaced ones.
        device: where to measure the cost (default: cuda if available, else cpu).

    Returns:
        J strictly increasing ints in (0, C): the ``cutoffs`` for :class:`AdaptiveSoftmaxHead`.

    Raises:
        ValueError: negative, non-finite, all-zero or unsorted counts; C < J + 1; bad sizes.
    """
    q = _check_counts(counts, num_clusters)
    widths = _check_sizes(in_features, num_clusters, batch_size, div_value)
    if grid < num_clusters:
        raise ValueError(f"grid must be >= num_clusters = {num_clusters}, got {grid}")
    cost = cost if cost is not None else measure_matmul_cost(device)
    C, J = q.shape[0], num_clusters
    cum = np.concatenate([[0.0], np.cumsum(q)])
    if C - 1 <= grid:
        cand = np.arange(1, C)
    else:
        cand = np.unique(np.concatenate([np.arange(1, 65), np.rint(np.geomspace(1, C - 1, grid))]).astype(np.int64))
    ends = np.append(cand, C)  # (G + 1,): where a cluster may end
    a, b = cand[:, None], ends[None, :]  # (G, 1) starts, (1, G + 1) ends

    def tail_cost(i: int) -> np.ndarray:
        """(G, G + 1) modelled time of tail cluster i spanning [a, b); inf where b <= a."""
        rows, k = (cum[b] - cum[a]) * batch_size, np.maximum(b - a, 0)
        if widths is None:
            t = cost(rows, in_features, k)
        else:
            t = cost(rows, in_features, widths[i]) + cost(rows, widths[i], k)
        return np.where(b > a, t, np.inf)

    # best[g]: least time of clusters i + 1..J-1 when they start at ends[g] (0 at ends[g] = C
    # once no cluster is left); total[a, g]: cluster i spans [cand[a], ends[g]), the rest follow.
    best = np.where(ends == C, 0.0, np.inf)
    choice = []
    for i in reversed(range(J)):
        total = tail_cost(i) + best[None, :]
        choice.append(np.argmin(total, axis=1))
        best = np.append(total.min(axis=1), np.inf)  # a cluster cannot start at C
    head = cost(batch_size, in_features, cand + J) + best[:-1]
    g = int(np.argmin(head))
    if not np.isfinite(head[g]):
        raise ValueError(f"no valid cutoffs for C = {C} classes and {J} clusters")
    cutoffs = [int(cand[g])]
    for pick in reversed(choice[1:]):  # choice[-1] is cluster 0's, choice[0] the last cluster's
        g = int(pick[g])
        cutoffs.append(int(ends[g]))
    return cutoffs
