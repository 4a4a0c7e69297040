"""Sparse-softmax: softmax restricted to the k largest logits.

Source: Sun, Zhang, Huang, Lei, Su, Pan & Cao 2021, "Sparse-softmax: A Simpler and Faster
Alternative Softmax Transformation" (arXiv:2112.12433): the sparse-softmax transformation and
its cross-entropy. With Ω_k the indices of the k largest logits of a row,

    p_i = exp(z_i) / Σ_{j∈Ω_k} exp(z_j)  for i ∈ Ω_k,  0 otherwise        (sparse-softmax)
    loss = logsumexp_{j∈Ω_k}(z_j) − z_t                                 (its cross-entropy)

The target is not added to Ω_k: when it is outside, its gradient is −1 and the top-k get their
softmax weights, so a row's gradient has at most k+1 nonzeros. The custom backward writes just
those into a zeroed buffer instead of going through autograd of topk and gather.

Label smoothing ε spreads ε uniformly over Ω_k:
(1 − ε)·(lse_k − z_t) + ε·mean_{j∈Ω_k}(lse_k − z_j) = lse_k − z_t + ε·(z_t − mean_{j∈Ω_k} z_j).
With k = C this is exactly :func:`softmax_cross_entropy`, which is what is computed then.
"""

from __future__ import annotations

import torch

from ._core import check_ce_inputs, check_k, compute_dtype, reduce_loss
from .softmax import SoftmaxHead, softmax_cross_entropy


def sparse_softmax(logits: torch.Tensor, k: int, dim: int = -1) -> torch.Tensor:
    """Softmax over the k largest entries along ``dim``, zeros elsewhere (Sun et al. 2021).

    Normalised in float32 for float16/bfloat16 input; the result has the input's dtype.
    Differentiable (through autograd of topk and scatter).

    Args:
        logits: (..., C, ...) scores.
        k: support size, 1 <= k <= C (C = ``logits.shape[dim]``).
        dim: the class dimension.

    Returns:
        Probabilities of ``logits``' shape with k nonzeros along ``dim`` summing to 1
        (fewer nonzeros only if some top-k probabilities underflow, e.g. −inf logits).
    """
    check_k(k, logits.shape[dim])
    values, index = logits.topk(k, dim=dim)  # (..., k, ...)
    probs = torch.softmax(values.to(compute_dtype(logits.dtype)), dim=dim).to(logits.dtype)
    return torch.zeros_like(logits).scatter(dim, index, probs)


def sparse_log_softmax(logits: torch.Tensor, k: int) -> torch.Tensor:
    """log of :func:`sparse_softmax` along the last dim, in float32 (float64 stays): −inf outside the top-k.

    A row holding a NaN is NaN in every column (topk would rank the NaN first and leave −inf
    elsewhere, a distribution that looks valid).
    """
    check_k(k, logits.shape[-1])
    values, index = logits.topk(k, dim=-1)  # (..., k)
    logp = torch.log_softmax(values.to(compute_dtype(logits.dtype)), dim=-1)
    out = torch.full(logits.shape, float("-inf"), dtype=logp.dtype, device=logits.device).scatter(-1, index, logp)
    return out.masked_fill_(logits.isnan().any(dim=-1, keepdim=True), float("nan"))


def sparse_rows(logits: torch.Tensor, target: torch.Tensor, keep: torch.Tensor, k: int, label_smoothing: float):
    """Per-row sparse-softmax CE of ``logits`` (N, C), 0 at ignored rows, in the compute dtype.

    Args:
        logits: (N, C). target: (N,) long, ignored rows pointed at class 0. keep: (N,) bool.
        k: support size, 1 <= k < C.

    Returns:
        loss (N,), and the state (top-k values (N, k), their indices (N, k), their logsumexp
        (N,)) that :func:`sparse_grad` takes.
    """
    dtype = compute_dtype(logits.dtype)
    values, index = logits.topk(k, dim=1, sorted=False)  # (N, k)
    values = values.to(dtype)
    lse = values.logsumexp(dim=1)  # (N,)
    zt = logits.gather(1, target.unsqueeze(1)).squeeze(1).to(dtype)  # (N,)
    loss = lse - zt
    if label_smoothing > 0:
        loss = loss + label_smoothing * (zt - values.mean(dim=1))
    return loss.masked_fill(~keep, 0.0), (values, index, lse)


