"""Full softmax cross-entropy: the baseline every other variant is measured against.

loss_i = logsumexp_j(z_ij) − z_i,t  (with label smoothing ε: (1−ε)·that + ε·mean_j(logsumexp − z_ij)).
A thin wrapper over ``torch.nn.functional.cross_entropy`` (fused log-softmax + NLL), with this
package's input checks, so that it equals torch in value and gradient. float16/bfloat16 logits
are cast to float32 first (the package's dtype rule, ``_core``): the loss is float32, the
gradient has the logits' dtype. The chunked head (``chunk_size``) runs the same loss written as a
:class:`~softmax_zoo.losses.machinery.row_loss.RowLoss`, :class:`SoftmaxRows`, with ``F.cross_entropy`` the
reference it is tested against.

:class:`SoftmaxHead` is also the base of every logit-level variant: a subclass registers itself
(``registry.register_variant``) and overrides :meth:`SoftmaxHead.row_loss`, nothing else: its
:class:`~softmax_zoo.losses.machinery.row_loss.RowLoss` gives the loss, its gradient and the distribution
``log_probs`` returns.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from ..machinery import memory
from ..machinery._core import check_ce_inputs, check_label_smoothing, compute_dtype, reduce_loss
from ..machinery.chunked import auto_chunk_size, check_chunk_size, chunked_linear_loss
from ..machinery.head import LinearHead
from ..machinery.lean_inference import lean_class_log_probs, lean_predict, lean_topk_log_probs
from ..machinery.options import OptionRows, check_loss_options, head_output, with_options
from ..machinery.registry import register_variant
from ..machinery.row_loss import RowLoss


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


def softmax_log_probs(logits: torch.Tensor) -> torch.Tensor:
    """log_softmax of logits (..., C) in their compute dtype (float32 for float16/bfloat16, else theirs)."""
    return torch.log_softmax(logits.to(compute_dtype(logits.dtype)), dim=-1)


class SoftmaxRows(RowLoss):
    """Softmax CE as a :class:`RowLoss`: what the chunked path runs (the whole matrix runs
    ``F.cross_entropy``, :meth:`on_logits`).

    loss_i = lse_i − z_it + ε·(z_it − mean_j z_ij), F.cross_entropy's smoothing rewritten as in
    ``stable.py``; d Σ_i w_i·loss_i + v_i·lse_i / dz_ij = (w_i + v_i)·softmax_ij − w_i·((1 − ε)·[j = t_i] + ε/C).
    One exp per logit: the probabilities are exp(z − max) / their sum, normalised in place, and on
    the chunked path (:meth:`scratch_rows`) exp(z − max) overwrites the chunk's logits: one (N, C) buffer.
    """

    softmax_of_logits = True
    has_lse = True

    def rows(self, z, target, keep):
        return self._rows(z.to(compute_dtype(z.dtype)), target, keep, in_place=False)

    def scratch_rows(self, z, target, keep):
        return self._rows(z.to(compute_dtype(z.dtype)), target, keep, in_place=True)

    def _rows(self, z, target, keep, in_place: bool):
        """z (N, C) in the compute dtype; ``in_place``: exp(z − max) overwrites z."""
        eps = self.label_smoothing
        m = z.amax(dim=1, keepdim=True)  # (N, 1)
        zt = z.gather(1, target.unsqueeze(1)).squeeze(1)  # (N,)
        smooth = eps * (zt - z.mean(dim=1)) if eps > 0 else None  # (N,), read before z is overwritten
        p = (z.sub_(m) if in_place else torch.sub(z, m)).exp_()  # (N, C)
        total = p.sum(dim=1, keepdim=True)  # (N, 1)
        lse = (total.log() + m).squeeze(1)  # (N,)
        loss = lse - zt
        if smooth is not None:
            loss = loss + smooth
        return loss.masked_fill(~keep, 0.0), (p, total, lse)

    def lse(self, state):
        return state[2]

    def grad(self, state, target, row_weight, shape, dtype, lse_weight=None):
        p, total, _ = state  # (N, C) exp(z − max), overwritten; (N, 1)
        eps = self.label_smoothing
        w = row_weight.to(p.dtype).unsqueeze(1)  # (N, 1)
        on_p = w if lse_weight is None else w + lse_weight.to(p.dtype).unsqueeze(1)  # (N, 1) weight of softmax
        p.mul_(on_p / total)
        if eps > 0:
            p.sub_(eps / p.shape[1] * w)
        return p.scatter_add_(1, target.unsqueeze(1), -(1.0 - eps) * w)

    def log_probs(self, z):
        return softmax_log_probs(z)

    def on_logits(self, logits, target, *, ignore_index=-100, reduction="mean"):
        return softmax_cross_entropy(
            logits, target, ignore_index=ignore_index, reduction=reduction, label_smoothing=self.label_smoothing
        )


@register_variant("softmax", label="softmax", title="softmax", auto=("chunk_size",))
class SoftmaxHead(LinearHead):
    """Linear projection + full softmax cross-entropy (see :class:`LinearHead` for the arguments).

    The base of every logit-level variant: a subclass changes the loss by overriding
    :meth:`row_loss` alone, which the plain path (the whole (N, C) logits), the ``chunk_size``
    path and inference (:meth:`log_probs`, the row loss's distribution) run.

    Args:
        label_smoothing: ε for training; ``log_probs`` does not depend on it.
        z_loss, return_lse, class_weight, softcap, shift, return_token_accuracy, temperature,
            return_entropy, return_target_log_prob: every one, on
            both paths (``options.py``); ``log_probs`` and ``predict`` read the capped logits.
        chunk_size: None: the loss from the full (N, C) logits (where the row loss's gradient is
            sparse, :attr:`RowLoss.has_sparse_grad`, as one chunk of the chunked path below, whose
            backward multiplies only the gradient's nonzeros: ``sparse_linear.py``). An int: the loss and all its
            gradients are computed in the forward, ``chunk_size`` rows at a time, never holding
            the (N, C) logits (``chunked.py``); values and gradients equal the plain path's.
            "auto": rows per chunk chosen so a chunk holds at most the device's budget of
            logits (``memory.chunk_logits``: 2^24 on a CPU, 64 MiB in float32). With chunk_size set,
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
        check_loss_options(class_weight=self.class_weight, label_smoothing=label_smoothing)
        self.label_smoothing = label_smoothing
        self.chunk_size = chunk_size

    @classmethod
    def check_options(cls, *, label_smoothing: float = 0.0, chunk_size=None, **options) -> None:
        super().check_options(label_smoothing=label_smoothing, **options)
        check_label_smoothing(label_smoothing)
        check_chunk_size(chunk_size)

    def forward(self, hidden: torch.Tensor, target: torch.Tensor):
        """hidden (..., d), target (...) -> loss (scalar, or target's shape for reduction="none"),
        or ``options.HeadOutput`` with a ``return_*`` option."""
        if self.chunk_size is None and not self.row_loss_with_options().has_sparse_grad:
            return super().forward(hidden, target)
        return chunked_linear_loss(self, hidden, self.shifted(target))

    def step_buffers(self, rows: int, free: int | None = None) -> dict[str, int]:
        """The whole (rows, C) logits, or with ``chunk_size`` set one chunk's (``auto``: the device's budget)."""
        if self.chunk_size is None:
            return super().step_buffers(rows, free)
        size = self.chunk_size
        if size == "auto":
            size = auto_chunk_size(rows, self.num_classes, memory.budget_logits(free, self.weight.numel()))
        size = min(rows, size)
        what = f"one chunk's ({size:,}, {self.num_classes:,}) logits x {memory.LOGIT_BUFFERS}"
        return {what: memory.logits_bytes(size, self.num_classes)}

    @property
    def support_k(self) -> int | None:
        """Classes the inference distribution normalises over: None for all of them."""
        return None

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> (..., C): the row loss's distribution (:meth:`RowLoss.log_probs`) of the
        logits (capped with ``softcap``)."""
        return self.row_loss_with_options().log_probs(self.logits(hidden))

    def streams_inference(self) -> bool:
        """Whether ``predict``, ``class_log_probs`` and ``topk_log_probs`` run over class blocks:
        chunk_size is set and the distribution is one ``lean_inference.py`` streams
        (:attr:`RowLoss.softmax_of_logits`; not with ``softcap``, whose inference builds the logits)."""
        return self.chunk_size is not None and self.row_loss_with_options().softmax_of_logits

    def predict(self, hidden: torch.Tensor) -> torch.Tensor:
        if not self.streams_inference():
            return super().predict(hidden)
        return lean_predict(self, hidden)

    def class_log_probs(self, hidden: torch.Tensor, classes) -> torch.Tensor:
        if not self.streams_inference():
            return super().class_log_probs(hidden, classes)
        return lean_class_log_probs(self, hidden, classes)

    def topk_log_probs(self, hidden: torch.Tensor, k: int, exclude=None) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.streams_inference():
            return super().topk_log_probs(hidden, k, exclude)
        return lean_topk_log_probs(self, hidden, k, exclude)

    def row_loss(self) -> RowLoss:
        """The variant's loss on logits (``row_loss.py``), as this head is set now."""
        return SoftmaxRows(self.label_smoothing)

    def row_loss_with_options(self) -> RowLoss:
        """:meth:`row_loss` with the head's options (``options.with_options``): what every path runs."""
        return with_options(self.row_loss(), self.options, self.class_weight)

    def loss_rows(self) -> RowLoss:
        """Deprecated name of :meth:`row_loss_with_options`."""
        warnings.warn("SoftmaxHead.loss_rows() is now row_loss_with_options()", DeprecationWarning, stacklevel=2)
        return self.row_loss_with_options()

    def loss_from_logits(self, logits: torch.Tensor, target: torch.Tensor):
        """logits (N, C), target (N,) -> the loss reduced by ``self.reduction`` (or ``options.HeadOutput``)."""
        rows = self.row_loss_with_options()
        if not isinstance(rows, OptionRows):
            return rows.on_logits(logits, target, ignore_index=self.ignore_index, reduction=self.reduction)
        keep, safe = check_ce_inputs(logits, target, self.ignore_index, self.reduction, rows.label_smoothing)
        loss, stats = rows.per_row(logits, safe, keep)
        return head_output(reduce_loss(loss, keep, self.reduction, rows.count(safe, keep)), stats, keep, self.options)

    def extra_repr(self) -> str:
        chunk = "" if self.chunk_size is None else f", chunk_size={self.chunk_size!r}"
        return super().extra_repr() + chunk
