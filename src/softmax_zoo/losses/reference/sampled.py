"""Closed forms for the samplers and the naive sampler, shared by the tests and the benchmark.

Everything here touches all C classes (O(N·C·d)): it is the definition the fast samplers are
checked against, never a fast path.
"""

from __future__ import annotations

import torch
from scipy import stats


def kernel_probs(hidden: torch.Tensor, weight: torch.Tensor, alpha: float, exclude: torch.Tensor | None = None) -> torch.Tensor:
    """(N, C) float64 q_ij ∝ α(h_i·w_j)² + 1 (Blanc & Rendle 2018, section 4.2), renormalised without ``exclude``."""
    kern = alpha * (hidden.double() @ weight.double().T) ** 2 + 1
    return _normalise(kern, exclude)


def unigram_probs(counts: torch.Tensor, power: float, n: int, exclude: torch.Tensor | None = None) -> torch.Tensor:
    """(n, C) float64 q_j ∝ counts_j ** power, renormalised without ``exclude``."""
    mass = torch.as_tensor(counts, dtype=torch.float64).pow(power).expand(n, -1)
    return _normalise(mass, exclude)


def softmax_probs(hidden, weight, bias=None, exclude=None) -> torch.Tensor:
    """(N, C) float64 softmax(h·Wᵀ + b), renormalised without ``exclude``."""
    logits = hidden.double() @ weight.double().T + (0 if bias is None else bias.double())
    return _normalise((logits - logits.max(1, keepdim=True).values).exp(), exclude)


def _normalise(mass: torch.Tensor, exclude: torch.Tensor | None) -> torch.Tensor:
    if exclude is not None:
        mass = mass.scatter(1, exclude[:, None], 0.0)
    return mass / mass.sum(1, keepdim=True)


def chi_square_pvalue(ids: torch.Tensor, probs: torch.Tensor, min_expected: float = 5.0) -> float:
    """p-value of Pearson's chi-square test that each row of ``ids`` (N, m) follows ``probs`` (N, C).

    Classes with expected count below ``min_expected`` are pooled into one bin per row (a draw of
    a zero-probability class gives p = 0); the per-row statistics and degrees of freedom are summed.
    """
    stat, dof = 0.0, 0
    m = ids.shape[1]
    for row_ids, p in zip(ids, probs):
        observed = torch.bincount(row_ids, minlength=p.numel()).double()
        if bool((observed[p == 0] > 0).any()):
            return 0.0
        expected = p * m
        big = expected >= min_expected
        obs = torch.cat([observed[big], observed[~big].sum()[None]])
        exp = torch.cat([expected[big], expected[~big].sum()[None]])
        keep = exp > 0
        stat += float((((obs - exp) ** 2) / exp)[keep].sum())
        dof += int(keep.sum()) - 1
    return float(stats.chi2.sf(stat, dof))


def naive_kernel_sample(hidden, weight, alpha: float, num_samples: int, exclude=None) -> torch.Tensor:
    """(N, m) draws from q ∝ α(h·w)² + 1 (without ``exclude``) by one ``torch.multinomial`` over all C
    classes, in float32: the O(N·C·d) way to draw from the kernel distribution, for the benchmark."""
    kern = alpha * (hidden @ weight.T) ** 2 + 1
    if exclude is not None:
        kern.scatter_(1, exclude[:, None], 0.0)
    return torch.multinomial(kern, num_samples, replacement=True)


def centred_kernel_probs(hidden, weight, alpha: float, exclude=None) -> torch.Tensor:
    """(N, C) float64 q_ij ∝ α(h_i·w_j − h_i·w̄)² + 1, w̄ the mean row of ``weight`` (our centred kernel)."""
    weight = weight.double()
    return kernel_probs(hidden, weight - weight.mean(0), alpha, exclude)
