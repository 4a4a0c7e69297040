"""Full softmax cross-entropy: the baseline every other variant is measured against.

loss_i = logsumexp_j(z_ij) − z_i,t  (with label smoothing ε: (1−ε)·that + ε·mean_j(logsumexp − z_ij)).
A thin wrapper over ``torch.nn.functional.cross_entropy`` (fused log-softmax + NLL), with this
package's input checks, so that it equals torch in value and gradient. float16/bfloat16 logits
are cast to float32 first (the package's dtype rule, ``_core``): the loss is float32, the
gradient has the logits' dtype.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._core import check_ce_inputs, check_label_smoothing, compute_dtype
from .chunked import check_chunk_size, chunked_linear_loss
from .head import LinearHead
from .lean_inference import lean_class_log_probs, lean_predict, lean_topk_log_probs


def softmax_cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, *, ignore_index: int = -100, reduction: str = "mean", label_smoothing: float = 0.0
) -> torch.Tensor:
    """Cross-entropy of the full softmax.

    Args:
        logits: (N, C) unnormalised scores.
        target: (N,) class ids of any integer dtype; ``ignore_index`` rows contribute nothing.
        reduction: "mean" over non-ignored rows, "sum", or "none" -> (N,).
        label_smoothing: ε in [0, 1], spread uniformly over all C classes.

    Returns:
        The loss in float32 for float16/bfloat16/float32 logits (float64 for float64).
    """
    check_ce_inputs(logits, target, ignore_index, reduction, label_smoothing)
    return F.cross_entropy(
        logits.to(compute_dtype(logits.dtype)),
        target.long(),
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


def softmax_loss_and_grad(z, target, keep, label_smoothing, row_weight=None):
    """Per-row softmax CE of ``z`` (N, C), in its (compute) dtype, and its logit gradient.

    loss_i = lse_i − z_it + ε·(z_it − mean_j z_ij), F.cross_entropy's smoothing rewritten as in
    ``stable.py``; d Σ_i w_i·loss_i / dz_ij = w_i·(softmax_ij − (1 − ε)·[j = t_i] − ε/C).
    One exp per logit: the probabilities are exp(z − max) / their sum, normalised in place.

    Args:
        z: (N, C). target: (N,) long, ignored rows pointed at class 0. keep: (N,) bool.
        row_weight: w (N,), 0 at ignored rows, or None for the loss alone.

    Returns:
        loss (N,), 0 at ignored rows, and the gradient (N, C) or None.
    """
    eps = label_smoothing
    m = z.amax(dim=1, keepdim=True)  # (N, 1)
    p = torch.sub(z, m).exp_()  # (N, C)
    total = p.sum(dim=1, keepdim=True)  # (N, 1)
    zt = z.gather(1, target.unsqueeze(1))  # (N, 1)
    loss = (total.log() + m - zt).squeeze(1)
    if eps > 0:
        loss = loss + eps * (zt.squeeze(1) - z.mean(dim=1))
    loss = loss.masked_fill(~keep, 0.0)
    if row_weight is None:
        return loss, None
    w = row_weight.to(p.dtype).unsqueeze(1)  # (N, 1)
    p.div_(total).sub_(eps / z.shape[1]).mul_(w)
    return loss, p.scatter_add_(1, target.unsqueeze(1), -(1.0 - eps) * w)


class SoftmaxHead(LinearHead):
    """Linear projection + full softmax cross-entropy (see :class:`LinearHead` for the arguments).

    Subclasses change the loss by overriding :meth:`cross_entropy` and, for ``chunk_size``,
    :meth:`loss_and_grad`.

    Args:
        label_smoothing: ε for training; ``log_probs`` is always the plain softmax.
        chunk_size: None: the loss from the full (N, C) logits. An int: the loss and all its
            gradients are computed in the forward, ``chunk_size`` rows at a time, never holding
            the (N, C) logits (``chunked.py``); values and gradients equal the plain path's.
            "auto": rows per chunk chosen so a chunk holds at most 2^24 logits
            (``chunked.AUTO_CHUNK_LOGITS``, 64 MiB in float32). With chunk_size set,
            ``predict``, ``class_log_probs`` and ``topk_log_probs`` also run over blocks of
            classes within the same bound (``lean_inference.py``); ``log_probs`` returns the
            full (..., C) matrix either way.
    """

    def __init__(
        self, in_features: int, num_classes: int, *, label_smoothing: float = 0.0, chunk_size=None, **kwargs
    ) -> None:
        super().__init__(in_features, num_classes, **kwargs)
        check_label_smoothing(label_smoothing)
        check_chunk_size(chunk_size)
        self.label_smoothing = label_smoothing
        self.chunk_size = chunk_size

    def forward(self, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """hidden (..., d), target (...) -> loss (scalar, or target's shape for reduction="none")."""
        if self.chunk_size is None:
            return super().forward(hidden, target)
        return chunked_linear_loss(self, hidden, target)

    @property
    def support_k(self) -> int | None:
        """Classes the inference distribution normalises over: None for all of them."""
        return None

    def predict(self, hidden: torch.Tensor) -> torch.Tensor:
        if self.chunk_size is None:
            return super().predict(hidden)
        return lean_predict(self, hidden)

    def class_log_probs(self, hidden: torch.Tensor, classes) -> torch.Tensor:
        if self.chunk_size is None:
            return super().class_log_probs(hidden, classes)
        return lean_class_log_probs(self, hidden, classes)

    def topk_log_probs(self, hidden: torch.Tensor, k: int, exclude=None) -> tuple[torch.Tensor, torch.Tensor]:
        if self.chunk_size is None:
            return super().topk_log_probs(hidden, k, exclude)
        return lean_topk_log_probs(self, hidden, k, exclude)

    def loss_and_grad(self, z, target, keep, row_weight=None):
        """The variant's per-row loss of logits ``z`` (r, C) in the compute dtype and, if
        ``row_weight`` (r,) is given, d Σ_i w_i·loss_i / dz (r, C): what ``chunk_size`` uses."""
        return softmax_loss_and_grad(z, target, keep, self.label_smoothing, row_weight)

    def cross_entropy(self, logits: torch.Tensor, target: torch.Tensor, **kwargs) -> torch.Tensor:
        """The loss function on logits; ``kwargs`` = ignore_index, reduction, label_smoothing."""
        return softmax_cross_entropy(logits, target, **kwargs)

    def loss_from_logits(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.cross_entropy(
            logits,
            target,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )

    def extra_repr(self) -> str:
        chunk = "" if self.chunk_size is None else f", chunk_size={self.chunk_size!r}"
        return super().extra_repr() + chunk
