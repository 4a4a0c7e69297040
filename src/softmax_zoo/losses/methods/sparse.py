"""Sparse-softmax: softmax restricted to the k largest logits.

Source: Sun, Zhang, Huang, Lei, Su, Pan & Cao 2021, "Sparse-softmax: A Simpler and Faster
Alternative Softmax Transformation" (arXiv:2112.12433): the sparse-softmax transformation and
its cross-entropy. With Ω_k the indices of the k largest logits of a row,

    p_i = exp(z_i) / Σ_{j∈Ω_k} exp(z_j)  for i ∈ Ω_k,  0 otherwise        (sparse-softmax)
    loss = logsumexp_{j∈Ω_k}(z_j) − z_t                                 (its cross-entropy)

The target is not added to Ω_k: when it is outside, its gradient is −1 and the top-k get their
softmax weights, so a row's gradient has at most k+1 nonzeros. The custom backward gives just
those (``SparseRows.sparse_grad``) instead of going through autograd of topk and gather: on
logits, scattered into a zeroed buffer; in the head and ``linear_cross_entropy``, to the linear
layer itself, whose backward then gathers k+1 rows of W a row for ∂/∂h and scatters k+1 rows of h
a row into ∂/∂W (``sparse_linear.py``): 4·N·(k+1)·d multiply-adds instead of the two backward
GEMMs' 4·N·C·d. The gradient is dense, and so is that backward, with ``smoothing_over="all"`` and
ε > 0, at k = C and during ``full_softmax_steps`` (both the full softmax).

Label smoothing ε spreads ε uniformly over Ω_k:
(1 − ε)·(lse_k − z_t) + ε·mean_{j∈Ω_k}(lse_k − z_j) = lse_k − z_t + ε·(z_t − mean_{j∈Ω_k} z_j).
With k = C this is exactly :func:`softmax_cross_entropy`, which is what is computed then.

Options (our extensions; the defaults are the paper's loss above). With S the support and M the
classes the smoothing is spread over, the loss is lse_S − (1 − ε)·z_t − ε·mean_{j∈M} z_j:

- ``target_in_support``: S = Ω_k ∪ {t} instead of Ω_k (the target always in the normaliser, so
  the loss is a proper −log p_t ≥ 0 over k or k+1 classes);
- ``smoothing_over="all"``: M = all C classes (UniLM's convention for the full softmax, with the
  sparse normaliser: the cross-entropy of lse_S − z_j against the smoothed target), instead of
  M = S (``"support"``); the gradient is then dense (−ε/C everywhere).

The gradient is softmax over S (zero outside) − (1 − ε)·onehot(t) − ε/|M| on M. At k = C every
option is the smoothed softmax cross-entropy. :class:`SparseSoftmaxHead` adds a third option,
``full_softmax_steps``: train with the full softmax for the first N optimiser steps, then sparse.
"""

from __future__ import annotations

import torch

from ..machinery._core import check_ce_inputs, check_k, compute_dtype
from ..machinery.options import scale_logits
from ..machinery.registry import register_variant
from ..machinery.row_loss import RowLoss, SparseGrad
from ..methods.softmax import SoftmaxHead, SoftmaxRows


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


SMOOTHING_OVER = ("support", "all")


def check_smoothing_over(smoothing_over: str) -> None:
    if smoothing_over not in SMOOTHING_OVER:
        raise ValueError(f"smoothing_over must be one of {SMOOTHING_OVER}, got {smoothing_over!r}")


def check_full_softmax_steps(full_softmax_steps: int) -> None:
    if full_softmax_steps < 0:
        raise ValueError(f"full_softmax_steps must be >= 0, got {full_softmax_steps}")


