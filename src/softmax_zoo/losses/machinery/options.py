"""The loss options every head takes, defined once: z-loss, return_lse, class weights, softcap,
shift, token accuracy, temperature, entropy and the target's log-probability (reduction="none" is
every loss's, ``_core``).

With z_i the row's logits, t_i its target, ℓ_i the variant's loss (label smoothing included) and
lse_i the log-normaliser of the variant's distribution (logsumexp over its support: all C classes
for softmax and stable, the support S = Ω_k or Ω_k ∪ {t} for sparse-softmax):

- ``softcap=c``: z ← c·tanh(z / c) before everything else, loss, lse, log_probs and predictions
  alike (logit soft-capping, Gemma 2, Gemma Team 2024, arXiv:2408.00118);
- ``z_loss=β``: ℓ_i ← ℓ_i + β·lse_i² (PaLM's auxiliary loss, Chowdhery et al. 2022,
  arXiv:2204.02311, section 5, with β = 1e-4 there), which keeps lse near 0;
- ``class_weight=w`` (C,): ℓ_i ← w_{t_i}·ℓ_i and "mean" is Σ_i w_{t_i}·ℓ_i / Σ_i w_{t_i} over the
  kept rows, ``F.cross_entropy``'s ``weight=`` (the z-loss term is weighted with its row). With
  label smoothing ``F.cross_entropy`` weighs each class's share of the smoothing term by that
  class's own weight, not by w_t, so the two are refused together rather than silently differ;
- ``temperature=T``: z ← z / T after the softcap and before everything else (the loss, lse,
  entropy, target log-probability and ``log_probs`` are those of the tempered distribution; the
  gradient is 1/T times the tempered one), as RL libraries score sampled tokens at the sampling
  temperature;
- ``shift=n`` (causal LMs; ``True`` is 1, ``False`` 0): position t predicts target t + n (the n-th
  next token, for multi-token prediction): the target is shifted left by n along its last dimension
  and its last n positions ignored (``reduction="none"``: 0 there);
- ``return_lse=True``: the head returns :class:`HeadOutput` with ``lse`` (target's shape, 0 at
  ignored rows), detached: for logging, the z-loss itself is ``z_loss``;
- ``return_token_accuracy=True``: :class:`HeadOutput` with ``token_accuracy``, the share of kept
  rows whose most probable class under the variant's distribution (the argmax of the capped
  logits for softmax, stable and sparse; the lowest id among ties) is the target; nan for no kept row;
- ``return_entropy=True``: :class:`HeadOutput` with ``entropy`` (target's shape, 0 at ignored
  rows, detached), H_i = −Σ_j p_ij·log p_ij of the head's distribution ``log_probs`` (all C classes
  for softmax and stable, the top-k for sparse), at the temperature;
- ``return_target_log_prob=True``: :class:`HeadOutput` with ``target_log_prob`` (target's shape,
  0 at ignored rows, detached), log p_i,t_i of that distribution at the temperature (−inf for a
  sparse target outside the top-k), what ``class_log_probs(hidden, target[..., None])`` returns.
  Its differentiable form is the loss itself with ``reduction="none"`` (−log p_t without label
  smoothing, z-loss and class weights), whose gradients are exact for any upstream weights.

The logit-level heads (softmax, stable, sparse) run the options as :class:`OptionRows` around their
:class:`~softmax_zoo.losses.machinery.row_loss.RowLoss`, so the whole-matrix path, the chunked path and
``use_head`` share one definition; the chunked path keeps its memory bound (the softcap writes its
derivative 1 − tanh² over the chunk's logits and makes the capped logits, one more (chunk, C)
buffer, which the variant's loss may overwrite; ``return_entropy`` and ``return_target_log_prob``
make the chunk's log-probabilities, and the entropy their exp, up to two more). Heads that cannot
give an option refuse it by name (their ``refused_options``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..machinery._core import check_ce_inputs, compute_dtype, reduce_loss
from ..machinery.row_loss import RowLoss

#: Every option's name, in the order of the README's table.
OPTIONS = ("z_loss", "return_lse", "class_weight", "softcap", "shift", "return_token_accuracy", "temperature",
           "return_entropy", "return_target_log_prob")


class HeadOutput(NamedTuple):
    """What a head returns with a ``return_*`` option: the loss as without them, and each asked-for
    extra, else None: the per-row lse, entropy and target log-probability (target's shape, 0 at
    ignored rows, detached) and the token accuracy (scalar, detached)."""

    loss: torch.Tensor
    lse: torch.Tensor | None
    token_accuracy: torch.Tensor | None
    entropy: torch.Tensor | None = None
    target_log_prob: torch.Tensor | None = None


#: The per-row statistics :class:`OptionRows` returns beside the loss, the columns of its (N, 4) stats.
STATS = ("lse", "hit", "entropy", "target_log_prob")


@dataclass(frozen=True)
class LossOptions:
    """The options of one head but its class weights (a buffer of the head, so they follow ``.to``)."""

    z_loss: float = 0.0
    softcap: float | None = None
    shift: int = 0
    return_lse: bool = False
    return_token_accuracy: bool = False
    temperature: float = 1.0
    return_entropy: bool = False
    return_target_log_prob: bool = False

    @property
    def returns(self) -> bool:
        """Whether the head returns :class:`HeadOutput` rather than the loss alone."""
        return self.return_lse or self.return_token_accuracy or self.return_entropy or self.return_target_log_prob

    def given(self, class_weight) -> list[str]:
        """The names of the options set away from their defaults."""
        values = {"z_loss": self.z_loss, "return_lse": self.return_lse, "class_weight": class_weight is not None,
                  "softcap": self.softcap is not None, "shift": self.shift,
                  "return_token_accuracy": self.return_token_accuracy, "temperature": self.temperature != 1.0,
                  "return_entropy": self.return_entropy, "return_target_log_prob": self.return_target_log_prob}
        return [name for name in OPTIONS if values[name]]


def shift_steps(shift) -> int:
    """``shift`` as the number of positions n (True: 1, False: 0); ``ValueError`` unless an int >= 0."""
    if isinstance(shift, bool):
        return int(shift)
    if not isinstance(shift, numbers.Integral) or shift < 0:
        raise ValueError(f"shift must be True, False or an int n >= 0 (the n-th next token), got {shift!r}")
    return int(shift)


def check_loss_options(*, z_loss=0.0, softcap=None, class_weight=None, num_classes: int | None = None,
                  label_smoothing: float = 0.0, temperature=1.0, shift=False, **_) -> None:
    """Raise ``ValueError`` naming a bad option value (``num_classes`` None: the size is not checked)."""
    if isinstance(z_loss, bool) or not isinstance(z_loss, (int, float)) or not z_loss >= 0 or math.isinf(z_loss):
        raise ValueError(f"z_loss must be a finite coefficient >= 0, got {z_loss!r}")
    if softcap is not None and (isinstance(softcap, bool) or not isinstance(softcap, (int, float))
                                or not 0 < softcap < math.inf):
        raise ValueError(f"softcap must be None or a finite number > 0, got {softcap!r}")
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0 < temperature < math.inf:
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    shift_steps(shift)
    if class_weight is not None:
        w = class_weight_tensor(class_weight)
        if w.dim() != 1 or w.is_complex() or w.dtype == torch.bool:
            raise ValueError(f"class_weight must be a 1-D tensor of C weights, got shape {tuple(w.shape)} {w.dtype}")
        if num_classes is not None and w.shape[0] != num_classes:
            raise ValueError(f"class_weight must have num_classes = {num_classes} entries, got {w.shape[0]}")
        if bool((w < 0).any()) or not bool(w.isfinite().all()):
            raise ValueError(f"class_weight must be finite and >= 0, got {w.tolist()[:8]}...")
        if label_smoothing > 0:
            raise ValueError(
                f"class_weight with label_smoothing={label_smoothing} is refused: F.cross_entropy weighs each "
                "class's share of the smoothing term by that class's weight, a row loss scaled by w_t would differ"
            )


def class_weight_tensor(class_weight) -> torch.Tensor | None:
    """The class weights as a float tensor, or None; a list (or a config's ListConfig) of Python
    floats becomes float64, losing nothing (the loss casts the weights to its compute dtype)."""
    if class_weight is None:
        return None
    w = class_weight if isinstance(class_weight, torch.Tensor) else torch.tensor(list(class_weight), dtype=torch.float64)
    return w if w.is_floating_point() else w.float()


def shift_target(target: torch.Tensor, ignore_index: int, n: int = 1) -> torch.Tensor:
    """target (..., T) -> (..., T): position t gets target t + n, the last n positions ``ignore_index``."""
    if target.dim() == 0:
        raise ValueError(f"shift={n} needs a target with a sequence dimension, got a scalar")
    n = min(n, target.shape[-1])
    return F.pad(target[..., n:], (0, n), value=ignore_index)


def softcap(z: torch.Tensor, cap: float | None) -> torch.Tensor:
    """c·tanh(z / c) in the compute dtype, or z as given for ``cap`` None."""
    return z if cap is None else cap * torch.tanh(z.to(compute_dtype(z.dtype)) / cap)


def scale_logits(z: torch.Tensor, options: LossOptions) -> torch.Tensor:
    """The logits the variant's distribution reads: capped (``softcap``), then divided by ``temperature``."""
    z = softcap(z, options.softcap)
    return z if options.temperature == 1.0 else z.to(compute_dtype(z.dtype)) / options.temperature


def entropy_and_target(log_probs: torch.Tensor, target: torch.Tensor, entropy: bool) -> tuple[torch.Tensor | None, torch.Tensor]:
    """log_probs (N, C), target (N,) -> (H (N,) = −Σ_j p_j·log p_j, 0·log 0 = 0; or None), log p_t (N,).
    ``log_probs`` is overwritten."""
    logp_t = log_probs.gather(1, target.unsqueeze(1)).squeeze(1)
    if not entropy:
        return None, logp_t
    p = log_probs.exp()  # (N, C)
    h = -log_probs.masked_fill_(p == 0, 0.0).mul_(p).sum(dim=1)
    return h, logp_t


def mean_count(class_weight: torch.Tensor | None, target: torch.Tensor, keep: torch.Tensor):
    """The "mean"'s denominator: None (the kept rows' count) or Σ_kept w_t; target (N,) with ignored rows at 0."""
    if class_weight is None:
        return None
    return (class_weight.to(target.device)[target] * keep).sum()


class OptionRows(RowLoss):
    """A :class:`RowLoss` with the options (module docstring) around the variant's ``inner`` one.

    The gradient: d/dz of Σ_i w_i·w_{t_i}·(ℓ_i + β·lse_i²) is the variant's with row weight
    w_i·w_{t_i} and lse weight 2β·lse_i·w_i·w_{t_i} (``RowLoss.grad``'s ``lse_weight``), times
    1 − tanh²(z / c) under the softcap.

    Args:
        inner: the variant's row loss. options: :class:`LossOptions`. class_weight: (C,) or None.
    """

    def __init__(self, inner: RowLoss, options: LossOptions, class_weight: torch.Tensor | None) -> None:
        super().__init__(inner.label_smoothing)
        self.inner, self.options, self.class_weight = inner, options, class_weight
        # lean_inference streams the tempered logits (h / T) W^T + b / T, not the capped ones
        self.softmax_of_logits = inner.softmax_of_logits and options.softcap is None
        self.needs_lse = options.z_loss > 0 or options.return_lse
        if self.needs_lse and not inner.has_lse:
            raise ValueError(f"z_loss and return_lse need the log-normaliser, which {type(inner).__name__} does not give")
        self.has_lse = inner.has_lse

    def cap(self, z: torch.Tensor) -> torch.Tensor:
        """The logits the distribution reads (:func:`scale_logits`: capped, then tempered)."""
        return scale_logits(z, self.options)

    def rows(self, z, target, keep):
        return self._rows(z, target, keep, scratch=False)

    def scratch_rows(self, z, target, keep):
        return self._rows(z, target, keep, scratch=True)

    def _rows(self, z, target, keep, scratch: bool):
        """``scratch``: z may be overwritten (:meth:`RowLoss.scratch_rows`)."""
        opt, dcap = self.options, None
        if opt.softcap is not None:
            z = z.to(compute_dtype(z.dtype))
            t = z.div_(opt.softcap).tanh_() if scratch else torch.tanh(z / opt.softcap)  # (N, C)
            z, scratch = t * opt.softcap, True  # the capped logits, this call's own
            dcap = t.square_().neg_().add_(1.0)  # (N, C) d cap / dz = 1 − tanh²
        if opt.temperature != 1.0:
            z = z.to(compute_dtype(z.dtype))
            z, scratch = (z.div_(opt.temperature) if scratch else z / opt.temperature), True  # (N, C) z / T
        hit = entropy = logp_t = None
        if opt.return_token_accuracy:  # before the variant's loss may overwrite z
            hit = (self.inner.argmax(z) == target) & keep
        if opt.return_entropy or opt.return_target_log_prob:
            entropy, logp_t = entropy_and_target(self.inner.log_probs(z), target, opt.return_entropy)
        loss, state = (self.inner.scratch_rows if scratch else self.inner.rows)(z, target, keep)
        lse = self.inner.lse(state) if self.needs_lse else None  # (N,)
        if opt.z_loss > 0:
            loss = loss + (opt.z_loss * lse.square()).masked_fill(~keep, 0.0)
        cw = None
        if self.class_weight is not None:
            cw = self.class_weight.to(device=loss.device, dtype=loss.dtype)[target] * keep  # (N,) w_t, 0 ignored
            loss = loss * cw
        stats = None
        if opt.returns:  # (N, 4) the STATS columns, 0 where not asked for and at ignored rows
            columns = (lse if opt.return_lse else None, hit, entropy, logp_t)
            stats = torch.stack([torch.zeros_like(loss) if c is None else c.to(loss.dtype).masked_fill(~keep, 0.0)
                                 for c in columns], dim=1).detach()
        self.inner_len = len(state)
        return loss, (*state, dcap, lse, cw, stats)

    def stats(self, state):
        return state[-1]

    def lse(self, state):
        return state[self.inner_len + 1]

    @property
    def has_sparse_grad(self) -> bool:
        """The variant's: every option keeps its nonzeros where they are (a row's weight w_t and
        z-loss weight, and the softcap's 1 − tanh² at each nonzero)."""
        return self.inner.has_sparse_grad

    def _inner_weights(self, state, row_weight, lse_weight):
        """(the variant's state, its row weight (N,), its lse weight (N,) as keyword arguments, dcap or None)."""
        inner, (dcap, lse, cw, _) = state[: self.inner_len], state[self.inner_len :]
        w = row_weight if cw is None else row_weight * cw
        if self.options.z_loss > 0:
            zw = 2.0 * self.options.z_loss * lse * w
            lse_weight = zw if lse_weight is None else lse_weight + zw
        return tuple(inner), w, ({} if lse_weight is None else {"lse_weight": lse_weight}), dcap

    def grad(self, state, target, row_weight, shape, dtype, lse_weight=None):
        inner, w, more, dcap = self._inner_weights(state, row_weight, lse_weight)
        tempered = self.options.temperature != 1.0
        own = dtype if dcap is None and not tempered else compute_dtype(dtype)
        g = self.inner.grad(inner, target, w, shape, own, **more)
        if tempered:
            g = g.div_(self.options.temperature)  # d(z / T)/dz
        return g if dcap is None else g.mul_(dcap)

    def sparse_grad(self, state, target, row_weight, lse_weight=None):
        inner, w, more, dcap = self._inner_weights(state, row_weight, lse_weight)
        g = self.inner.sparse_grad(inner, target, w, **more)
        if self.options.temperature != 1.0:
            g = g._replace(values=g.values / self.options.temperature)  # d(z / T)/dz
        return g if dcap is None else g._replace(values=g.values * dcap.gather(1, g.index))

    def log_probs(self, z):
        return self.inner.log_probs(self.cap(z))

    def argmax(self, z):
        return self.inner.argmax(softcap(z, self.options.softcap))  # a temperature T > 0 keeps the order

    def count(self, target: torch.Tensor, keep: torch.Tensor):
        """The "mean"'s denominator (:func:`mean_count`)."""
        return mean_count(self.class_weight, target, keep)

    def on_logits(self, logits, target, *, ignore_index=-100, reduction="mean"):
        keep, safe = check_ce_inputs(logits, target, ignore_index, reduction, self.label_smoothing)
        return reduce_loss(self.per_row(logits, safe, keep)[0], keep, reduction, self.count(safe, keep))


def with_options(rows: RowLoss, options: LossOptions, class_weight: torch.Tensor | None) -> RowLoss:
    """``rows`` itself without options that touch the row loss (the variant's own fast paths; ``shift``
    is the head's), else :class:`OptionRows` around it."""
    if replace(options, shift=0) == LossOptions() and class_weight is None:
        return rows
    return OptionRows(rows, options, class_weight)


def head_output(loss: torch.Tensor, stats: torch.Tensor | None, keep: torch.Tensor, options: LossOptions):
    """The loss, or :class:`HeadOutput` from the (N, 4) stats (:data:`STATS`) when the options ask for it."""
    if not options.returns:
        return loss
    column = dict(zip(STATS, stats.unbind(1)))
    accuracy = None
    if options.return_token_accuracy:
        kept = keep.sum()
        accuracy = torch.where(kept > 0, column["hit"].sum() / kept.clamp(min=1), float("nan"))
    return HeadOutput(loss, column["lse"] if options.return_lse else None, accuracy,
                      column["entropy"] if options.return_entropy else None,
                      column["target_log_prob"] if options.return_target_log_prob else None)


def reshape_output(out, shape: torch.Size, reduction: str):
    """The flat (N,) loss ("none"), lse, entropy and target log-probability of ``out`` to the target's ``shape``."""
    if isinstance(out, HeadOutput):
        rows = {name: None if value is None else value.reshape(shape)
                for name, value in out._asdict().items() if name in STATS}
        return out._replace(loss=reshape_output(out.loss, shape, reduction), **rows)
    return out.reshape(shape) if reduction == "none" else out
