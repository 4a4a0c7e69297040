"""Plain-torch references for the logit-level losses, shared by the tests and the benchmark.

Each is the textbook formula through autograd (no custom backward), in whatever dtype it is
given: the tests feed float64 clones and compare the package's values and ``.grad``s against
them. They reduce on their own (not through ``softmax_zoo.losses.machinery._core``) so that a bug in the
shared core cannot hide in both.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

REDUCTIONS = ["mean", "sum", "none"]


def make_inputs(n: int, c: int, gen: torch.Generator, scale: float = 3.0, dtype=torch.float32):
    """logits (n, c) and targets (n,) with every 7th row ignored."""
    logits = (torch.randn(n, c, generator=gen, dtype=torch.float64) * scale).to(dtype)
    target = torch.randint(0, c, (n,), generator=gen)
    target[::7] = -100
    return logits, target


def _reduce(loss: torch.Tensor, keep: torch.Tensor, reduction: str) -> torch.Tensor:
    """loss (N,) with ignored rows already 0; "mean" divides by the number of kept rows."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / keep.sum()


def _smoothed_nll(logp: torch.Tensor, target: torch.Tensor, ignore_index: int, reduction: str, eps: float):
    """(1 − ε)·(−log p_t) + ε·mean_{j}(−log p_j) over the finite entries of ``logp`` (N, K)."""
    keep = target != ignore_index
    safe = target.masked_fill(~keep, 0)
    nll = -logp.gather(1, safe.unsqueeze(1)).squeeze(1)  # (N,)
    finite = torch.isfinite(logp)
    smooth = -logp.masked_fill(~finite, 0.0).sum(dim=1) / finite.sum(dim=1)  # mean over the support
    loss = ((1 - eps) * nll + eps * smooth).masked_fill(~keep, 0.0)
    return _reduce(loss, keep, reduction)


