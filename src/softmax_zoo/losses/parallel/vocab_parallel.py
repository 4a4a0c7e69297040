"""Vocabulary-parallel losses: the output layer's rows (the classes) split over the ranks of a process group.

Each rank holds rows [start, stop) of the output weight (a :class:`VocabShard`) and the same
hidden states and targets as every other rank of the group (tensor parallelism, as Megatron's
``vocab_parallel_cross_entropy`` and Cut Cross-Entropy's ``VocabParallelOptions``). A rank computes
only its logits z_r = h W_r^T + b_r (N, C_r); the global quantities a variant needs are combined with
torch.distributed's collectives, a few (N,)-sized tensors a call:

    softmax       lse = m + log Σ_r Σ_{j∈r} exp(z_j − m),   m = max_r max_{j∈r} z_j   (all_reduce MAX, SUM)
    stable CE     a = log Σ_r Σ_{j∈r, j≠t} exp(z_j − m) + m − z_t, z_t from its owning rank (all_reduce SUM)
    sparse top-k  Ω_k = the k largest of ∪_r top-k(z_r)          (all_gather of each rank's top-k)
    stable KD     p, Σ p·δ, Σ p·expm1(d), Σ u and KL as sums over the ranks (all_reduce SUM)

Every rank then holds the same loss, and its gradient with respect to its own logits is local:
the variant's :class:`~softmax_zoo.losses.machinery.row_loss.RowLoss` formula on z_r, with the global sums
in place of the local ones. So the plain path (the whole (N, C_r) logits through the row loss's
Function; for a sparse gradient one chunk of all N rows, so the backward is a gather and a scatter of
the members of Ω_k ∪ {t} the rank owns) and the chunked path (``chunked.py``, chunk after chunk of
rows) run the same sharded row loss, and no (N, C) tensor exists on any rank.

Gradient semantics (Megatron's "f" and "g" operators): the loss is replicated, so d loss / d z_r
is what the rank computes; hidden enters through :func:`copy_to_shards` (identity forward,
all_reduce of the gradient backward), so hidden.grad is the full gradient Σ_r G_r W_r on every
rank; a sum of per-rank parts enters through :func:`reduce_from_shards` (all_reduce forward,
identity backward). The weight shard's gradient is G_r^T h, its own rows only.

No call leaves a rank waiting: before its first collective, each call checks its arguments on
every rank and the group agrees in one all_reduce (:func:`agree`: any rank's error, a
disagreement on N, on the loss and its options or on the chunking), so a bad argument, shard (:meth:`VocabShard.check`) or
refused head on one rank raises the same error on every rank. ``chunk_size="auto"`` is sized from
the global C and the least budget of the group's devices, so every rank cuts the same chunks.

Ties at the sparse support's k-th value: among the candidates each rank's ``torch.topk`` offers,
the lowest class ids win (``streaming.topk_lowest_index`` on the gathered (N, P·k) values); the
single-process path leaves them to ``torch.topk``, so the two agree wherever the k-th value is not
tied. Inference (``VocabParallelHead.topk_log_probs``, ``predict``) takes the lowest ids among all
ties, as the single-process heads do.
"""

from __future__ import annotations

import warnings
import zlib
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..machinery._core import (
    check_label_smoothing,
    check_reduction,
    check_target_dtype,
    check_target_range,
    compute_dtype,
    reduce_loss,
)
from ..machinery.chunked import _ChunkedLinearLoss, auto_chunk_size, check_chunk_size, chunked_pass
from ..machinery.memory import chunk_logits
from ..machinery.registry import variant
from ..machinery.row_loss import RowLoss, SparseGrad
from ..machinery.streaming import topk_lowest_index
from ..methods.softmax import SoftmaxHead, SoftmaxRows
from ..methods.sparse import SparseRows
from ..methods.stable import StableRows, _sigmoid