class SparseRows(RowLoss):
    """Sparse-softmax CE as a :class:`RowLoss` (the module docstring's loss and options), k < C.

    Args:
        k: support size, 1 <= k < C. smoothing_over, target_in_support: the module docstring's options.
    """

    softmax_of_logits = True  # over the top-k: the head's support_k
    has_lse = True  # logsumexp over the support S the loss normalises over (Ω_k, or Ω_k ∪ {t})

    def __init__(self, k: int, label_smoothing: float = 0.0, smoothing_over: str = "support", target_in_support: bool = False):
        super().__init__(label_smoothing)
        check_smoothing_over(smoothing_over)
        self.k, self.smoothing_over, self.target_in_support = k, smoothing_over, bool(target_in_support)

    def rows(self, logits, target, keep):
        """Per-row loss in the compute dtype; the state :meth:`grad` takes: top-k values (N, k),
        their indices (N, k), the support's logsumexp (N,), z_t (N,), whether t was added to the
        support (N,) bool, and the smoothing mean's denominator |M| (N,)."""
        k, eps, over_all = self.k, self.label_smoothing, self.smoothing_over == "all"
        dtype = compute_dtype(logits.dtype)
        values, index = logits.topk(k, dim=1, sorted=False)  # (N, k)
        values = values.to(dtype)
        lse = values.logsumexp(dim=1)  # (N,)
        zt = logits.gather(1, target.unsqueeze(1)).squeeze(1).to(dtype)  # (N,)
        added = torch.zeros_like(keep)  # (N,) the target joined the support
        if self.target_in_support:
            added = (index != target.unsqueeze(1)).all(dim=1)
            lse = torch.where(added, torch.logaddexp(lse, zt), lse)
        loss = lse - zt
        size = torch.full_like(lse, logits.shape[1]) if over_all else k + added.to(dtype)  # (N,) |M|
        if eps > 0:
            if over_all:
                mean = logits.to(dtype).mean(dim=1)
            else:
                mean = (values.sum(dim=1) + torch.where(added, zt, 0.0)) / size
            loss = loss + eps * (zt - mean)
        return loss.masked_fill(~keep, 0.0), (values, index, lse, zt, added, size)

    def scratch_rows(self, logits, target, keep):
        """:meth:`rows`, with ``logits`` kept in the state as the buffer :meth:`grad` writes the gradient into."""
        loss, state = self.rows(logits, target, keep)
        return loss, (*state, logits)

    def lse(self, state):
        """logsumexp over the support S the loss normalises over: Ω_k, or Ω_k ∪ {t} with ``target_in_support``."""
        return state[2]

    @property
    def smooths_all(self) -> bool:
        """Whether ε is spread over all C classes (``smoothing_over="all"`` and ε > 0): a dense gradient."""
        return self.smoothing_over == "all" and self.label_smoothing > 0

    @property
    def has_sparse_grad(self) -> bool:
        """Whether :meth:`grad` is k + 1 entries a row (:meth:`sparse_grad`): always but where
        :attr:`smooths_all`, which puts −ε/C on every class."""
        return not self.smooths_all

    def sparse_grad(self, state, target, row_weight, lse_weight=None):
        """The gradient's nonzeros: :class:`SparseGrad` of the support Ω_k and the target, (N, k + 1)
        (the target's entry adds to its top-k one when it is inside); ``lse_weight`` v adds v·softmax
        over S. With ``smoothing_over="all"`` the −ε/C on every class is :meth:`grad`'s, not here."""
        values, index, lse, zt, added, size = state[:6]  # state[6:]: the logits from scratch_rows
        eps = self.label_smoothing
        w = row_weight.to(lse.dtype)  # (N,), 0 at ignored rows
        on_p = w if lse_weight is None else w + lse_weight.to(lse.dtype)  # (N,) weight of softmax over S
        on_support = eps / size if self.smoothing_over == "support" else torch.zeros_like(size)  # (N,) −ε/|M| on S
        top = torch.exp(values - lse.unsqueeze(1)).mul_(on_p.unsqueeze(1)).sub_((on_support * w).unsqueeze(1))  # (N, k)
        # The target adds −(1 − ε) to its top-k weight, or stands alone outside the top-k (with its
        # own softmax weight when it joined the support).
        at_target = -(1.0 - eps) * w + torch.where(added, torch.exp(zt - lse) * on_p - on_support * w, 0.0)  # (N,)
        return SparseGrad(torch.cat([index, target.unsqueeze(1)], dim=1), torch.cat([top, at_target.unsqueeze(1)], dim=1))

    def grad(self, state, target, row_weight, shape, dtype, lse_weight=None):
        """A ``shape`` = (N, C) tensor of ``dtype``: :meth:`sparse_grad` scattered, k(+1) nonzeros a row,
        or C with ``smoothing_over="all"`` and ε > 0; ``lse_weight`` v adds v·softmax over S."""
        scratch = state[6:]  # the logits from scratch_rows, the buffer the gradient is written into
        if scratch and scratch[0].shape == shape and scratch[0].dtype == dtype:
            grad = scratch[0].zero_()
        else:
            grad = torch.zeros(shape, dtype=dtype, device=target.device)
        if self.smooths_all:
            grad -= (self.label_smoothing / shape[1] * row_weight.to(state[2].dtype)).to(dtype).unsqueeze(1)
        return self.sparse_grad(state, target, row_weight, lse_weight).dense(grad)

    def log_probs(self, z):
        """:func:`sparse_log_softmax` over the top-k (the support at inference, whatever ``target_in_support``)."""
        return sparse_log_softmax(z, self.k)

    def on_logits(self, logits, target, *, ignore_index=-100, reduction="mean"):
        keep, safe_target = check_ce_inputs(logits, target, ignore_index, reduction, self.label_smoothing)
        check_k(self.k, logits.shape[1])
        if self.k == logits.shape[1]:
            return SoftmaxRows(self.label_smoothing).on_logits(logits, target, ignore_index=ignore_index, reduction=reduction)
        return self.reduced(logits, safe_target, keep, reduction)


