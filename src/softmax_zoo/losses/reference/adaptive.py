"""References for the adaptive softmax, shared by the tests and the benchmark.

The reference is ``torch.nn.AdaptiveLogSoftmaxWithLoss`` itself: its per-row log-likelihood of
the kept rows, with ignore_index and the reduction applied here (torch has neither).
"""

from __future__ import annotations

import torch

from ..methods.adaptive import AdaptiveSoftmaxHead


def zipf_targets(n: int, num_classes: int, exponent: float, gen: torch.Generator) -> torch.Tensor:
    """(n,) class ids drawn with P(c) ∝ (c + 1)^−exponent (Zipf's law; ≈ 1.0 for words)."""
    weights = torch.arange(1, num_classes + 1, dtype=torch.float64).pow(-exponent)
    return torch.multinomial(weights, n, replacement=True, generator=gen)


def make_pair(
    in_features: int,
    num_classes: int,
    cutoffs: list[int],
    *,
    div_value: float = 4.0,
    head_bias: bool = False,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
    **kwargs,
) -> tuple[torch.nn.AdaptiveLogSoftmaxWithLoss, AdaptiveSoftmaxHead]:
    """A torch module with seeded weights and an :class:`AdaptiveSoftmaxHead` with a copy of them."""
    torch.manual_seed(seed)
    ref = torch.nn.AdaptiveLogSoftmaxWithLoss(in_features, num_classes, cutoffs, div_value=div_value, head_bias=head_bias)
    ref = ref.to(device=device, dtype=dtype)
    return ref, AdaptiveSoftmaxHead.from_torch(ref, **kwargs)


def reference_loss(
    ref: torch.nn.AdaptiveLogSoftmaxWithLoss,
    hidden: torch.Tensor,
    target: torch.Tensor,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> torch.Tensor:
    """Adaptive-softmax NLL from torch's module; hidden (..., d), target (...)."""
    h, t = hidden.reshape(-1, hidden.shape[-1]), target.reshape(-1)  # (N, d), (N,)
    keep = t != ignore_index
    rows = keep.nonzero().squeeze(1)
    loss = h.new_zeros(t.shape[0])
    if rows.numel():
        loss = loss.index_copy(0, rows, -ref(h[rows], t[rows]).output)
    if reduction == "none":
        return loss.reshape(target.shape)
    return loss.sum() if reduction == "sum" else loss.sum() / keep.sum()
