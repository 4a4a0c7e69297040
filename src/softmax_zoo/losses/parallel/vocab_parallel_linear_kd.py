"""The memory-lean distillation loss (:mod:`softmax_zoo.losses.methods.linear_kd`) with the classes split over ranks.

Each rank holds rows [start, stop) of the student's output weight (a
:class:`~softmax_zoo.losses.parallel.vocab_parallel.VocabShard`) and the same columns of the teacher's
logits (or the same rows of the teacher's weight); hidden states, targets and a top-K teacher
(global class ids) are the same on every rank. The streamed passes of ``linear_kd`` run over this
rank's classes, and each row statistic is then combined over the ranks: a log-normaliser's running
maximum by one all_reduce MAX and its sums (rescaled to that maximum) by one all_reduce SUM, the
row sums of the later passes (Σ p·expm1(d), Σ a) by one SUM. The gradient pass is local; hidden's
gradient is summed over the ranks (``vocab_parallel.copy_to_shards``), so no rank holds more than
its (rows, C_r) blocks. Identical student and teacher still give an exactly zero gradient.

Rows are cut from the global C (``auto_chunk_size`` at ``_core.CHUNK_LOGITS``), the same on every
rank, since every row chunk makes the same collectives.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from ..machinery._core import CHUNK_LOGITS
from ..machinery.chunked import auto_chunk_size, check_chunk_size
from ..methods.linear_kd import (
    Collectives,
    Spec,
    check_class_chunk_size,
    check_kd_options,
    check_student,
    kept_rows,
    run,
    teacher_rows,
)
from ..parallel.vocab_parallel import VocabShard, _all_reduce, copy_to_shards


class ShardCollectives(Collectives):
    """Row statistics summed / maximised over ``group``'s ranks."""

    def __init__(self, group) -> None:
        self.group = group

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        return _all_reduce(x.contiguous(), self.group)

    def max(self, x: torch.Tensor) -> torch.Tensor:
        return _all_reduce(x.contiguous(), self.group, dist.ReduceOp.MAX)


def vocab_parallel_linear_kd_loss(
    student_hidden: torch.Tensor,
    student_weight: torch.Tensor,
    shard: VocabShard,
    num_classes: int,
    *,
    student_bias: torch.Tensor | None = None,
    teacher_logits: torch.Tensor | None = None,
    teacher_hidden: torch.Tensor | None = None,
    teacher_weight: torch.Tensor | None = None,
    teacher_bias: torch.Tensor | None = None,
    teacher_topk: tuple[torch.Tensor, torch.Tensor] | None = None,
    divergence: str = "forward_kl",
    beta: float = 0.5,
    temperature: float = 1.0,
    target: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    chunk_size: int | str = "auto",
    class_chunk_size: int | None = None,
) -> torch.Tensor:
    """:func:`~softmax_zoo.losses.methods.linear_kd.linear_kd_loss` with the classes split over ``shard.group``.

    Args:
        student_hidden: (..., d), the same on every rank; its gradient is the full one on every rank.
        student_weight: (stop − start, d) this rank's rows. student_bias: (stop − start,) or None.
        shard: this rank's :class:`~softmax_zoo.losses.parallel.vocab_parallel.VocabShard`. num_classes: C.
        teacher_logits: (..., stop − start) this rank's columns; or teacher_hidden (..., d_T), the
            same on every rank, with teacher_weight (stop − start, d_T) and teacher_bias; or
            teacher_topk = (ids (..., K) global class ids, logits (..., K)), the same on every rank.
        divergence, beta, temperature, target, ignore_index, reduction, class_chunk_size: as
            ``linear_kd_loss`` (class chunks within this rank's classes). chunk_size: an int or
            "auto", rows cut from the global C alike on every rank.

    Returns:
        The loss, the same on every rank ("none": (...)).
    """
    lead = tuple(student_hidden.shape[:-1])
    check_student(student_hidden, student_weight, student_bias)
    if student_weight.shape[0] != shard.size:
        raise ValueError(
            f"student_weight must be ({shard.size}, d), the shard [{shard.start}, {shard.stop}), "
            f"got {tuple(student_weight.shape)}"
        )
    check_kd_options(divergence, beta, temperature, reduction, teacher_topk is not None)
    check_chunk_size(chunk_size)
    check_class_chunk_size(class_chunk_size)
    h = student_hidden.reshape(-1, student_hidden.shape[-1])  # (..., d) -> (N, d)
    n = h.shape[0]
    teacher = teacher_rows(n, lead, shard.size, num_classes, h.device, logits=teacher_logits, hidden=teacher_hidden,
                           weight=teacher_weight, bias=teacher_bias, topk=teacher_topk)
    keep = kept_rows(target, lead, ignore_index, num_classes, h.device)
    rows = auto_chunk_size(n, num_classes, CHUNK_LOGITS) if chunk_size == "auto" else chunk_size
    spec = Spec(teacher, keep, reduction, divergence, float(beta), float(temperature), rows, class_chunk_size,
                ShardCollectives(shard.group), offset=shard.start)
    loss = run(spec, copy_to_shards(h, shard.group), student_weight, student_bias)
    return loss.reshape(lead) if reduction == "none" else loss