@dataclass(frozen=True)
class VocabShard:
    """This rank's rows [start, stop) of a vocabulary split over ``group`` (None: the default group).

    The shards of the group's ranks must tile [0, C): :meth:`check` verifies it with one all_gather.
    """

    start: int
    stop: int
    group: dist.ProcessGroup | None = None

    @classmethod
    def even(cls, num_classes: int, group: dist.ProcessGroup | None = None) -> VocabShard:
        """Contiguous near-equal shards in rank order (the first C mod P ranks get one class more)."""
        _require_member(group)
        rank, size = dist.get_rank(group), dist.get_world_size(group)
        base, extra = divmod(num_classes, size)
        start = rank * base + min(rank, extra)
        return cls(start, start + base + (rank < extra), group)

    @property
    def size(self) -> int:
        return self.stop - self.start

    def check(self, num_classes: int, error: Exception | None = None) -> list[tuple[int, int]]:
        """Raise ``ValueError`` on every rank unless the group's shards tile [0, ``num_classes``).

        A collective: every rank of the group calls it. Each rank's shard, class count and own
        error are gathered first and judged the same way on every rank, so a bad shard on one rank
        raises the same error on all of them (:func:`raise_first`) instead of leaving the others
        waiting in a collective.

        Args:
            num_classes: C. error: this rank's own failure found before the call (e.g.
                ``VocabParallelHead``'s refusal of its head), raised on every rank like a bad shard.

        Returns:
            Every rank's (start, stop), in group-rank order.
        """
        _require_member(self.group)
        if error is None:
            try:
                span = (int(self.start), int(self.stop), int(num_classes))
                if not 0 <= span[0] < span[1] <= span[2]:
                    raise ValueError
            except (TypeError, ValueError):
                error = ValueError(
                    f"shard [{self.start}, {self.stop}) must be a non-empty range inside [0, {num_classes})"
                )
        every = _all_gather_objects((self.start, self.stop, num_classes, error), self.group)
        raise_first([e[3] for e in every])
        sizes = {int(e[2]) for e in every}
        if len(sizes) > 1:
            raise ValueError(f"the ranks of the group disagree on the number of classes: {sorted(sizes)}")
        spans = [(int(e[0]), int(e[1])) for e in every]
        end = 0
        for start, stop in sorted(spans):
            if start != end:
                raise ValueError(
                    f"the group's shards {spans} do not tile [0, {num_classes}): "
                    f"{'a gap' if start > end else 'an overlap'} at class {min(start, end)}"
                )
            end = stop
        if end != num_classes:
            raise ValueError(f"the group's shards {spans} do not tile [0, {num_classes}): they end at {end}")
        return spans

    def local_target(self, target: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Global ids (N,) -> (local column (N,), 0 where not owned; owned (N,) bool: kept and in this shard)."""
        owned = keep & (target >= self.start) & (target < self.stop)
        return (target - self.start).masked_fill(~owned, 0), owned


def _require_member(group) -> None:
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("vocabulary-parallel losses need torch.distributed initialised (init_process_group)")
    if dist.get_rank(group) < 0:
        raise ValueError(f"this process (global rank {dist.get_rank()}) is not a member of the shard's process group")


def _all_reduce(x: torch.Tensor, group, op=dist.ReduceOp.SUM) -> torch.Tensor:
    dist.all_reduce(x, op=op, group=group)
    return x


def _all_gather(x: torch.Tensor, group) -> list[torch.Tensor]:
    out = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
    dist.all_gather(out, x.contiguous(), group=group)
    return out


def _all_gather_objects(obj, group) -> list:
    """Every rank's picklable ``obj``, in group-rank order (on the current CUDA device under NCCL)."""
    out = [None] * dist.get_world_size(group)
    dist.all_gather_object(out, obj, group=group)
    return out


def raise_first(errors: list[Exception | None]) -> None:
    """Raise, on every rank that calls it with the same gathered ``errors`` (one per group rank, None
    where a rank had none), the error of the lowest rank that has one: its type and message, the
    message prefixed by that rank when the ranks' errors are not all the same."""
    failed = [r for r, e in enumerate(errors) if e is not None]
    if not failed:
        return
    first = errors[failed[0]]
    message = str(first)
    if len(failed) < len(errors) or any(str(errors[r]) != message for r in failed):
        message = f"rank {failed[0]} of the shard's group (ranks {failed} of {len(errors)} failed): {message}"
    try:
        error = type(first)(message)
    except Exception:  # an exception type that takes other arguments
        error = ValueError(f"{type(first).__name__}: {message}")
    raise error


def agree(group, device: torch.device, error: Exception | None = None, *, same: dict[str, int] | None = None,
          least: dict[str, int] | None = None) -> dict[str, int]:
    """The check every rank of ``group`` makes before a call's first collective, in one all_reduce.

    If any rank has an ``error`` (found by its own checks of its arguments) or the ranks disagree on
    a value of ``same`` (e.g. the number of rows, which every collective's shape follows), every
    rank raises the same error (:func:`raise_first`; the ranks' errors are gathered only then), so
    no rank is left waiting in a collective the others never make.

    Args:
        error: this rank's, or None. same: name -> int that must be equal on every rank.
        least: name -> int whose smallest value over the ranks is returned (e.g. a chunk size
            that follows each device's free memory).

    Returns:
        name -> the least value over the ranks, for ``least``.
    """
    same, least = same or {}, least or {}
    values = [int(error is not None)] + list(same.values())
    x = torch.tensor([-values[0], *values[1:], *(-v for v in values[1:]), *least.values()], dtype=torch.long,
                     device=device)
    x = _all_reduce(x, group, dist.ReduceOp.MIN)  # (1 + 2·|same| + |least|,) -any error, min, −max, min
    k = len(same)
    if int(x[0]) < 0:
        raise_first(_all_gather_objects(error, group))
    for i, name in enumerate(same):
        low, high = int(x[1 + i]), -int(x[1 + k + i])
        if low != high:
            raise ValueError(f"the ranks of the group disagree on {name}: from {low} to {high}; it must be the same on every rank")
    return {name: int(v) for name, v in zip(least, x[1 + 2 * k :])}


def global_max(z: torch.Tensor, group) -> torch.Tensor:
    """max_j z_ij over every shard, (N,); rows that are −inf everywhere get 0 (so exp(z − m) is 0, not nan)."""
    m = _all_reduce(z.amax(dim=1), group, dist.ReduceOp.MAX)
    return m.masked_fill(m == float("-inf"), 0.0)


class _CopyToShards(torch.autograd.Function):
    """Identity forward; backward all-reduces (sums) the gradient over the group."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return _all_reduce(grad.contiguous().clone(), ctx.group), None


class _ReduceFromShards(torch.autograd.Function):
    """All-reduce (sum) forward; identity backward (the loss downstream is the same on every rank)."""

    @staticmethod
    def forward(ctx, x, group):
        return _all_reduce(x.clone(), group)

    @staticmethod
    def backward(ctx, grad):
        return grad, None


def copy_to_shards(x: torch.Tensor, group) -> torch.Tensor:
    """``x`` replicated on every rank, used by each rank's shard: its gradient is summed over the group."""
    return _CopyToShards.apply(x, group)


def reduce_from_shards(x: torch.Tensor, group) -> torch.Tensor:
    """Σ_r x_r, the same on every rank; each x_r receives the (replicated) downstream gradient."""
    return _ReduceFromShards.apply(x, group)


class ShardRows:
    """Mixin of the sharded row losses: ``rows`` takes this rank's logits (N, C_r) and global targets.

    Args:
        shard: this rank's :class:`VocabShard`. num_classes: C, the whole vocabulary.
    """

    def __init__(self, shard: VocabShard, num_classes: int, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.shard, self.num_classes = shard, num_classes

    def check_inputs(self, logits, target, ignore_index: int, reduction: str) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's checks of its logits (N, C_r) and global targets (N,): (keep (N,), safe target (N,) long)."""
        check_reduction(reduction)
        check_label_smoothing(self.label_smoothing)
        if logits.dim() != 2 or logits.shape[1] != self.shard.size:
            raise ValueError(
                f"logits must be (N, {self.shard.size}), the shard [{self.shard.start}, {self.shard.stop}), "
                f"got shape {tuple(logits.shape)}"
            )
        if target.dim() != 1 or target.shape[0] != logits.shape[0]:
            raise ValueError(f"target must be (N,) = ({logits.shape[0]},) to match logits, got {tuple(target.shape)}")
        check_target_dtype(target)
        keep = check_target_range(target, self.num_classes, ignore_index)
        return keep, target.long().masked_fill(~keep, 0)

    def on_logits(self, logits, target, *, ignore_index=-100, reduction="mean"):
        """The loss of this rank's logits (N, C_r) and global targets (N,), the same on every rank
        (its inputs checked on this rank only: :func:`vocab_parallel_cross_entropy` agrees on them first)."""
        keep, safe = self.check_inputs(logits, target, ignore_index, reduction)
        return self.reduced(logits, safe, keep, reduction)

    def scratch_rows(self, z, target, keep):
        """The shard's own :meth:`rows`: the variants' in-place ``scratch_rows`` normalise over one rank only."""
        return self.rows(z, target, keep)

    def global_log_softmax(self, z: torch.Tensor) -> torch.Tensor:
        """This rank's columns (N, C_r) of the log-softmax over all C classes, in the compute dtype."""
        z = z.to(compute_dtype(z.dtype))
        m = global_max(z, self.shard.group)
        total = _all_reduce(torch.sub(z, m[:, None]).exp_().sum(dim=1), self.shard.group)
        return z - (total.log() + m)[:, None]


class ShardSoftmaxRows(ShardRows, SoftmaxRows):
    """:class:`~softmax_zoo.losses.methods.softmax.SoftmaxRows` on a shard: one MAX and one SUM all_reduce a call."""

    options = ("label_smoothing",)

    def rows(self, z, target, keep):
        eps, group = self.label_smoothing, self.shard.group
        z = z.to(compute_dtype(z.dtype))  # (N, C_r)
        m = global_max(z, group)  # (N,)
        p = torch.sub(z, m[:, None]).exp_()  # (N, C_r) exp(z − m)
        local_t, owned = self.shard.local_target(target, keep)
        zt = torch.where(owned, z.gather(1, local_t[:, None])[:, 0], 0.0)
        sums = _all_reduce(torch.stack([p.sum(dim=1), zt, z.sum(dim=1) if eps > 0 else zt * 0], dim=1), group)
        total, zt, z_sum = sums.unbind(1)  # (N,) each: Σ_j exp(z_j − m), z_t, Σ_j z_j
        loss = total.log() + m - zt
        if eps > 0:
            loss = loss + eps * (zt - z_sum / self.num_classes)
        return loss.masked_fill(~keep, 0.0), (p, total[:, None], local_t, owned)

    def grad(self, state, target, row_weight, shape, dtype):
        p, total, local_t, owned = state
        eps = self.label_smoothing
        w = row_weight.to(p.dtype).unsqueeze(1)  # (N, 1)
        g = torch.div(p, total).sub_(eps / self.num_classes).mul_(w)  # a new buffer: the plain path's state stays intact
        return g.scatter_add_(1, local_t[:, None], -(1.0 - eps) * w * owned[:, None])

    def log_probs(self, z):
        return self.global_log_softmax(z)


class ShardStableRows(ShardRows, StableRows):
    """:class:`~softmax_zoo.losses.methods.stable.StableRows` on a shard: the non-target sum S is summed over
    the ranks, the target's entry zeroed on its owning rank only."""

    options = ("label_smoothing",)

    def rows(self, z, target, keep):
        eps, group = self.label_smoothing, self.shard.group
        z = z.to(compute_dtype(z.dtype))  # (N, C_r)
        m = global_max(z, group)
        e = torch.sub(z, m[:, None]).exp_()  # (N, C_r)
        local_t, owned = self.shard.local_target(target, keep)
        at_t = local_t[:, None]
        e.scatter_(1, at_t, e.gather(1, at_t) * (~owned)[:, None])  # the target's exp is 0, on its rank
        zt = torch.where(owned, z.gather(1, at_t)[:, 0], 0.0)
        sums = _all_reduce(torch.stack([e.sum(dim=1), zt, z.sum(dim=1) if eps > 0 else zt * 0], dim=1), group)
        total, zt, z_sum = sums.unbind(1)
        a = total.log() + m - zt  # logsumexp_{j≠t}(z_j) − z_t
        loss = F.softplus(a)
        if eps > 0:
            loss = loss + eps * (zt - z_sum / self.num_classes)
        return loss.masked_fill(~keep, 0.0), (e, total, a, local_t, owned)

    def grad(self, state, target, row_weight, shape, dtype):
        e, total, a, local_t, owned = state
        eps, num_classes, w = self.label_smoothing, self.num_classes, row_weight
        sig = _sigmoid(a) * w  # (N,)
        coef = torch.where(total > 0, sig / total, torch.zeros_like(sig))
        grad = torch.mul(e, coef.unsqueeze(1))  # (N, C_r) σ(a)·softmax_{j≠t}, 0 at the target
        if eps > 0:
            grad.sub_((eps / num_classes) * w.unsqueeze(1))
        at_t = local_t[:, None]
        target_grad = (-sig + (eps - eps / num_classes) * w)[:, None]  # (N, 1)
        return grad.scatter_(1, at_t, torch.where(owned[:, None], target_grad, grad.gather(1, at_t)))

    def log_probs(self, z):
        return self.global_log_softmax(z)


class ShardSparseRows(ShardRows, SparseRows):
    """:class:`~softmax_zoo.losses.methods.sparse.SparseRows` (k < C) on a shard: each rank's top-k values and
    class ids are all-gathered, the support Ω_k is the k largest of them, the same on every rank;
    a rank's gradient reaches only its logits inside Ω_k (and the target, on its owning rank)."""

    options = ("k", "label_smoothing", "smoothing_over", "target_in_support")

    def support(self, z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The global top-k of the logits: values (N, k) in the compute dtype and class ids (N, k)."""
        k, shard = self.k, self.shard
        z = z.to(compute_dtype(z.dtype))
        values, index = z.topk(min(k, shard.size), dim=1)  # (N, k_r); no (N, C_r) temporaries but its output
        pad = k - values.shape[1]  # a shard narrower than k pads with −inf at ids past every class
        values = F.pad(values, (0, pad), value=float("-inf"))
        ids = F.pad(index + shard.start, (0, pad), value=self.num_classes)
        values = torch.cat(_all_gather(values, shard.group), dim=1)  # (N, P·k)
        ids = torch.cat(_all_gather(ids, shard.group), dim=1)
        ids, order = ids.sort(dim=1)  # ties then go to the lowest class id
        top, at = topk_lowest_index(values.gather(1, order), k)
        return top, ids.gather(1, at)

    def rows(self, logits, target, keep):
        k, eps, over_all, group = self.k, self.label_smoothing, self.smoothing_over == "all", self.shard.group
        z = logits.to(compute_dtype(logits.dtype))
        values, index = self.support(z)  # (N, k) each, replicated
        lse = values.logsumexp(dim=1)  # (N,)
        local_t, owned = self.shard.local_target(target, keep)
        zt = torch.where(owned, z.gather(1, local_t[:, None])[:, 0], 0.0)
        sums = _all_reduce(torch.stack([zt, z.sum(dim=1) if over_all and eps > 0 else zt * 0], dim=1), group)
        zt, z_sum = sums.unbind(1)
        added = torch.zeros_like(keep)  # (N,) the target joined the support
        if self.target_in_support:
            added = (index != target.unsqueeze(1)).all(dim=1)
            lse = torch.where(added, torch.logaddexp(lse, zt), lse)
        loss = lse - zt
        size = torch.full_like(lse, self.num_classes) if over_all else k + added.to(lse.dtype)  # (N,) |M|
        if eps > 0:
            mean = z_sum / size if over_all else (values.sum(dim=1) + torch.where(added, zt, 0.0)) / size
            loss = loss + eps * (zt - mean)
        return loss.masked_fill(~keep, 0.0), (values, index, lse, zt, added, size, local_t, owned)

    def sparse_grad(self, state, target, row_weight, lse_weight=None):
        """The members of Ω_k ∪ {t} this rank owns, at their local columns (N, k + 1); the others
        point at column 0 with value 0."""
        values, index, lse, zt, added, size, local_t, owned = state
        eps, start = self.label_smoothing, self.shard.start
        w = row_weight.to(lse.dtype)  # (N,)
        on_support = eps / size if self.smoothing_over == "support" else torch.zeros_like(size)
        top = torch.exp(values - lse.unsqueeze(1)).sub_(on_support.unsqueeze(1)).mul_(w.unsqueeze(1))  # (N, k)
        mine = (index >= start) & (index < self.shard.stop)  # (N, k) support entries in this shard
        at_target = -(1.0 - eps) + torch.where(added, torch.exp(zt - lse) - on_support, 0.0)  # (N,)
        cols = torch.cat([(index - start).masked_fill(~mine, 0), local_t[:, None]], dim=1)  # (N, k + 1)
        return SparseGrad(cols, torch.cat([torch.where(mine, top, 0.0), (at_target * w * owned)[:, None]], dim=1))

    def grad(self, state, target, row_weight, shape, dtype):
        grad = torch.zeros(shape, dtype=dtype, device=target.device)
        if self.smooths_all:  # −ε/C on every class
            grad -= (self.label_smoothing / self.num_classes * row_weight.to(state[2].dtype)).to(dtype).unsqueeze(1)
        return self.sparse_grad(state, target, row_weight).dense(grad)

    def log_probs(self, z):
        """This rank's columns (N, C_r) of the sparse log-softmax over the global top-k, −inf elsewhere."""
        z = z.to(compute_dtype(z.dtype))
        values, index = self.support(z)
        lse = values.logsumexp(dim=1, keepdim=True)  # (N, 1)
        mine = (index >= self.shard.start) & (index < self.shard.stop)
        cols = (index - self.shard.start).masked_fill(~mine, 0)
        hits = torch.zeros(z.shape, dtype=torch.int32, device=z.device).scatter_add_(1, cols, mine.int())
        in_support = hits > 0  # (N, C_r); added, not written, since the other ranks' entries point at column 0
        return (z - lse).masked_fill(~in_support, float("-inf"))


#: Each single-process row loss and its sharded form.
SHARDED_ROWS: dict[type, type] = {SoftmaxRows: ShardSoftmaxRows, StableRows: ShardStableRows, SparseRows: ShardSparseRows}


def shard_row_loss(row_loss: RowLoss, shard: VocabShard, num_classes: int) -> ShardRows:
    """The sharded form of ``row_loss`` (same options); ``ValueError`` for a loss or an option without one."""
    cls = SHARDED_ROWS.get(type(row_loss))
    if cls is None:
        raise ValueError(
            f"{type(row_loss).__name__} has no vocabulary-parallel form; sharded: {[c.__name__ for c in SHARDED_ROWS]}"
        )
    options = vars(row_loss)
    unsupported = sorted(k for k in set(options) - set(cls.options) if not _unset(options[k]))
    if unsupported:  # an option of the row loss, set, that its sharded form does not implement
        raise ValueError(f"{type(row_loss).__name__} options {unsupported} have no vocabulary-parallel form yet")
    return cls(shard, num_classes, **{k: options[k] for k in cls.options})


#: The variant name of each single-process row loss with a sharded form (the deprecated ``loss=<RowLoss>`` form's).
ROW_LOSS_VARIANTS: dict[type, str] = {SoftmaxRows: "softmax", StableRows: "stable_softmax", SparseRows: "sparse_softmax"}

#: A head's arguments that are not options of a loss on given logits.
NOT_LOSS_OPTIONS = ("weight", "bias", "chunk_size")


def refuse_loss_options(head: SoftmaxHead, what: str) -> None:
    """Raise ``ValueError`` naming the loss options (``options.py``) set on ``head``: none has a
    vocabulary-parallel form yet. ``what``: the call or head they were given to, for the message."""
    given = head.options.given(head.class_weight)
    if given:
        raise ValueError(
            f"{what} with {', '.join(given)} has no vocabulary-parallel form yet: those options need the "
            "log-normaliser and the prediction across every shard; leave them out"
        )


def variant_rows(loss, num_classes: int, options: dict) -> RowLoss:
    """The row loss of the variant named ``loss`` with its keyword ``options`` (``k=20``,
    ``label_smoothing=0.1``, ...): its head's ``row_loss()``, so that a name and its keywords mean
    here what they mean in the head, ``linear_cross_entropy`` and ``use_head`` (sparse at k = C is
    the softmax; a bad or unknown option is the head's error). The vocabulary-parallel functions'
    one reading of their ``loss`` and keywords.

    Deprecated forms, still run, with a ``DeprecationWarning`` at the caller's call: ``loss=None``
    (the softmax) and a row-loss object, ``loss=SparseRows(k, eps, smoothing_over, target_in_support)``.
    """
    if loss is None or isinstance(loss, RowLoss):
        name = "softmax" if loss is None else ROW_LOSS_VARIANTS.get(type(loss), "<variant name>")
        given = "" if loss is None else "".join(f", {k}={v!r}" for k, v in vars(loss).items())
        old = "loss=None" if loss is None else f"loss={type(loss).__name__}(...)"
        if options:
            raise ValueError(f"{old} takes no keywords {sorted(options)}: pass loss={name!r} with them")
        warnings.warn(
            f"{old} is deprecated: pass the variant's name and its keywords, loss={name!r}{given}, "
            "as linear_cross_entropy and the heads take them", DeprecationWarning, stacklevel=3,
        )
        return SoftmaxRows() if loss is None else loss
    if not isinstance(loss, str):
        raise TypeError(f"loss must be a variant name, one of {sorted(ROW_LOSS_VARIANTS.values())}, got {loss!r}")
    try:
        cls = variant(loss).head
    except KeyError as unknown:
        raise ValueError(unknown.args[0]) from None
    if not issubclass(cls, SoftmaxHead):
        raise ValueError(
            f"loss {loss!r} is not a logit-level variant (a SoftmaxHead); the vocabulary-parallel functions take "
            f"{sorted(ROW_LOSS_VARIANTS.values())}, and a sampled head splits as VocabParallelHead(SampledSoftmaxHead(...), shard)"
        )
    for name in NOT_LOSS_OPTIONS:
        if name in options:
            raise TypeError(f"{name}= is not an option of loss {loss!r} on given logits; the loss options are the head's")
    try:  # the head's own checks of its options; its logits never exist, its weight is a (C, 1) meta tensor
        weight = torch.empty(max(int(num_classes), 0), 1, device="meta")  # num_classes < 2: the head says so
        head = cls(1, num_classes, weight=weight, bias=False, **options)
    except TypeError as bad:  # a keyword the head does not take, or one it needs
        raise TypeError(f"loss={loss!r}: {bad}") from None
    refuse_loss_options(head, f"loss={loss!r}")
    return head.row_loss()


#: How :func:`agree` names the loss the ranks compare (:func:`loss_fingerprint`).
SAME_LOSS = "the loss (a CRC of its row loss's class and options)"


def loss_fingerprint(rows: RowLoss | None) -> int:
    """A CRC of a single-process row loss's class and options, which the ranks compare
    (:func:`agree`, :data:`SAME_LOSS`) so that a variant or an option that differs from rank to
    rank is an error on every rank, not collectives that do not match; 0 for None (a rank whose
    arguments failed, whose error ``agree`` raises first)."""
    if rows is None:
        return 0
    return zlib.crc32(repr((type(rows).__qualname__, sorted(vars(rows).items()))).encode())


def _unset(value) -> bool:
    """Whether an option is off: None, False or 0 (an option the sharded forms do not know is then harmless)."""
    return value is None or (isinstance(value, (bool, int, float)) and not value)


def _num_rows(x: torch.Tensor) -> int:
    """The rows N of a (N, ...) argument, −1 for a scalar (agreed on by the ranks, :func:`agree`)."""
    return x.shape[0] if x.dim() else -1


def vocab_parallel_cross_entropy(
    logits: torch.Tensor,
    target: torch.Tensor,
    shard: VocabShard,
    num_classes: int,
    *,
    loss: str = "softmax",
    ignore_index: int = -100,
    reduction: str = "mean",
    **variant_options,
) -> torch.Tensor:
    """The loss of this rank's logits (N, C_r) of a vocabulary split over ``shard.group``.

    Args:
        logits: (N, stop − start), the columns [start, stop) of the (N, C) logits.
        target: (N,) global class ids, the same on every rank; ``ignore_index`` rows count for nothing.
        shard: this rank's :class:`VocabShard`. num_classes: C.
        loss: the variant's registered name, as in :func:`~softmax_zoo.losses.linear_cross_entropy`:
            "softmax", "stable_softmax" or "sparse_softmax" (a variant whose row loss has a sharded form).
        **variant_options: its head's own arguments, with the head's names: ``label_smoothing``,
            and for "sparse_softmax" ``k``, ``smoothing_over``, ``target_in_support``. The loss
            options (``z_loss``, ``softcap``, ...) are refused by name: they have no sharded form yet.
            (A row-loss object, ``loss=SparseRows(20)``, is deprecated: :func:`variant_rows`.)

    Returns:
        The loss, the same on every rank; gradients flow to this rank's logits.

    Raises:
        ValueError: on every rank of the group, when any rank's arguments are bad (:func:`agree`).
    """
    base, rows, error = None, None, None
    try:
        base = variant_rows(loss, num_classes, variant_options)
        rows = shard_row_loss(base, shard, num_classes)
        keep, safe = rows.check_inputs(logits, target, ignore_index, reduction)
    except (ValueError, TypeError) as bad:
        error = bad
    agree(shard.group, logits.device, error,
          same={"the number of rows N": _num_rows(logits), SAME_LOSS: loss_fingerprint(base)})
    return rows.reduced(logits, safe, keep, reduction)


@dataclass(frozen=True)
class LinearCall:
    """A vocabulary-parallel linear loss call, checked and agreed on by every rank (:func:`linear_call`).

    keep: (N,) bool. target: (N,) long, ignored rows at class 0. chunk_rows: rows per chunk, None
    for the whole (N, C_r) logits at once.
    """

    keep: torch.Tensor
    target: torch.Tensor
    chunk_rows: int | None


def _check_linear(hidden, weight, bias, target, shard: VocabShard, chunk_size, reduction: str) -> None:
    """Raise ``ValueError`` naming this rank's bad argument of a linear call (:func:`linear_call`)."""
    check_chunk_size(chunk_size)
    check_reduction(reduction)
    if hidden.dim() != 2 or weight.dim() != 2 or hidden.shape[1] != weight.shape[1] or weight.shape[0] != shard.size:
        raise ValueError(
            f"hidden must be (N, d) and weight ({shard.size}, d), the shard [{shard.start}, {shard.stop}), "
            f"got {tuple(hidden.shape)} and {tuple(weight.shape)}"
        )
    if bias is not None and tuple(bias.shape) != (shard.size,):
        raise ValueError(f"bias must be ({shard.size},), got shape {tuple(bias.shape)}")
    if target.dim() != 1 or target.shape[0] != hidden.shape[0]:
        raise ValueError(f"target must be (N,) = ({hidden.shape[0]},) to match hidden, got {tuple(target.shape)}")
    check_target_dtype(target)


def linear_call(hidden, weight, bias, target, shard: VocabShard, num_classes: int, *, chunk_size, ignore_index: int,
                reduction: str, error: Exception | None = None, path: int = 0, loss_id: int = 0) -> LinearCall:
    """This rank's checks of a linear call's arguments, then the group's agreement (:func:`agree`):
    any rank's error is raised on every rank, and so is a disagreement on N, on ``path`` (the
    caller's branch, e.g. sampled training or not), on ``loss_id`` (:func:`loss_fingerprint`) or
    on ``chunk_size``.

    ``chunk_size="auto"`` cuts the rows as one process would for all C classes on the device with
    the least budget of the group (``memory.chunk_logits`` of a (C, d) weight, the least over the
    ranks), so every rank cuts the same chunks, whatever its shard's size or its free memory.
    """
    keep = safe = None
    try:
        if error is None:
            _check_linear(hidden, weight, bias, target, shard, chunk_size, reduction)
            keep = check_target_range(target, num_classes, ignore_index)
            safe = target.long().masked_fill(~keep, 0)
    except (ValueError, TypeError) as bad:
        error = bad
    mode = {None: 0, "auto": 2}.get(chunk_size, 1) if error is None else -1
    fixed = chunk_size if mode == 1 else 0
    auto = 0
    if mode == 2:  # this device's rows for all C classes (a (C, d) weight's budget), the least over the ranks
        d = hidden.shape[1]
        auto = auto_chunk_size(hidden.shape[0], num_classes, chunk_logits(hidden.device, num_classes * d))
    agreed = agree(shard.group, hidden.device, error,
                   same={"the number of rows N": _num_rows(hidden), "the call's path": path,
                         SAME_LOSS: loss_id,
                         "chunk_size (0: None, 1: rows, 2: auto)": mode, "chunk_size's rows": fixed},
                   least={"auto": auto})
    return LinearCall(keep, safe, {0: None, 1: fixed, 2: agreed["auto"]}[mode])


def linear_loss(rows: ShardRows, hidden, weight, bias, call: LinearCall, reduction: str) -> torch.Tensor:
    """The loss of an agreed :class:`LinearCall`: hidden (N, d) through :func:`copy_to_shards`, this
    rank's logits whole or ``call.chunk_rows`` rows at a time (``chunked.py``). The plain path of a
    sparse gradient (:attr:`~softmax_zoo.losses.machinery.row_loss.RowLoss.has_sparse_grad`) is one chunk of
    all N rows, so its backward gathers and scatters the shard's members of Ω_k ∪ {t}, no GEMM."""
    h = copy_to_shards(hidden, rows.shard.group)
    t, keep = call.target, call.keep
    chunk_rows = call.chunk_rows
    if chunk_rows is None and rows.has_sparse_grad:
        chunk_rows = max(1, h.shape[0])
    if chunk_rows is None:
        return rows.reduced(F.linear(h, weight, bias), t, keep, reduction)
    params = (h, weight, bias)
    if torch.is_grad_enabled() and any(p is not None and p.requires_grad for p in params):
        return _ChunkedLinearLoss.apply(rows.loss_and_grad, t, keep, reduction, chunk_rows, None, *params)[0]
    return reduce_loss(chunked_pass(rows.loss_and_grad, t, keep, *params, None, chunk_rows)[0], keep, reduction)


def vocab_parallel_linear_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    shard: VocabShard,
    num_classes: int,
    *,
    bias: torch.Tensor | None = None,
    loss: str = "softmax",
    chunk_size="auto",
    ignore_index: int = -100,
    reduction: str = "mean",
    **variant_options,
) -> torch.Tensor:
    """The loss of hidden @ weight.T + bias with the weight's rows split over ``shard.group``.

    Args:
        hidden: (N, d), the same on every rank; its gradient is the full one on every rank.
        weight: (stop − start, d) this rank's rows. bias: (stop − start,) or None.
        target: (N,) global class ids. shard, num_classes, loss, **variant_options: as
            :func:`vocab_parallel_cross_entropy`.
        chunk_size: as :func:`~softmax_zoo.losses.linear_cross_entropy`'s, "auto" by default: rows
            per chunk through ``chunked.py``, "auto" or an int; None: this rank's whole (N, C_r)
            logits at once. "auto" cuts the rows as one process would for all C classes
            (``memory.chunk_logits`` logits a chunk, the least budget of the group's devices), so
            every rank cuts the same chunks and holds 1/P of one process's chunk.

    Returns:
        The loss, the same on every rank ("none": (N,)).

    Raises:
        ValueError: on every rank of the group, when any rank's arguments are bad (:func:`agree`).
    """
    base, rows, error = None, None, None
    try:
        base = variant_rows(loss, num_classes, variant_options)
        rows = shard_row_loss(base, shard, num_classes)
    except (ValueError, TypeError) as bad:
        error = bad
    call = linear_call(hidden, weight, bias, target, shard, num_classes, chunk_size=chunk_size,
                       ignore_index=ignore_index, reduction=reduction, error=error, loss_id=loss_fingerprint(base))
    return linear_loss(rows, hidden, weight, bias, call, reduction)
