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
from .head import LinearHead


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


class SoftmaxHead(LinearHead):
    """Linear projection + full softmax cross-entropy (see :class:`LinearHead` for the arguments).

    Subclasses change the loss by overriding :meth:`cross_entropy` only.

    Args:
        label_smoothing: ε for training; ``log_probs`` is always the plain softmax.
    """

    def __init__(self, in_features: int, num_classes: int, *, label_smoothing: float = 0.0, **kwargs) -> None:
        super().__init__(in_features, num_classes, **kwargs)
        check_label_smoothing(label_smoothing)
        self.label_smoothing = label_smoothing

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