def cross_entropy_ref(logits, target, *, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Full softmax CE: logits (N, C), target (N,); label smoothing over all C classes."""
    return _smoothed_nll(torch.log_softmax(logits, dim=1), target, ignore_index, reduction, label_smoothing)


def sparse_softmax_ref(logits: torch.Tensor, k: int, dim: int = -1) -> torch.Tensor:
    """Softmax after masking everything below the k-th largest value with −inf (no topk index)."""
    kth = logits.topk(k, dim=dim).values.narrow(dim, k - 1, 1)  # (..., 1, ...)
    return torch.softmax(logits.masked_fill(logits < kth, float("-inf")), dim=dim)


def sparse_cross_entropy_ref(logits, target, k, *, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Sparse-softmax CE by autograd of topk and gather: logsumexp(top-k) − z_t, ε over the top-k."""
    keep = target != ignore_index
    safe = target.masked_fill(~keep, 0)
    values = logits.topk(k, dim=1).values  # (N, k)
    lse = values.logsumexp(dim=1)
    zt = logits.gather(1, safe.unsqueeze(1)).squeeze(1)
    loss = (1 - label_smoothing) * (lse - zt) + label_smoothing * (lse - values.mean(dim=1))
    return _reduce(loss.masked_fill(~keep, 0.0), keep, reduction)


def sparse_options_ref(
    logits, target, k, *, ignore_index=-100, reduction="mean", label_smoothing=0.0, smoothing_over="support",
    target_in_support=False,
):
    """Sparse-softmax CE with its options, by autograd of masked logsumexp: S = Ω_k (∪ {t}), M = S or all.

    (1 − ε)·(lse_S − z_t) + ε·mean_{j∈M}(lse_S − z_j), lse_S the logsumexp of the logits in S.
    """
    keep = target != ignore_index
    safe = target.masked_fill(~keep, 0)
    support = torch.zeros_like(logits, dtype=torch.bool).scatter(1, logits.topk(k, dim=1).indices, True)  # (N, C)
    if target_in_support:
        support |= F.one_hot(safe, logits.shape[1]).bool()
    lse = logits.masked_fill(~support, float("-inf")).logsumexp(dim=1)  # (N,)
    nll = lse - logits.gather(1, safe.unsqueeze(1)).squeeze(1)
    over = support if smoothing_over == "support" else torch.ones_like(support)
    smooth = ((lse.unsqueeze(1) - logits) * over).sum(dim=1) / over.sum(dim=1)
    loss = (1 - label_smoothing) * nll + label_smoothing * smooth
    return _reduce(loss.masked_fill(~keep, 0.0), keep, reduction)


def options_ref(
    logits, target, per_row, support, *, ignore_index=-100, reduction="mean", z_loss=0.0, softcap=None,
    class_weight=None, temperature=1.0,
):
    """A variant's loss with the options of ``losses.options``, by autograd of their formulas.

    z ← c·tanh(z / c) / T; ℓ_i ← w_{t_i}·(ℓ_i + β·lse_i²), lse_i the logsumexp of z over the support;
    "mean" = Σ ℓ_i / Σ_kept w_{t_i}.

    Args:
        per_row: (z, target) -> the variant's per-row loss (N,), 0 at ignored rows.
        support: z -> (N, C) bool, the classes the variant's distribution normalises over (not
            differentiated: the support only selects).
    """
    z = tempered(logits, softcap, temperature)
    keep = target != ignore_index
    safe = target.masked_fill(~keep, 0)
    lse = z.masked_fill(~support(z.detach()), float("-inf")).logsumexp(dim=1)  # (N,)
    loss = per_row(z, target) + z_loss * lse.square() * keep
    w = keep.to(z.dtype) if class_weight is None else class_weight.to(z.dtype)[safe] * keep
    loss = loss * w
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def tempered(logits, softcap=None, temperature=1.0):
    """c·tanh(z / c) / T (the softcap first, then the temperature)."""
    z = logits if softcap is None else softcap * torch.tanh(logits / softcap)
    return z / temperature


def entropy_and_target_ref(logits, target, support, *, ignore_index=-100, softcap=None, temperature=1.0):
    """(H_i, log p_i,t_i), (N,) each, 0 at ignored rows, of the softmax of the tempered logits over
    ``support(z)`` (N, C) bool, the classes with nonzero probability: H = −Σ_{j∈S} p_j·log p_j."""
    z = tempered(logits, softcap, temperature)
    inside = support(z)
    logp = torch.log_softmax(z.masked_fill(~inside, float("-inf")), dim=1)  # −inf outside S
    p = logp.exp()
    entropy = -torch.where(inside, p * logp, torch.zeros_like(p)).sum(dim=1)
    keep = target != ignore_index
    logp_t = logp.gather(1, target.masked_fill(~keep, 0)[:, None])[:, 0]
    return entropy.masked_fill(~keep, 0.0), logp_t.masked_fill(~keep, 0.0)


def kd_ref(student, teacher, *, temperature=1.0, reduction="mean"):
    """T²·KL(softmax(z_T/T) ‖ softmax(z_S/T)) through F.kl_div; "mean" = KL's "batchmean"."""
    log_q = torch.log_softmax(student / temperature, dim=1)
    log_p = torch.log_softmax(teacher / temperature, dim=1)
    loss = F.kl_div(log_q, log_p, log_target=True, reduction="none").sum(dim=1) * temperature**2  # (N,)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def value_and_grad(fn, logits: torch.Tensor, *args, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
    """Call ``fn(clone of logits, *args, **kwargs)`` and return (loss, d Σ(loss·r) / d logits).

    r is a fixed pseudo-random weight of the loss's shape (all ones for a scalar), so that
    reduction="none" is checked with unequal row weights. Inputs are cloned, never modified.
    """
    x = logits.detach().clone().requires_grad_(True)
    loss = fn(x, *args, **kwargs)
    r = torch.rand(loss.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    r = r if loss.dim() else torch.ones_like(r)
    (loss * r.to(loss.device, loss.dtype)).sum().backward()
    return loss.detach(), x.grad
