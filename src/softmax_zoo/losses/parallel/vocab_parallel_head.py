"""A head with its output weight's rows split over the ranks of a process group.

::

    head = SparseSoftmaxHead(d, C, k=20)                        # the same seed on every rank
    head = VocabParallelHead(head, VocabShard.even(C, group))   # keeps rows [start, stop) only
    loss = head(hidden, target)                                 # hidden, target the same on every rank
    pred = head.predict(hidden)                                 # the global argmax, on every rank

The wrapped head keeps its options (k, label smoothing, chunk_size, sampler, ...) and trains only
its shard: :class:`VocabParallelHead` takes the rows [start, stop) of its weight (and bias) as its
own parameters and points the wrapped head at them, so ``head.parameters()`` are this rank's rows.
Building the whole head first and keeping a slice is what makes every rank's shard the slice of
the one-process initialisation.

Every logit-level variant (softmax, stable, sparse, with ``chunk_size`` or not) runs its sharded
row loss (:mod:`softmax_zoo.losses.parallel.vocab_parallel`); the sampled softmax draws its negatives once
over the whole vocabulary (:mod:`softmax_zoo.losses.parallel.vocab_parallel_sampled`) and gathers the
candidates' logits from their owning ranks. The adaptive softmax is refused: its clusters each
have their own projection of another width and its head scores the shortlist together with one
logit per cluster, so no split of one weight's rows applies; it would be parallelised by placing
clusters on ranks, a different scheme.

Inference gives the global answer on every rank: ``predict``, ``class_log_probs`` and
``topk_log_probs`` from each rank's (N, C_r) log-probabilities and a gather of its top-k;
``log_probs`` gathers the whole (..., C) matrix (the interface's), ``shard_log_probs`` returns this
rank's columns only. These hold this rank's whole (N, C_r) logits, whatever ``chunk_size``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ..machinery._core import check_k, check_target_dtype, reduce_loss
from ..machinery.head import OutputHead, check_classes, exclusion_mask
from ..machinery.streaming import topk_lowest_index
from ..methods.sampled import Negatives, SampledSoftmaxHead, candidate_logits
from ..methods.softmax import SoftmaxHead, SoftmaxRows
from ..methods.sparse import SparseRows
from ..parallel.vocab_parallel import (
    VocabShard,
    _all_gather,
    _all_reduce,
    agree,
    copy_to_shards,
    linear_call,
    linear_loss,
    loss_fingerprint,
    reduce_from_shards,
    refuse_loss_options,
    shard_row_loss,
)
from ..parallel.vocab_parallel_sampled import check_sampler, draw_negatives


def _refusal(head) -> Exception | None:
    """Why ``head`` has no vocabulary-parallel form (the error to raise), or None."""
    if not isinstance(head, (SoftmaxHead, SampledSoftmaxHead)):
        return TypeError(
            f"{type(head).__name__} has no vocabulary-parallel form: only heads with one (C, d) output weight "
            "split by rows (softmax, stable, sparse, sampled); the adaptive softmax's clusters have their own "
            "projections of other widths, so it would be split by clusters, not by rows"
        )
    if isinstance(head, SampledSoftmaxHead):
        try:
            check_sampler(head.sampler)
        except TypeError as refused:
            return refused
    try:
        refuse_loss_options(head, type(head).__name__)
    except ValueError as refused:
        return refused
    return None


class VocabParallelHead(OutputHead):
    """``head`` with only the rows [shard.start, shard.stop) of its output weight on this rank.

    Args:
        head: a logit-level head (:class:`SoftmaxHead` or a subclass) or a :class:`SampledSoftmaxHead`,
            built for all C classes, the same on every rank (same seed).
        shard: this rank's :class:`VocabShard`; the group's shards must tile [0, C) (checked here,
            a collective: every rank of the group builds its head together). A bad shard or a
            refused head on any rank raises the same error on every rank.
    """

    def __init__(self, head: OutputHead, shard: VocabShard) -> None:
        # A head refused on one rank is refused on every rank, with the shards' check (one collective).
        spans = shard.check(getattr(head, "num_classes", 0), error=_refusal(head))
        super().__init__(head.in_features, head.num_classes, ignore_index=head.ignore_index, reduction=head.reduction)
        self.spans = spans
        self.shard = shard
        rows = slice(shard.start, shard.stop)
        self.weight = nn.Parameter(head.weight.detach()[rows].clone())  # (C_r, d)
        self.bias = None if head.bias is None else nn.Parameter(head.bias.detach()[rows].clone())
        head.weight, head.bias = self.weight, self.bias  # the wrapped head's options, on this shard
        self.head = head

    @property
    def group(self):
        return self.shard.group

    @property
    def last_negatives(self):
        """A sampled head's last training draws over all C classes, as ``SampledSoftmaxHead.last_negatives``
        (``sampled.Negatives``: global ids, the same on every rank); None for other heads and before a step."""
        return getattr(self.head, "last_negatives", None)

    def forward(self, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """hidden (..., d), target (...) global ids, both the same on every rank -> the loss, the same on every rank.

        Bad arguments on any rank raise the same ``ValueError`` on every rank (``vocab_parallel.agree``)."""
        error, h, t = None, hidden, target
        try:
            self.check_hidden(hidden, self.weight)
            if tuple(target.shape) != tuple(hidden.shape[:-1]):
                raise ValueError(f"target must be {tuple(hidden.shape[:-1])}, hidden's leading shape, got {tuple(target.shape)}")
            check_target_dtype(target)
            h, t = hidden.reshape(-1, self.in_features), target.reshape(-1)  # (N, d), (N,)
        except ValueError as bad:
            error = bad
        sampled = isinstance(self.head, SampledSoftmaxHead) and self.training
        base = rows = None
        if not sampled and error is None:
            try:
                base = self._train_rows()
                rows = shard_row_loss(base, self.shard, self.num_classes)
            except ValueError as bad:
                error = bad
        call = linear_call(h, self.weight, self.bias, t, self.shard, self.num_classes,
                           chunk_size=None if sampled else getattr(self.head, "chunk_size", None),
                           ignore_index=self.ignore_index, reduction=self.reduction, error=error, path=int(sampled),
                           loss_id=loss_fingerprint(base))
        if sampled:
            loss = self._sampled_loss(h, call)
        else:
            loss = linear_loss(rows, h, self.weight, self.bias, call, self.reduction)
        return loss.reshape(target.shape) if self.reduction == "none" else loss

    def _train_rows(self):
        """The wrapped head's row loss now (sparse during ``full_softmax_steps`` is the softmax); the
        sampled head's evaluation loss is the full softmax."""
        return self.head.row_loss() if isinstance(self.head, SoftmaxHead) else SoftmaxRows()

    def _sampled_loss(self, h: torch.Tensor, call) -> torch.Tensor:
        """The sampled softmax of :class:`SampledSoftmaxHead` with the candidates' logits from their ranks."""
        head, shard, keep = self.head, self.shard, call.keep
        h_k, t_k = h[keep], call.target[keep]  # (n, d), (n,)
        head.refresh_sampler()  # from this rank's rows
        with torch.no_grad():
            neg, log_q = draw_negatives(
                head.sampler, h_k.detach(), self.weight.detach(), None if self.bias is None else self.bias.detach(),
                t_k, head.num_samples, shard,
            )  # (n, m) global ids, log q̃
            head.last_negatives = Negatives(neg, log_q, keep)  # the same on every rank
        cand = torch.cat([t_k[:, None], neg], dim=1)  # (n, 1 + m), target first
        mine = (cand >= shard.start) & (cand < shard.stop)
        local = (cand - shard.start).masked_fill(~mine, 0)
        part = candidate_logits(copy_to_shards(h_k, self.group), self.weight, local)  # (n, 1 + m)
        if part.dtype in (torch.float16, torch.bfloat16):
            part = part.float()  # bias, correction and normalisation in float32, as on one process
        if self.bias is not None:
            part = part + self.bias[local]
        logits = reduce_from_shards(torch.where(mine, part, 0.0), self.group)  # each from its owning rank
        correction = log_q.to(logits.dtype) + math.log(head.num_samples)  # ln(m·q̃), never rounded to bfloat16
        logits = torch.cat([logits[:, :1], logits[:, 1:] - correction], dim=1)
        row_loss = torch.logsumexp(logits, dim=1) - logits[:, 0]  # (n,)
        loss = row_loss.new_zeros(keep.shape[0]).masked_scatter(keep, row_loss)  # (N,), 0 at ignored rows
        return reduce_loss(loss, keep, self.reduction)

    # -- inference: the global answer on every rank -------------------------------------------------
    def _inference_rows(self):
        k = getattr(self.head, "support_k", None)
        rows = SoftmaxRows() if k is None else SparseRows(k)
        return shard_row_loss(rows, self.shard, self.num_classes)

    def shard_log_probs(self, hidden: torch.Tensor, check=None) -> torch.Tensor:
        """hidden (..., d) -> (..., C_r): this rank's columns of the head's inference distribution.

        ``check``: the caller's own checks of its other arguments (a callable that raises
        ``ValueError``), run with this one's before the group agrees (``vocab_parallel.agree``), so
        that a bad argument on any rank raises the same error on every rank."""
        error = None
        try:
            self.check_hidden(hidden, self.weight)
            if check is not None:
                check()
        except ValueError as bad:
            error = bad
        agree(self.group, self.weight.device, error, same={"the number of rows N": math.prod(hidden.shape[:-1])})
        z = F.linear(hidden.reshape(-1, self.in_features), self.weight, self.bias)  # (N, C_r)
        return self._inference_rows().log_probs(z).reshape(*hidden.shape[:-1], -1)

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> (..., C), gathered from every rank."""
        part = self.shard_log_probs(hidden).reshape(-1, self.shard.size)  # (N, C_r)
        widest = max(b - a for a, b in self.spans)
        every = _all_gather(F.pad(part, (0, widest - part.shape[1])), self.group)
        out = part.new_empty(part.shape[0], self.num_classes)
        for (start, stop), piece in zip(self.spans, every):
            out[:, start:stop] = piece[:, : stop - start]
        return out.reshape(*hidden.shape[:-1], self.num_classes)

    def _global_topk(self, logp: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's log-probs (N, C_r) -> the k largest over every rank (N, k) and their global
        ids, ties by the lowest id; NaN rows (on any rank) get NaN values."""
        nan = _all_reduce(logp.isnan().any(dim=1).to(torch.uint8), self.group, torch.distributed.ReduceOp.MAX).bool()
        values, cols = topk_lowest_index(logp, min(k, logp.shape[1]))
        pad = k - values.shape[1]
        values = torch.cat(_all_gather(F.pad(values, (0, pad), value=float("-inf")), self.group), dim=1)
        ids = torch.cat(_all_gather(F.pad(cols + self.shard.start, (0, pad), value=self.num_classes), self.group), dim=1)
        ids, order = ids.sort(dim=1)
        top, at = topk_lowest_index(values.gather(1, order), k)
        return top.masked_fill(nan[:, None], float("nan")), ids.gather(1, at)

    def topk_log_probs(self, hidden: torch.Tensor, k: int, exclude=None) -> tuple[torch.Tensor, torch.Tensor]:
        """As :meth:`OutputHead.topk_log_probs`, over every rank's classes."""
        logp = self.shard_log_probs(hidden, check=lambda: (check_k(k, self.num_classes),
                                                           exclusion_mask(exclude, self.num_classes, hidden.device)))
        logp = logp.reshape(-1, self.shard.size)  # (N, C_r)
        mask = exclusion_mask(exclude, self.num_classes, logp.device)
        if mask is not None:
            logp = logp.masked_fill(mask[self.shard.start : self.shard.stop], float("-inf"))
        values, ids = self._global_topk(logp, k)
        shape = (*hidden.shape[:-1], k)
        return values.reshape(shape), ids.reshape(shape)

    def predict(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> (...,) the most probable class over every rank; ``ignore_index`` in NaN rows."""
        values, ids = self._global_topk(self.shard_log_probs(hidden).reshape(-1, self.shard.size), 1)
        return ids[:, 0].masked_fill(values[:, 0].isnan(), self.ignore_index).reshape(hidden.shape[:-1])

    def class_log_probs(self, hidden: torch.Tensor, classes) -> torch.Tensor:
        """hidden (..., d), classes (K,) or (..., K) global ids -> (..., K), each from its owning rank."""
        logp = self.shard_log_probs(hidden, check=lambda: check_classes(classes, hidden.shape[:-1], self.num_classes))
        classes = check_classes(classes, hidden.shape[:-1], self.num_classes).to(hidden.device)  # (..., C_r) logp
        mine = (classes >= self.shard.start) & (classes < self.shard.stop)
        local = (classes - self.shard.start).masked_fill(~mine, 0)
        part = logp[..., local] if classes.dim() == 1 else logp.gather(-1, local)
        return _all_reduce(torch.where(mine, part, 0.0).contiguous(), self.group)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", shard=[{self.shard.start}, {self.shard.stop})"
