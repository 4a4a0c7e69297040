"""Sampled softmax: train on the target and m sampled classes (Blanc & Rendle 2018, section 2).

For a row with hidden state h, target t and logits o_j = h·w_j (+ b_j if the head has a bias),
m negatives s_1..s_m are drawn with replacement from q̃ = the sampler's q restricted to the classes
other than t and renormalised (q̃_j = q_j / (1 − q_t)). The loss is the cross-entropy over the
m + 1 candidates, target first::

    ô_t = o_t,    ô_k = o_{s_k} − ln(m·q̃_{s_k})   (k = 1..m),
    loss = logsumexp(ô_t, ô_1, .., ô_m) − ô_t.

Relation to the paper's notation (section 2): the paper trains on the positive class y and m
negatives drawn with replacement from q over the other classes, with adjusted logits
o'_y = o_y and o'_j = o_j − ln(m·q_j) for the sampled j, and shows that the gradient of this
sampled softmax is unbiased only when q_j ∝ exp(o_j). Our q̃ is its q (the sampler's q with the
target taken out and renormalised), ô is its o'. With the exact softmax sampler
(:class:`SoftmaxSampler`) every negative's corrected logit equals ln(Z_{−t}/m), their exp-sum is
Z_{−t} = Σ_{j≠t} exp(o_j), so the sampled loss equals the full cross-entropy for every draw and
every m, and the expected gradient equals the full gradient (the tests check both).

Relation to TensorFlow's ``tf.nn.sampled_softmax_loss`` (defaults: log-uniform candidate sampler,
``unique=True``, ``remove_accidental_hits=True``): TensorFlow draws the negatives from q itself,
without replacement, so the target may be among them; it subtracts the log of each class's
expected count (m·q with replacement, 1 − (1 − q)^m for unique draws) from the sampled logits
*and* from the target's logit, and masks accidental hits (negatives equal to the target) with a
large negative logit. Here the target is excluded when sampling instead of masked afterwards (all
m negatives count), draws are with replacement, and the target's logit is left uncorrected: the
form in which the oracle statement above is exact.

The candidates' logits are computed one of two ways, equal up to float rounding: per row, by
gathering each row's 1 + m weight rows (n·(1 + m)·d values read); or, when the rows share most
candidates (m large against C), by one GEMM of the rows against the U distinct candidates and a
gather from the (n, U) result. A gather runs far below GEMM speed, so the GEMM wins once
U ≤ :data:`SHARED_GEMM_RATIO`·(1 + m) (``make bench``: "candidate logits"); it is also taken when
its (n, U) logits are smaller than the gathered (n, 1 + m, d) rows. On a GPU either path is
refused before it runs if it cannot fit the free memory (``memory.check_fits``), naming its size.

Gradients flow to ``hidden`` and to the rows of the weight (and bias) of the target and the
drawn negatives only; the sampler runs under ``torch.no_grad``. In eval mode (``head.eval()``)
the loss and ``log_probs`` are the full softmax, so evaluation numbers compare across heads.
"""

from __future__ import annotations

import math
import numbers
from typing import ClassVar, NamedTuple

import torch
import torch.nn.functional as F

from ..machinery import memory
from ..machinery._core import check_target_dtype, check_target_range, reduce_loss
from ..machinery.head import LinearHead
from ..machinery.options import mean_count, with_options
from ..machinery.registry import register_variant
from ..methods.samplers import Sampler, UniformSampler
from ..methods.softmax import SoftmaxRows

# One GEMM over the U distinct candidates replaces the per-row gather when U <= this x (1 + m): the GEMM does
# U / (1 + m) times the gather's multiply-adds, at a far higher rate. The ratio sits below the two's break-even;
# their measured times at m = 32 to 2,048: results/bench_losses_cpu_candidate-logits.md.
SHARED_GEMM_RATIO = 64.0


class Negatives(NamedTuple):
    """A training step's draws (detached): ``ids`` (n, m) class ids and ``log_q`` (n, m) float32
    log q̃ of the n kept rows, in row order; ``keep`` (N,) bool, which of the step's rows they are."""

    ids: torch.Tensor
    log_q: torch.Tensor
    keep: torch.Tensor


def _sampled_examples(num_classes: int) -> dict[str, dict]:
    return {"sampled": {"sampler": UniformSampler(num_classes), "num_samples": 3}}


