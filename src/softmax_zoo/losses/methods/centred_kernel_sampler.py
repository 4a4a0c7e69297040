"""Centred quadratic-kernel sampler: our extension of Blanc & Rendle (2018), not from the paper.

The paper's quadratic kernel α(h·w_j)² + 1 (section 4.2) is symmetric in h·w_j: when the output
rows share a large common vector w̄ (an output layer trained with an output bias and a
per-coordinate optimiser grows one), every logit h·w_j carries the same offset h·w̄ and the
kernel puts its mass on the classes whose logit is *furthest below* that offset, the least
likely ones. Centring the logits on that offset removes it::

    q_j ∝ K_c(h, w_j) = α·(h·w_j − h·w̄)² + 1,      w̄ = (1/C) Σ_j w_j (the mean output row).

Exact drawing in O(d² log C) with the same tree: append −1 to every row and h·w̄ to the query,

    w̃_j = [w_j, −1],  h̃ = [h, h·w̄]  ⇒  h̃·w̃_j = h·w_j − h·w̄,

so K_c(h, w_j) is the paper's kernel on (h̃, w̃_j), and a node's sum Σ w̃ w̃ᵀ is the block matrix
[[Σ w wᵀ, −Σ w], [−Σ wᵀ, count]]: the per-node sums of w wᵀ, of w and the class count. The
tree of :class:`~softmax_zoo.losses.methods.kernel_sampler.QuadraticKernelSampler` over the rows w̃
(dimension d + 1) draws it; w̄ (O(C·d)) is recomputed at every refresh and enters only through
the query h̃, so a refresh after a training step still updates only the leaves whose rows changed.

Precision: with float32 node sums, a node's mass hᵀ(Σ w wᵀ)h − 2(h·w̄)(h·Σ w) + n(h·w̄)² loses
the digits that the shared part cancels, a relative error of about 1e-7·(h·w̄ / h·(w − w̄))²
(1e-4 when w̄ is 30× the centred rows). The tree therefore holds the rows relative to a fixed
centre c (w̃_j = [w_j − c, −1], h̃ = [h, h·(w̄ − c)], the same h̃·w̃_j), with c = w̄ taken anew
whenever w̄ has moved from c by more than half the centred rows' root-mean-square norm (then
every row changes and the tree is recomputed, as a rebuild).
"""

from __future__ import annotations

import torch

from ..methods.kernel_sampler import QuadraticKernelSampler
from ..methods.samplers import outside_autocast

RECENTRE_AT = 0.5  # recentre when ‖w̄ − c‖ > RECENTRE_AT · rms_j ‖w_j − w̄‖ (see the module docstring)


class CentredQuadraticKernelSampler(QuadraticKernelSampler):
    """Sampler from q_j ∝ α(h·w_j − h·w̄)² + 1, w̄ the mean output row (our extension; module docstring).

    Args: those of :class:`~softmax_zoo.losses.methods.kernel_sampler.QuadraticKernelSampler`.
    """

    extra_dims = 1  # [w_j − c, −1]
    _mean: torch.Tensor | None = None  # (d,) w̄ of the weight at the last refresh
    _centre: torch.Tensor | None = None  # (d,) c, the centre the tree's rows are taken from

    @outside_autocast
    def refresh(self, weight: torch.Tensor) -> None:
        """Recompute w̄ (and the centre if w̄ moved far from it), then update the tree over [w_j − c, −1]."""
        W = weight.detach().float()
        self._mean = W.mean(0)  # (d,)
        spread = (W - self._mean).pow(2).sum(1).mean()  # rms_j ‖w_j − w̄‖, squared
        if (
            self._centre is None
            or self._centre.shape != self._mean.shape
            or self._centre.device != self._mean.device
            or float((self._mean - self._centre).pow(2).sum()) > RECENTRE_AT**2 * float(spread)
        ):
            self._centre = self._mean.clone()
        super().refresh(weight)

    def _tree_rows(self, weight: torch.Tensor) -> torch.Tensor:
        """(C, d + 1): w̃_j = [w_j − c, −1]."""
        W = weight.detach().float() - self._centre
        return torch.cat([W, W.new_full((W.shape[0], 1), -1.0)], dim=1)

    def _query(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N, d + 1): h̃ = [h, h·(w̄ − c)]."""
        h = hidden.detach().float()
        return torch.cat([h, (h @ (self._mean - self._centre))[:, None]], dim=1)
