"""Stable softmax cross-entropy: CE written through the logit gaps to the target.

Source: "A Fix for Softmax and Cross-Entropy", the softplus form of the CE. With a = logsumexp_{j≠t}(z_j − z_t),

    CE = logsumexp_j(z_j) − z_t = log(1 + e^a) = softplus(a),
    dCE/dz_t = −sigmoid(a),    dCE/dz_j = sigmoid(a) · softmax_{j≠t}(z_j − z_t)   (j ≠ t).

The standard path computes the target gradient as softmax_t − 1, which rounds to exactly 0 once
p_t > 1 − 2^-24 in float32 (logits [18, 0], target 0: 1 − 1/(1 + e^-18) is 1.52e-8, below the
spacing of floats near 1); −sigmoid(−18) keeps it. Everything else equals the standard CE.

Label smoothing ε is F.cross_entropy's, (1 − ε)·CE + ε·mean_j(logsumexp − z_j), rewritten by the
identity logsumexp − mean_j z_j = CE + z_t − mean_j z_j as softplus(a) + ε·(z_t − mean_j z_j), so
both agree wherever the standard one is accurate.

Normalisation: float16/bfloat16 logits are computed in float32 (float64 stays float64), with the
row maximum subtracted before exp; the gradient has the logits' dtype. Memory: like
F.cross_entropy, one (N, C) tensor in the compute dtype is kept for the backward. The same
:class:`StableRows` runs on the whole logits and, with ``chunk_size``, on chunks of rows.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..machinery._core import compute_dtype
from ..machinery.registry import register_variant
from ..machinery.row_loss import RowLoss
from ..methods.softmax import SoftmaxHead, softmax_log_probs


def _sigmoid(a: torch.Tensor) -> torch.Tensor:
    """σ(a) as e^a / (1 + e^a) for a < 0, so it stays nonzero down to subnormals (σ(−100) = 3.7e−44
    in float32, where 1 / (1 + e^100) overflows to 0)."""
    e = torch.exp(-a.abs())
    return torch.where(a >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


class StableRows(RowLoss):
    """Stable CE as a :class:`RowLoss` (the module docstring's formulas), both paths; the
    distribution is the plain softmax (only the loss's form differs)."""

    softmax_of_logits = True
    has_lse = True

    def log_probs(self, z):
        return softmax_log_probs(z)

    def lse(self, state):
        """logsumexp_j z_j = z_t + softplus(a)."""
        return state[3] + F.softplus(state[2])

    def rows(self, z, target, keep):
        """One pass makes E = exp(z − max_j z_j) with the target's entry zeroed, so S = Σ_j E_j is
        the non-target sum, never 1 + tiny − 1. The gradient reuses E: softmax_{j≠t}(z_j − z_t) =
        E_j / S. S underflows only when every non-target logit is > 87 below the target (float32),
        where the loss and the gradient are subnormal or 0 anyway.

        Returns:
            loss (N,), and the state (E (N, C), S (N,), a (N,), z_t (N,)) that :meth:`grad` takes.
        """
        return self._rows(z.to(compute_dtype(z.dtype)), target, keep, in_place=False)

    def scratch_rows(self, z, target, keep):
        """:meth:`rows` with E written over z (the chunked path's buffer)."""
        return self._rows(z.to(compute_dtype(z.dtype)), target, keep, in_place=True)

    def _rows(self, z, target, keep, in_place: bool):
        """z (N, C) in the compute dtype, the logits themselves for float32/64 unless ``in_place``."""
        m = z.amax(dim=1, keepdim=True)  # (N, 1)
        m = m.masked_fill(m == float("-inf"), 0.0)  # all-(−inf) rows: exp(−inf − 0) = 0, not nan
        zt = z.gather(1, target.unsqueeze(1)).squeeze(1)  # (N,)
        mean = z.mean(dim=1) if self.label_smoothing > 0 else None  # (N,), read before z is overwritten
        e = (z.sub_(m) if in_place else torch.sub(z, m)).exp_()  # (N, C)
        e.scatter_(1, target.unsqueeze(1), 0.0)
        total = e.sum(dim=1)  # (N,) Σ_{j≠t} exp(z_j − m)
        a = total.log() + m.squeeze(1) - zt  # logsumexp_{j≠t}(z_j) − z_t, −inf if no other class
        loss = F.softplus(a)
        if mean is not None:
            loss = loss + self.label_smoothing * (zt - mean)
        return loss.masked_fill(~keep, 0.0), (e, total, a, zt)

    def grad(self, state, target, row_weight, shape, dtype, lse_weight=None):
        """In the compute dtype: σ(a)·softmax_{j≠t} off the target, −σ(a) at it, then smoothing;
        ``lse_weight`` v adds v·softmax, which is v·σ(a)·softmax_{j≠t} off the target and v·σ(−a) at it."""
        e, total, a, _ = state
        eps, num_classes = self.label_smoothing, e.shape[1]
        w = row_weight
        sig = _sigmoid(a)  # (N,)
        on_p = w if lse_weight is None else w + lse_weight
        # σ(a)·(w + v) / S; rows with S = 0 (no other class, or all underflowed) have σ(a) = 0.
        coef = torch.where(total > 0, sig * on_p / total, torch.zeros_like(sig))
        grad = e.mul_(coef.unsqueeze(1))  # (N, C) σ(a)·softmax_{j≠t}, 0 at the target, over E
        if eps > 0:
            grad.sub_((eps / num_classes) * w.unsqueeze(1))
        target_grad = -sig * w + (eps - eps / num_classes) * w  # (N,)
        if lse_weight is not None:
            target_grad = target_grad + _sigmoid(-a) * lse_weight
        return grad.scatter_(1, target.unsqueeze(1), target_grad.unsqueeze(1))


def stable_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, *, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0
) -> torch.Tensor:
    """Cross-entropy as softplus(logsumexp_{j≠t}(z_j − z_t)), with the sigmoid-form gradient.

    Args:
        logits: (N, C) unnormalised scores, float16/bfloat16/float32/float64.
        target: (N,) class ids; ``ignore_index`` rows contribute nothing.
        reduction: "mean" over non-ignored rows, "sum", or "none" -> (N,).
        label_smoothing: ε in [0, 1], F.cross_entropy's definition (module docstring).

    Returns:
        The loss in float32 for float16/bfloat16/float32 logits (float64 for float64);
        the gradient w.r.t. ``logits`` has their dtype.
    """
    return StableRows(label_smoothing).on_logits(logits, target, ignore_index=ignore_index, reduction=reduction)


@register_variant("stable_softmax", label="stable", title="stable softmax")
class StableSoftmaxHead(SoftmaxHead):
    """Linear projection + :func:`stable_cross_entropy` (arguments as :class:`SoftmaxHead`).

    ``log_probs`` is the plain softmax (normalised in float32); only the training loss differs.
    """

    def row_loss(self) -> StableRows:
        return StableRows(self.label_smoothing)