def check_num_samples(num_samples: int, num_classes: int | None) -> None:
    """Raise ``ValueError`` unless 1 <= num_samples < num_classes (None: the classes are not known yet, num_samples >= 1)."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral):
        raise ValueError(f"num_samples must be an integer, got {num_samples!r}")
    if num_classes is None and num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if num_classes is not None and not 1 <= num_samples < num_classes:
        raise ValueError(
            f"num_samples must be in [1, num_classes) = [1, {num_classes}), got {num_samples}; "
            "for num_samples >= num_classes use the full softmax (SoftmaxHead)"
        )


@register_variant("sampled_softmax", label="sampled ({sampler}, m={num_samples})", title="sampled softmax",
                  examples=_sampled_examples)
class SampledSoftmaxHead(LinearHead):
    """Output head trained with sampled softmax (see the module docstring for the loss).

    Args:
        in_features: d.
        num_classes: C.
        sampler: a :class:`~softmax_zoo.losses.methods.samplers.Sampler` (``UniformSampler``,
            ``UnigramSampler``, ``QuadraticKernelSampler``, ``SoftmaxSampler``); one built for a
            fixed number of classes must be built for C.
        num_samples: m negatives per row, 1 <= m < C (for m >= C use the full softmax).
        weight: optional tied (C, d) weight (see :class:`LinearHead`).
        bias: add a learnt (C,) bias (default False, as in the paper). With a bias the sampled
            logits are h·w_j + b_j, the same logits the eval-mode softmax uses; the exact
            ``SoftmaxSampler`` includes it in q, the kernel sampler ignores it (its kernel is on
            h·w), uniform and unigram do not look at logits.
        ignore_index: rows with this target contribute nothing (and draw nothing).
        reduction: "mean" over non-ignored rows, "sum" or "none".
        class_weight, shift: as every head (``options.py``); class weights scale the sampled
            row loss of the target's class. The other options are refused (:attr:`refused_options`).

    The sampler draws from torch's global generator unless :func:`seed_samplers` gave it one of its
    own: the engine does so under data parallelism (seed + rank), so that ranks draw different negatives.

    ``last_negatives``: the :class:`Negatives` of the last training forward (None before one), to
    observe the draws; a ``VocabParallelHead`` of this head keeps its global draws here too.

    Stateful samplers (the kernel tree) are refreshed from the weight before sampling whenever
    the weight changed since the last refresh, detected by the weight's in-place version counter
    (``weight._version``, which every optimizer step bumps): once per training step, and again
    only if the weight is modified in between.
    """

    refused_options: ClassVar[dict[str, str]] = {
        "z_loss": "the sampled loss's logsumexp runs over the target and m corrected samples, an estimate "
                  "of the full log-normaliser, not the lse a z-loss keeps near 0",
        "return_lse": "training computes only the target's and m sampled classes' logits, not the full lse",
        "softcap": "the samplers' proposals and the logQ correction read the uncapped logits",
        "return_token_accuracy": "training computes only the target's and m sampled classes' logits, "
                                 "not the argmax over all classes",
        "temperature": "the samplers' proposals and the logQ correction read the untempered logits",
        "return_entropy": "training computes only m + 1 logits a row, not the distribution over all classes",
        "return_target_log_prob": "training computes only m + 1 logits a row, not the full log-normaliser",
    }

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        sampler: Sampler,
        num_samples: int,
        weight: torch.Tensor | None = None,
        bias: bool = False,
        **kwargs,
    ) -> None:
        super().__init__(in_features, num_classes, weight=weight, bias=bias, **kwargs)
        check_num_samples(num_samples, num_classes)
        if sampler.num_classes is not None and sampler.num_classes != num_classes:
            raise ValueError(
                f"the sampler is built for {sampler.num_classes} classes but the head has {num_classes}"
            )
        self.sampler = sampler
        self.num_samples = num_samples
        self._refreshed_at: tuple[int, int] | None = None  # (data_ptr, _version) of the last refresh
        self.last_negatives: Negatives | None = None

    @classmethod
    def check_options(cls, *, num_samples: int, **options) -> None:
        super().check_options(**options)
        check_num_samples(num_samples, None)

    def loss_from_logits(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Eval mode: the full softmax cross-entropy (with the class weights)."""
        rows = with_options(SoftmaxRows(), self.options, self.class_weight)
        return rows.on_logits(logits, target, ignore_index=self.ignore_index, reduction=self.reduction)

    def refresh_sampler(self) -> None:
        """Refresh the sampler from the weight if the weight changed since the last refresh."""
        stamp = (self.weight.data_ptr(), self.weight._version)
        if stamp != self._refreshed_at:
            self.sampler.refresh(self.weight.detach())
            self._refreshed_at = stamp

    def forward(self, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return super().forward(hidden, target)
        target = self.shifted(target)
        self.check_hidden(hidden, self.weight)
        h = hidden.reshape(-1, self.in_features)  # (..., d) -> (N, d)
        t = target.reshape(-1)  # (...) -> (N,)
        if t.shape[0] != h.shape[0]:
            raise ValueError(f"target has {t.shape[0]} elements but hidden has {h.shape[0]} rows")
        check_target_dtype(t)
        t = t.long()
        keep = check_target_range(t, self.num_classes, self.ignore_index)
        h_k, t_k = h[keep], t[keep]  # (n, d), (n,): rows that count
        # The sampler's q outside autocast, whatever the sampler: its log q must be that of its draws.
        with torch.no_grad(), torch.autocast(h.device.type, enabled=False):
            self.refresh_sampler()
            if t_k.numel() == 0:  # every row ignored: nothing to draw
                neg, log_q = t_k.new_zeros(0, self.num_samples), h_k.new_zeros(0, self.num_samples, dtype=torch.float)
            else:
                neg, log_q = self.sampler.sample(
                    h_k.detach(), self.weight.detach(), self.num_samples, exclude=t_k,
                    bias=None if self.bias is None else self.bias.detach(),
                )  # (n, m) ids, (n, m) log q̃
            self.last_negatives = Negatives(neg, log_q, keep)
        cand = torch.cat([t_k[:, None], neg], dim=1)  # (n, 1 + m), target first
        logits = candidate_logits(h_k, self.weight, cand)  # (n, 1 + m), autocast's dtype under autocast
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.float()  # bias, correction and normalisation in float32 (logsumexp subtracts the max)
        if self.bias is not None:
            logits = logits + self.bias[cand]
        correction = log_q.to(logits.dtype) + math.log(self.num_samples)  # ln(m·q̃), never rounded to bfloat16
        logits = torch.cat([logits[:, :1], logits[:, 1:] - correction], dim=1)
        row_loss = torch.logsumexp(logits, dim=1) - logits[:, 0]  # (n,)
        if self.class_weight is not None:
            row_loss = row_loss * self.class_weight.to(row_loss.device, row_loss.dtype)[t_k]
        loss = row_loss.new_zeros(t.shape[0]).masked_scatter(keep, row_loss)  # (N,), 0 at ignored rows
        loss = reduce_loss(loss, keep, self.reduction, mean_count(self.class_weight, t.masked_fill(~keep, 0), keep))
        return loss.reshape(target.shape) if self.reduction == "none" else loss

    def step_buffers(self, rows: int, free: int | None = None) -> dict[str, int]:
        """The candidate logits (:func:`candidate_buffer`, at most min(C, rows·(1 + m)) distinct
        candidates) and the sampler's own buffers (``Sampler.step_buffers``)."""
        k = 1 + self.num_samples
        _, what, nbytes = candidate_buffer(rows, k, self.in_features, min(self.num_classes, rows * k))
        return {what.removeprefix("the sampled head's "): nbytes,
                **self.sampler.step_buffers(rows, self.num_samples, self.num_classes, self.in_features, free)}

    def extra_repr(self) -> str:
        return super().extra_repr() + f", num_samples={self.num_samples}, sampler={type(self.sampler).__name__}"


def seed_samplers(model: torch.nn.Module, seed: int, device: torch.device) -> int:
    """Give the sampler of every :class:`SampledSoftmaxHead` in ``model`` a generator of its own on
    ``device`` seeded with ``seed`` (the run's seed + rank under DDP); returns how many were seeded."""
    heads = [m for m in model.modules() if isinstance(m, SampledSoftmaxHead)]
    for head in heads:
        head.sampler.seed(seed, device)
    return len(heads)


def candidate_logits(hidden: torch.Tensor, weight: torch.Tensor, cand: torch.Tensor) -> torch.Tensor:
    """h_i·w_{cand[i, j]} (n, 1 + m) for hidden (n, d), weight (C, d) and candidate ids (n, 1 + m).

    The weight's gradient reaches the candidates' rows only, on either path (module docstring).
    """
    distinct, position = torch.unique(cand, return_inverse=True)  # (U,), (n, 1 + m)
    (n, k), (U, d) = cand.shape, (distinct.numel(), hidden.shape[1])
    shared, what, nbytes = candidate_buffer(n, k, d, U)
    memory.check_fits(nbytes, hidden.device, what)
    if shared:
        return (hidden @ F.embedding(distinct, weight).T).gather(1, position)  # (n, U) -> (n, 1 + m)
    return torch.bmm(F.embedding(cand, weight), hidden[:, :, None])[..., 0]  # (n, 1 + m, d) x (n, d, 1)


def candidate_buffer(n: int, k: int, d: int, distinct: int) -> tuple[bool, str, int]:
    """The path :func:`candidate_logits` takes for n rows of k = 1 + m candidates, ``distinct`` of them
    distinct, of dimension d: (whether it is the shared GEMM, what its buffer holds, its bytes).

    The GEMM also when its (n, U) logits are fewer values than the gather's (n, 1 + m, d) rows:
    at large m and d (lm1b at paper scale: 8 GiB against 160 GiB).
    """
    if distinct <= SHARED_GEMM_RATIO * k or distinct < k * d:
        return True, f"the sampled head's ({n:,}, {distinct:,}) candidate logits", 4 * n * distinct
    return False, f"the sampled head's ({n:,}, {k:,}, {d:,}) gathered rows", 4 * n * k * d
