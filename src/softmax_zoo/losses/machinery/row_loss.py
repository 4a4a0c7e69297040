"""A logit-level loss written once: per-row values and their logit gradient.

A variant (softmax, stable, sparse, ...) is a :class:`RowLoss` with three methods,

    rows(z, target, keep)                  -> loss (N,), state      the forward
    grad(state, target, w, shape, dtype)   -> ∂(Σ_i w_i·loss_i)/∂z   the backward, (N, C)
    log_probs(z)                           -> (..., C)               the distribution the loss is the cross-entropy of

and, for the options that need the row's log-normaliser (z-loss, ``return_lse``; ``options.py``),
``lse(state)`` -> (N,) and ``grad(..., lse_weight=v)`` -> ∂(Σ_i w_i·loss_i + v_i·lse_i)/∂z,
with :attr:`RowLoss.has_lse` set (softmax, stable and sparse have them);

and, where the gradient has a few nonzeros a row (sparse-softmax: the support and the target),
``sparse_grad(state, target, w, lse_weight=)`` -> :class:`SparseGrad`, the same gradient as
(index, value) pairs per row, with :attr:`RowLoss.has_sparse_grad` set: a linear head then
multiplies only those (``sparse_linear.py``) instead of the two backward GEMMs;

and every path of the package runs that one definition:

- the whole matrix, ``RowLoss.on_logits``: the (N, C) logits through :class:`_RowLossFunction`,
  whose backward is ``grad`` with w = the upstream gradient (0 at ignored rows);
- the chunked head (``chunked.py``): ``loss_and_grad`` on ``chunk_size`` rows at a time, with w
  = the reduction's weights, so that the (N, C) logits never exist; it runs ``scratch_rows``,
  which may overwrite the chunk's logits (softmax, stable and sparse make their gradient in that buffer),
  and takes the gradient as :meth:`RowLoss.sparse_grad` where :attr:`RowLoss.has_sparse_grad`, else ``grad``;
- inference (``SoftmaxHead.log_probs``, hence ``predict`` and the evaluation NLL): ``log_probs``.
  A subclass that leaves one of the three out cannot be instantiated (they are abstract), so a
  variant cannot change its loss and silently keep another distribution.

``rows`` receives the logits as given (the whole-matrix path) or already in the compute dtype
(the chunked path) and computes in ``compute_dtype(z.dtype)`` (``softmax_zoo.losses.compute_dtype``: float16 and
bfloat16 in float32, float32 and float64 as they are; another dtype is refused, saying so); ``grad`` may return the compute
dtype or ``dtype`` (the caller casts to the logits' dtype) and may reuse ``state``'s buffers in
place: it is called once per ``rows``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import NamedTuple

import torch

from ..machinery._core import check_ce_inputs, compute_dtype, reduce_loss


class SparseGrad(NamedTuple):
    """A logit gradient (N, C) given by its nonzeros: row i is Σ_j values[i, j]·onehot(index[i, j]).

    An index may repeat within a row (the target inside the support): its values add up.
    """

    index: torch.Tensor  # (N, m) long, class ids
    values: torch.Tensor  # (N, m), in the compute dtype

    def dense(self, out: torch.Tensor) -> torch.Tensor:
        """``out`` (N, C) += this gradient, in place; returned."""
        return out.scatter_add_(1, self.index, self.values.to(out.dtype))


class RowLoss(ABC):
    """A logit-level loss: subclasses implement :meth:`rows`, :meth:`grad` and :meth:`log_probs`.

    Args:
        label_smoothing: ε in [0, 1], spread uniformly over the support of :meth:`log_probs`
            (the classes of nonzero probability): loss_ε = (1 − ε)·loss_0 + ε·mean_{p_j > 0}(−log p_j),
            which the shared head tests check.
    """

    #: True when :meth:`log_probs` is the softmax of the logits over the head's ``support_k`` (all
    #: classes, or the top-k), which a chunked head's ``predict``, ``class_log_probs`` and
    #: ``topk_log_probs`` stream over class blocks (``lean_inference.py``); otherwise they use
    #: :meth:`log_probs` of the full logits.
    softmax_of_logits = False

    #: True when :meth:`lse` and ``grad(..., lse_weight=)`` are implemented.
    has_lse = False

    #: True when :meth:`sparse_grad` gives :meth:`grad` by its few nonzeros a row (as set now: an
    #: option that spreads the gradient over every class turns it off).
    has_sparse_grad = False

    def __init__(self, label_smoothing: float = 0.0) -> None:
        self.label_smoothing = float(label_smoothing)

    @abstractmethod
    def rows(self, z: torch.Tensor, target: torch.Tensor, keep: torch.Tensor):
        """Per-row loss of ``z`` (N, C); target (N,) long with ignored rows at class 0, keep (N,) bool.

        Returns:
            loss (N,) in the compute dtype, 0 at ignored rows, and a tuple of tensors for :meth:`grad`.
        """
        raise NotImplementedError

    @abstractmethod
    def grad(self, state, target: torch.Tensor, row_weight: torch.Tensor, shape: torch.Size, dtype: torch.dtype):
        """d Σ_i w_i·loss_i / dz, (N, C) = ``shape``, from :meth:`rows`' state; w = ``row_weight`` (N,)."""
        raise NotImplementedError

    @abstractmethod
    def log_probs(self, z: torch.Tensor) -> torch.Tensor:
        """Logits (..., C) -> (..., C) log-probabilities in the compute dtype: the distribution whose
        cross-entropy :meth:`rows` is at ε = 0 (loss_i = −log p_i,t wherever p_i,t > 0)."""
        raise NotImplementedError

    def sparse_grad(self, state, target: torch.Tensor, row_weight: torch.Tensor, lse_weight=None) -> SparseGrad:
        """:meth:`grad` as its nonzeros: (index (N, m), values (N, m)) per row, where :attr:`has_sparse_grad`."""
        raise NotImplementedError(f"{type(self).__name__} has no sparse gradient (has_sparse_grad is False)")

    def lse(self, state) -> torch.Tensor:
        """(N,) the log-normaliser of the rows' distribution (log Σ over its support of exp z), from
        :meth:`rows`' state, read before :meth:`grad` (which may overwrite the state)."""
        raise NotImplementedError(f"{type(self).__name__} does not give its log-normaliser (has_lse is False)")

    def argmax(self, z: torch.Tensor) -> torch.Tensor:
        """(N,) the most probable class of :meth:`log_probs` (z (N, C)); the lowest id among ties."""
        return (z if self.softmax_of_logits else self.log_probs(z)).argmax(dim=1)

    def stats(self, state) -> torch.Tensor | None:
        """(N, s) per-row statistics the caller reads beside the loss (``options.OptionRows``: lse,
        correct prediction), or None."""
        return None

    def scratch_rows(self, z: torch.Tensor, target: torch.Tensor, keep: torch.Tensor):
        """:meth:`rows` of logits the caller gives up: ``z`` may be overwritten, e.g. by the state that
        :meth:`grad` turns into the gradient (the chunked path's per-chunk buffer). By default :meth:`rows`."""
        return self.rows(z, target, keep)

    def loss_and_grad(self, z, target, keep, row_weight=None):
        """loss (N,), if ``row_weight`` is given its gradient (a :class:`SparseGrad` where
        :attr:`has_sparse_grad`, else (N, C)) else None, and :meth:`stats`: the chunked path's call,
        which gives ``z`` up (:meth:`scratch_rows`)."""
        dtype = z.dtype  # before scratch_rows, which may overwrite z
        loss, state = self.scratch_rows(z, target, keep)
        check_loss_dtype(self, loss, dtype)
        stats = self.stats(state)  # before grad, which may overwrite the state
        if row_weight is None:
            grad = None
        elif self.has_sparse_grad:
            grad = self.sparse_grad(state, target, row_weight)
        else:
            grad = self.grad(state, target, row_weight, z.shape, z.dtype)
        return loss, grad, stats

    def on_logits(self, logits: torch.Tensor, target: torch.Tensor, *, ignore_index: int = -100, reduction: str = "mean"):
        """The loss of logits (N, C) and target (N,) of any integer dtype, reduced by ``reduction``."""
        keep, safe_target = check_ce_inputs(logits, target, ignore_index, reduction, self.label_smoothing)
        return self.reduced(logits, safe_target, keep, reduction)

    def reduced(self, logits: torch.Tensor, safe_target: torch.Tensor, keep: torch.Tensor, reduction: str):
        """:meth:`on_logits` after its checks: ``safe_target`` (N,) long, ignored rows at class 0."""
        return reduce_loss(self.per_row(logits, safe_target, keep)[0], keep, reduction)

    def per_row(self, logits: torch.Tensor, safe_target: torch.Tensor, keep: torch.Tensor):
        """loss (N,) of the whole logits (N, C), differentiable, and :meth:`stats` (N, s) or None."""
        loss, stats = _RowLossFunction.apply(self, logits, safe_target, keep)
        return loss, (None if stats.shape[1] == 0 else stats)


