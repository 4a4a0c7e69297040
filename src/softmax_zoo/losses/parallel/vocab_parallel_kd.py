"""The stable distillation loss (:mod:`softmax_zoo.losses.methods.stable_kd`) with teacher and student sharded alike.

Each rank holds the columns [start, stop) of both the student's and the teacher's logits. The
expm1 form needs four row sums, each a sum over the ranks (all_reduce SUM), after one global
maximum of the teacher's logits (all_reduce MAX):

    p = exp(z_T/T − m) / Σ exp(z_T/T − m)      d = δ − Σ p·δ      s = d − log1p(Σ p·expm1(d))
    u = p·expm1(s)                             L = T²·(Σ u − Σ p·s)

and the gradients are then local, as in ``stable_kd.py``: dL/dz_S = T·(u − q·Σu), dL/dz_T =
−T·p·(s + KL). Identical logits still give an exactly zero student gradient. Rows whose centred
differences could overflow expm1 (``stable_kd.far_apart``, decided on the global maximum so every rank
agrees) take log Σ p·e^d as a logsumexp over the shards, as the one-process form does.
"""

from __future__ import annotations

import torch

from ..machinery._core import check_reduction, compute_dtype
from ..methods.stable_kd import far_apart, scaled_row_grads
from ..parallel.vocab_parallel import VocabShard, _all_reduce, agree, global_max


class _ShardStableKD(torch.autograd.Function):
    """Per-row T²·KL(p‖q) (N,) from this rank's columns of the student and teacher logits."""

    @staticmethod
    def forward(ctx, student, teacher, temperature, group, zero_sum_correction=True):
        t = temperature
        dtype = compute_dtype(student.dtype)
        need_s, need_t = ctx.needs_input_grad[:2]
        zs, zt = student.to(dtype), teacher.to(dtype)  # (N, C_r) each
        scaled = zt / t
        m = global_max(scaled, group)[:, None]  # (N, 1)
        p = torch.sub(scaled, m).exp_()
        z = _all_reduce(p.sum(dim=1, keepdim=True), group)  # (N, 1) Σ exp(z_T/T − m) over every shard
        p.div_(z)  # teacher probabilities, this rank's columns
        d = torch.sub(zs, zt).div_(t)  # δ
        d.sub_(_all_reduce(torch.mul(p, d).sum(dim=1, keepdim=True), group))  # d = δ − Σ p·δ
        far = (global_max(d, group) > far_apart(dtype)).nonzero().squeeze(1)  # the same rows on every rank
        log_sum = _all_reduce(torch.expm1(d).mul_(p).sum(dim=1, keepdim=True), group).log1p_()  # log Σ p·e^d
        if far.numel():  # as stable_kd: those rows in log space, log Σ p·e^d a logsumexp over every shard
            log_p = scaled[far].sub_(m[far]).sub_(z[far].log())  # (R, C_r)
            a = log_p + d[far]
            top = global_max(a, group)[:, None]  # (R, 1)
            log_sum[far] = _all_reduce(torch.sub(a, top).exp_().sum(dim=1, keepdim=True), group).log_().add_(top)
        s = d.sub_(log_sum)  # log q − log p
        u = torch.expm1(s).mul_(p)  # q − p
        if far.numel():
            u[far] = torch.exp(log_p + s[far]).sub_(p[far])
        ps = s.mul_(p)
        sums = _all_reduce(torch.cat([u.sum(dim=1, keepdim=True), -ps.sum(dim=1, keepdim=True)], dim=1), group)
        sum_u, kl = sums[:, :1], sums[:, 1:]  # (N, 1) Σ u, KL(p‖q)
        loss = (sum_u + kl).squeeze(1)
        grad_t = torch.addcmul(ps, p, kl).mul_(-t) if need_t else None  # −T·p·(s + KL)
        if need_s and zero_sum_correction:
            grad_s = u.mul_(1.0 - sum_u).sub_(p.mul_(sum_u)).mul_(t)  # T·(u − q·Σu)
        else:
            grad_s = u.mul_(t) if need_s else None  # T·u: the rewrite alone
        ctx.save_for_backward(grad_s, grad_t)
        ctx.dtypes = (student.dtype, teacher.dtype)
        return loss * t**2

    @staticmethod
    def backward(ctx, grad_loss):
        return (*scaled_row_grads(ctx, grad_loss), None, None, None)


def _check_kd(student_logits, teacher_logits, shard: VocabShard, temperature: float, reduction: str) -> None:
    """Raise ``ValueError`` naming this rank's bad argument of :func:`vocab_parallel_stable_kd_loss`."""
    check_reduction(reduction)
    if student_logits.dim() != 2 or student_logits.shape[1] != shard.size:
        raise ValueError(
            f"student_logits must be (N, {shard.size}), the shard [{shard.start}, {shard.stop}), "
            f"got shape {tuple(student_logits.shape)}"
        )
    if teacher_logits.shape != student_logits.shape or teacher_logits.dtype != student_logits.dtype:
        raise ValueError(
            f"teacher_logits {tuple(teacher_logits.shape)} {teacher_logits.dtype} must match student_logits "
            f"{tuple(student_logits.shape)} {student_logits.dtype}"
        )
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")


def vocab_parallel_stable_kd_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    shard: VocabShard,
    *,
    temperature: float = 1.0,
    reduction: str = "mean",
    zero_sum_correction: bool = True,
) -> torch.Tensor:
    """:func:`~softmax_zoo.losses.stable_kd_loss` of logits whose columns are split over ``shard.group``.

    Args:
        student_logits: (N, stop − start) this rank's columns of z_S. teacher_logits: the same
            columns of z_T (its gradient, if it requires one, is this rank's columns').
        shard: this rank's :class:`~softmax_zoo.losses.parallel.vocab_parallel.VocabShard`.
        temperature: T > 0. reduction: "mean" over the N rows, "sum", or "none" -> (N,).
        zero_sum_correction: as :func:`~softmax_zoo.losses.stable_kd_loss`'s (False: the expm1 rewrite alone).

    Returns:
        The loss, the same on every rank.

    Raises:
        ValueError: on every rank of the group, when any rank's arguments are bad (``vocab_parallel.agree``).
    """
    error = None
    try:
        _check_kd(student_logits, teacher_logits, shard, temperature, reduction)
    except ValueError as bad:
        error = bad
    agree(shard.group, student_logits.device, error,
          same={"the number of rows N": student_logits.shape[0] if student_logits.dim() else -1})
    loss = _ShardStableKD.apply(student_logits, teacher_logits, float(temperature), shard.group, bool(zero_sum_correction))
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