def sparse_softmax_cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    k: int,
    *,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
    smoothing_over: str = "support",
    target_in_support: bool = False,
) -> torch.Tensor:
    """Cross-entropy of :func:`sparse_softmax`: logsumexp of the top-k logits minus z_t (Sun et al. 2021).

    Args:
        logits: (N, C) unnormalised scores.
        target: (N,) class ids; ``ignore_index`` rows contribute nothing.
        k: support size, 1 <= k <= C; k = C is :func:`softmax_cross_entropy`.
        reduction: "mean" over non-ignored rows, "sum", or "none" -> (N,).
        label_smoothing: ε in [0, 1], spread uniformly over the support (``smoothing_over="support"``)
            or over all C classes (``"all"``).
        target_in_support: normalise over Ω_k ∪ {t} instead of Ω_k.

    Returns:
        The loss, in float32 for float16/bfloat16 logits; the gradient has the logits' dtype.
    """
    rows = SparseRows(k, label_smoothing, smoothing_over, target_in_support)
    return rows.on_logits(logits, target, ignore_index=ignore_index, reduction=reduction)


def _sparse_examples(num_classes: int) -> dict[str, dict]:
    """The shared head tests' cases: a support below C, and k = C (the full softmax)."""
    return {"sparse": {"k": 4}, "sparse-k=C": {"k": num_classes}}


@register_variant("sparse_softmax", label="sparse", title="sparse-softmax", examples=_sparse_examples)
class SparseSoftmaxHead(SoftmaxHead):
    """Linear projection + :func:`sparse_softmax_cross_entropy` (Sun et al. 2021).

    ``log_probs`` is the sparse distribution the model decodes with: log-softmax over the top-k
    logits, −inf elsewhere. See :class:`SoftmaxHead` for the other arguments.

    Training's backward multiplies only the gradient's k + 1 nonzeros a row (``sparse_linear.py``),
    with ``chunk_size`` or without, and with every loss option (class weights scale a row, the
    z-loss is over the support, the softcap's derivative is taken at the nonzeros); it is the dense
    backward where the gradient is dense: ``smoothing_over="all"`` with ε > 0, k = num_classes, and
    the steps of ``full_softmax_steps``. Deterministic under ``torch.use_deterministic_algorithms``.

    Args:
        k: support size, 1 <= k <= num_classes (the paper's best on text classification: 20).
        label_smoothing: ε for training, spread over ``smoothing_over``.
        smoothing_over: "support" (Ω_k, the paper's) or "all" classes.
        target_in_support: train over Ω_k ∪ {t} instead of Ω_k.
        full_softmax_steps: the training loss is the full softmax's (ε over all classes) while
            ``training_step`` < this, then sparse; evaluation and ``log_probs`` are always sparse.
            ``training_step`` (the optimiser steps done) is set by the trainer
            (:class:`softmax_zoo.trainer.TrainingStepToHeads`); a head that needs it and was
            never given it refuses to train rather than guess.
    """

    def __init__(
        self, in_features: int, num_classes: int, *, k: int, smoothing_over: str = "support",
        target_in_support: bool = False, full_softmax_steps: int = 0, **kwargs,
    ) -> None:
        super().__init__(in_features, num_classes, **kwargs)
        check_k(k, num_classes)
        check_smoothing_over(smoothing_over)
        check_full_softmax_steps(full_softmax_steps)
        self.k = k
        self.smoothing_over = smoothing_over
        self.target_in_support = bool(target_in_support)
        self.full_softmax_steps = int(full_softmax_steps)
        self.training_step: int | None = None

    @classmethod
    def check_options(cls, *, k: int, smoothing_over: str = "support", full_softmax_steps: int = 0, **options) -> None:
        super().check_options(**options)
        check_k(k, None)
        check_smoothing_over(smoothing_over)
        check_full_softmax_steps(full_softmax_steps)

    def full_softmax_now(self) -> bool:
        """Whether the training loss is still the full softmax's (``full_softmax_steps``)."""
        if not (self.training and self.full_softmax_steps):
            return False
        if self.training_step is None:
            raise ValueError(
                f"full_softmax_steps={self.full_softmax_steps} needs head.training_step (optimiser steps done): "
                "train through softmax_zoo.engine (its TrainingStepToHeads callback sets it) or set it yourself"
            )
        return self.training_step < self.full_softmax_steps

    def row_loss(self) -> RowLoss:
        """Sparse, or the full softmax (as :func:`sparse_softmax_cross_entropy`) at k = C and
        during ``full_softmax_steps``."""
        if self.k == self.num_classes or self.full_softmax_now():
            return super().row_loss()
        return SparseRows(self.k, self.label_smoothing, self.smoothing_over, self.target_in_support)

    @property
    def support_k(self) -> int | None:
        """k: the inference distribution is the softmax over the top-k logits (None for k = C)."""
        return None if self.k == self.num_classes else self.k

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> (..., C) sparse log-probabilities in float32, −inf outside the top-k
        (of the capped and tempered logits with ``softcap`` and ``temperature``)."""
        return sparse_log_softmax(scale_logits(self.logits(hidden), self.options), self.k)

    def extra_repr(self) -> str:
        extra = f", k={self.k}"
        if self.smoothing_over != "support" or self.target_in_support or self.full_softmax_steps:
            extra += (f", smoothing_over={self.smoothing_over!r}, target_in_support={self.target_in_support}, "
                      f"full_softmax_steps={self.full_softmax_steps}")
        return super().extra_repr() + extra