def check_loss_dtype(row_loss: RowLoss, loss: torch.Tensor, logits_dtype: torch.dtype) -> None:
    """Raise ``TypeError`` unless :meth:`RowLoss.rows` returned its loss in the compute dtype of the logits
    (:func:`softmax_zoo.losses.compute_dtype`), saying why: the gradient, the chunked path and float64 gradcheck read it."""
    expected = compute_dtype(logits_dtype)
    if loss.dtype != expected:
        raise TypeError(
            f"{type(row_loss).__name__}.rows returned a {loss.dtype} loss for {logits_dtype} logits; a RowLoss computes in "
            f"compute_dtype(z.dtype) = {expected} (float16 and bfloat16 in float32, float32 and float64 as they are), so that "
            "float64 inputs keep float64 (the shared tests' gradcheck) and the chunked and plain paths agree: write "
            "z.to(softmax_zoo.losses.compute_dtype(z.dtype)), not z.float()"
        )


class _RowLossFunction(torch.autograd.Function):
    """Per-row loss (N,) of a :class:`RowLoss` on the whole (N, C) logits, with its own backward."""

    @staticmethod
    def forward(ctx, row_loss, logits, target, keep):
        loss, state = row_loss.rows(logits, target, keep)
        check_loss_dtype(row_loss, loss, logits.dtype)
        stats = row_loss.stats(state)
        stats = loss.new_empty(loss.shape[0], 0) if stats is None else stats  # (N, s)
        ctx.mark_non_differentiable(stats)
        ctx.save_for_backward(*state, target, keep)
        ctx.row_loss, ctx.logits_meta = row_loss, (logits.shape, logits.dtype)
        return loss, stats

    @staticmethod
    def backward(ctx, grad_loss, grad_stats):
        *state, target, keep = ctx.saved_tensors
        w = grad_loss * keep  # (N,) d loss / d row-loss, 0 at ignored rows
        shape, dtype = ctx.logits_meta
        # grad may overwrite the state, and a graph may be run backward twice (retain_graph, gradcheck)
        state = tuple(None if t is None else t.clone() for t in state)
        grad = ctx.row_loss.grad(state, target, w, shape, dtype)
        return None, grad.to(dtype), None, None
