"""The memory-lean linear + loss as one function, for any registered logit-level variant.

In the spirit of Cut Cross-Entropy's ``linear_cross_entropy(embeddings, classifier, targets)``
(Wijmans et al. 2025, arXiv:2411.09009): the loss of ``hidden @ weight.T + bias`` without the
(N, C) logits, here through the variant's head (``chunked.py``), so it equals the head exactly.
"""

from __future__ import annotations

import torch

from .machinery.registry import variant
from .methods.softmax import SoftmaxHead


def linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    loss: str = "softmax",
    chunk_size="auto",
    ignore_index: int = -100,
    reduction: str = "mean",
    **variant_options,
) -> torch.Tensor:
    """The loss ``loss`` of the logits hidden @ weight.T + bias, ``chunk_size`` rows at a time.

    Args:
        hidden: (..., d). weight: (C, d). target: (...) class ids. bias: (C,) or None.
        loss: a registered logit-level variant, e.g. "softmax", "stable_softmax", "sparse_softmax".
        chunk_size: rows per chunk, "auto" (``memory.chunk_logits`` logits a chunk) or None (the
            whole (N, C) logits).
        **variant_options: the head's own arguments, e.g. ``k=20``, ``label_smoothing=0.1``, and the
            loss options (``z_loss``, ``softcap``, ``class_weight``, ``shift``, ``return_lse``,
            ``return_token_accuracy``, ``temperature``, ``return_entropy``, ``return_target_log_prob``;
            ``options.py``).

    Returns:
        As the head: a scalar for "mean"/"sum", target's shape for "none" (or a ``HeadOutput``);
        gradients flow to ``hidden``, ``weight`` and ``bias``.
    """
    cls = variant(loss).head
    if not issubclass(cls, SoftmaxHead):
        raise ValueError(f"loss {loss!r} is not a logit-level variant (a SoftmaxHead); build its head instead")
    if weight.dim() != 2:
        raise ValueError(f"weight must be (C, d), got shape {tuple(weight.shape)}")
    head = cls(weight.shape[1], weight.shape[0], weight=weight, bias=False, chunk_size=chunk_size,
               ignore_index=ignore_index, reduction=reduction, **variant_options)
    if bias is not None:
        if tuple(bias.shape) != (weight.shape[0],):
            raise ValueError(f"bias must be ({weight.shape[0]},), got shape {tuple(bias.shape)}")
        head.bias = bias
    return head(hidden, target)
