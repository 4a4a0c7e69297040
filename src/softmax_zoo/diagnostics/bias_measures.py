"""How far a sampled softmax is from the full one at fixed output-layer inputs (Blanc & Rendle 2018).

For N rows with hidden states h (N, d), targets t (N,), and an output layer (weight W (C, d),
bias b (C,) or none) with model distribution p = softmax(hW + b):

* :func:`kl_to_model`: KL(p̃ ‖ q̃) averaged over rows, both with the target removed and
  renormalised: how far the sampler's proposal is from the ideal one (the oracle q = p of the
  paper's section 2 gives 0).
* :func:`sampled_bias`: over R independent draws of the m negatives, the sampled loss's bias
  E[L̂] − L (with its standard error) and the output layer's gradient bias ‖E[ĝ] − g‖ / ‖g‖ and
  cosine, E[ĝ] estimated by the mean ḡ of the R draws. ‖ḡ − g‖ also holds the draws' noise, whose
  size ‖ḡ − E[ĝ]‖ ≈ sqrt(tr Var(ĝ) / R) is reported beside it (``grad_noise``), and
  ``grad_bias`` is corrected for it: sqrt(max(0, ‖ḡ − g‖² − tr Var(ĝ)/R)) / ‖g‖ (an unbiased
  estimate of the squared bias, clipped at 0).
* :func:`logit_stats`: the sizes that decide how a kernel on h·w behaves: mean |h·w|, the row
  mean of h·w, the norm of the mean output row w̄ against the mean norm of the class parts w_c − w̄.

Everything runs the real :class:`~softmax_zoo.losses.SampledSoftmaxHead` in training mode, so
the numbers are those of the training signal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..losses import SampledSoftmaxHead

KL_ROWS = 64  # rows per log_prob call in kl_to_model (log q over all C classes is (rows, C); the kernel's closed form gathers (rows, C, d))


@dataclass
class OutputLayer:
    """The inputs of the output layer at a fixed checkpoint: hidden (N, d), target (N,), weight (C, d), bias (C,) or None."""

    hidden: torch.Tensor
    target: torch.Tensor
    weight: torch.Tensor
    bias: torch.Tensor | None

    def logits(self) -> torch.Tensor:
        """(N, C) float64 h·w + b."""
        out = self.hidden.double() @ self.weight.double().T
        return out if self.bias is None else out + self.bias.double()

    def full_loss_and_grad(self) -> tuple[float, torch.Tensor]:
        """The full softmax cross-entropy (mean over rows) and its gradient wrt [W, b], flattened, float64."""
        params = self._params()
        logits = F.linear(self.hidden.double(), *params)
        loss = F.cross_entropy(logits, self.target)
        grad = _flat(torch.autograd.grad(loss, params))
        return float(loss.detach()), grad

    def _params(self) -> list[torch.Tensor]:
        return [p.detach().double().requires_grad_(True) for p in (self.weight, self.bias) if p is not None]


def _flat(grads) -> torch.Tensor:
    return torch.cat([g.reshape(-1).double() for g in grads])


def logit_stats(layer: OutputLayer) -> dict[str, float]:
    """Mean |h·w|, mean and spread over rows of the row mean of h·w, ‖w̄‖ and mean_c ‖w_c − w̄‖ (bias left out)."""
    hw = layer.hidden.double() @ layer.weight.double().T  # (N, C)
    row_mean = hw.mean(1)
    w = layer.weight.double()
    mean_row = w.mean(0)
    return {
        "mean_abs_hw": float(hw.abs().mean()),
        "row_mean_hw": float(row_mean.mean()),
        "row_mean_hw_std": float(row_mean.std()) if row_mean.numel() > 1 else 0.0,
        "mean_row_norm": float(mean_row.norm()),
        "class_part_norm": float((w - mean_row).norm(dim=1).mean()),
    }


def kl_to_model(layer: OutputLayer, sampler, rows: int = KL_ROWS) -> float:
    """Mean over rows of KL(p̃ ‖ q̃) (nats), target excluded from both p and the sampler's q."""
    total = 0.0
    logits = layer.logits()
    N, C = logits.shape
    for start in range(0, N, rows):
        sl = slice(start, start + rows)
        t = layer.target[sl]
        log_p = logits[sl].scatter(1, t[:, None], -math.inf).log_softmax(1)  # (n, C) log p̃
        ids = torch.arange(C, device=t.device).expand(t.numel(), C)
        log_q = sampler.log_prob(layer.hidden[sl], layer.weight, ids, exclude=t, bias=layer.bias).double()
        keep = torch.ones_like(log_p, dtype=torch.bool).scatter_(1, t[:, None], False)
        total += float((log_p.exp() * (log_p - log_q)).where(keep, 0.0).sum())
    return total / N


def sampled_bias(layer: OutputLayer, head: SampledSoftmaxHead, draws: int) -> dict[str, float]:
    """Loss and output-layer gradient bias of ``head`` (its weight/bias set to the layer's) over ``draws`` draws.

    Returns:
        ``loss_bias`` E[L̂] − L and ``loss_bias_se`` its standard error (nats); ``grad_bias`` the
        noise-corrected ‖E[ĝ] − g‖ / ‖g‖, ``grad_noise`` sqrt(tr Var(ĝ)/R) / ‖g‖, ``grad_bias_raw``
        ‖ḡ − g‖ / ‖g‖, and ``grad_cosine`` cos(ḡ, g).
    """
    if draws < 2:
        raise ValueError(f"draws must be >= 2 (the noise estimate needs two), got {draws}")
    full_loss, g = layer.full_loss_and_grad()
    with torch.no_grad():
        head.weight.copy_(layer.weight)
        if head.bias is not None:
            if layer.bias is None:
                raise ValueError("the head has a bias but the output layer has none")
            head.bias.copy_(layer.bias)
    params = [p for p in (head.weight, head.bias) if p is not None]
    head.train()
    losses, g_sum, g_sq = [], torch.zeros_like(g), 0.0
    for _ in range(draws):
        loss = head(layer.hidden.detach(), layer.target)
        g_r = _flat(torch.autograd.grad(loss, params))
        losses.append(float(loss.detach()))
        g_sum += g_r
        g_sq += float(g_r.pow(2).sum())
    g_mean = g_sum / draws
    spread = max(0.0, g_sq - draws * float(g_mean.pow(2).sum())) / (draws - 1)  # tr Var(ĝ), unbiased
    raw2 = float((g_mean - g).pow(2).sum())
    norm = float(g.norm())
    loss_t = torch.tensor(losses, dtype=torch.float64)
    return {
        "loss_bias": float(loss_t.mean()) - full_loss,
        "loss_bias_se": float(loss_t.std() / math.sqrt(draws)),
        "grad_bias": math.sqrt(max(0.0, raw2 - spread / draws)) / norm,
        "grad_noise": math.sqrt(spread / draws) / norm,
        "grad_bias_raw": math.sqrt(raw2) / norm,
        "grad_cosine": float(F.cosine_similarity(g_mean, g, dim=0)),
    }