def sparse_grad(state, target, row_weight, label_smoothing, shape, dtype) -> torch.Tensor:
    """d Σ_i w_i·loss_i / dz, a ``shape`` = (N, C) tensor of ``dtype`` with k(+1) nonzeros a row.

    Args:
        state: (values, index, lse) of :func:`sparse_rows`. target: (N,) long.
        row_weight: w (N,), 0 at ignored rows.
    """
    values, index, lse = state
    eps, k = label_smoothing, values.shape[1]
    w = row_weight.to(lse.dtype).unsqueeze(1)  # (N, 1)
    top = torch.exp(values - lse.unsqueeze(1)).sub_(eps / k).mul_(w)  # (N, k) softmax_k − ε/k
    grad = torch.zeros(shape, dtype=dtype, device=values.device)
    grad.scatter_(1, index, top.to(dtype))
    # The target adds −(1 − ε) to its top-k weight, or stands alone outside the top-k.
    return grad.scatter_add_(1, target.unsqueeze(1), (-(1.0 - eps) * w).to(dtype))


class _SparseSoftmaxCrossEntropy(torch.autograd.Function):
    """Per-row sparse-softmax CE (N,); backward writes the k(+1) nonzeros of each row."""

    @staticmethod
    def forward(ctx, logits, target, keep, k, label_smoothing):
        loss, state = sparse_rows(logits, target, keep, k, label_smoothing)
        ctx.save_for_backward(*state, target, keep)
        ctx.logits_meta = (logits.shape, logits.dtype)
        ctx.label_smoothing = label_smoothing
        return loss

    @staticmethod
    def backward(ctx, grad_loss):
        values, index, lse, target, keep = ctx.saved_tensors
        w = grad_loss * keep  # (N,), 0 at ignored rows
        grad = sparse_grad((values, index, lse), target, w, ctx.label_smoothing, *ctx.logits_meta)
        return grad, None, None, None, None


def sparse_softmax_cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    k: int,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy of :func:`sparse_softmax`: logsumexp of the top-k logits minus z_t (Sun et al. 2021).

    Args:
        logits: (N, C) unnormalised scores.
        target: (N,) class ids; ``ignore_index`` rows contribute nothing.
        k: support size, 1 <= k <= C; k = C is :func:`softmax_cross_entropy`.
        reduction: "mean" over non-ignored rows, "sum", or "none" -> (N,).
        label_smoothing: ε in [0, 1], spread uniformly over the top-k set.

    Returns:
        The loss, in float32 for float16/bfloat16 logits; the gradient has the logits' dtype.
    """
    keep, safe_target = check_ce_inputs(logits, target, ignore_index, reduction, label_smoothing)
    check_k(k, logits.shape[1])
    if k == logits.shape[1]:
        return softmax_cross_entropy(
            logits, target, ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing
        )
    loss = _SparseSoftmaxCrossEntropy.apply(logits, safe_target, keep, k, float(label_smoothing))
    return reduce_loss(loss, keep, reduction)


class SparseSoftmaxHead(SoftmaxHead):
    """Linear projection + :func:`sparse_softmax_cross_entropy` (Sun et al. 2021).

    ``log_probs`` is the sparse distribution the model decodes with: log-softmax over the top-k
    logits, −inf elsewhere. See :class:`SoftmaxHead` for the other arguments.

    Args:
        k: support size, 1 <= k <= num_classes (the paper's best on text classification: 20).
        label_smoothing: ε for training, spread over the top-k set.
    """

    def __init__(self, in_features: int, num_classes: int, *, k: int, **kwargs) -> None:
        super().__init__(in_features, num_classes, **kwargs)
        check_k(k, num_classes)
        self.k = k

    def cross_entropy(self, logits: torch.Tensor, target: torch.Tensor, **kwargs) -> torch.Tensor:
        return sparse_softmax_cross_entropy(logits, target, self.k, **kwargs)

    def loss_and_grad(self, z, target, keep, row_weight=None):
        if self.k == self.num_classes:  # the full softmax, as sparse_softmax_cross_entropy
            return super().loss_and_grad(z, target, keep, row_weight)
        loss, state = sparse_rows(z, target, keep, self.k, self.label_smoothing)
        if row_weight is None:
            return loss, None
        return loss, sparse_grad(state, target, row_weight, self.label_smoothing, z.shape, z.dtype)

    @property
    def support_k(self) -> int | None:
        """k: the inference distribution is the softmax over the top-k logits (None for k = C)."""
        return None if self.k == self.num_classes else self.k

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> (..., C) sparse log-probabilities in float32, −inf outside the top-k."""
        return sparse_log_softmax(self.logits(hidden), self.k)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", k={self.k}"
