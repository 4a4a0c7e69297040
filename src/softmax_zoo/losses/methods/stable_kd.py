"""Stable knowledge-distillation loss: T²·KL(p‖q) with a gradient built from logit differences.

Source: "A Fix for Softmax and Cross-Entropy", the expm1 form of the KD loss. With p = softmax(z_T/T) (teacher),
q = softmax(z_S/T) (student) and δ = (z_S − z_T)/T, per row:

    d = δ − Σ p·δ                         (centred differences)
    s = d − log1p(Σ p·expm1(d))           (= log q − log p, never formed from two log-softmaxes)
    u = p·expm1(s)                        (= q − p)
    dL/dz_S = T·(u − q·Σu)                (Σu ≈ 0 is removed so each row's gradient sums to 0)
    L = T²·Σ p·(expm1(s) − s)             (= T²·KL(p‖q), a sum of non-negative terms)

For identical logits δ = 0, so s = u = 0 and the student gradient is exactly zero, where the
plain softmax(z_S/T) − softmax(z_T/T) leaves rounding noise. A row whose centred differences are so
large that expm1(d) could overflow (:func:`far_apart`) takes log Σ p·e^d as a logsumexp and q − p
from logs instead; such rows are far from identical, so the expm1 form has nothing to keep there.

The teacher receives its true gradient, dL/dz_T = −T·p·(s + KL), when ``teacher_logits`` requires
grad (mutual learning); pass ``teacher_logits.detach()`` for a frozen teacher.

Normalisation: float16/bfloat16 logits are computed in float32 (float64 stays); the gradients
have the logits' dtype.
"""

from __future__ import annotations

import math

import torch

from ..machinery._core import check_reduction, compute_dtype


class _StableKD(torch.autograd.Function):
    """Per-row T²·KL(p‖q) (N,) with the expm1-form gradient.

    The forward computes the gradients of each row-loss (one (N, C) tensor per input that needs
    one, like the log-softmax F.cross_entropy keeps) in place in its few buffers; the backward
    only scales them by the incoming gradient.
    """

    @staticmethod
    def forward(ctx, student, teacher, temperature, zero_sum_correction):
        t = temperature
        dtype = compute_dtype(student.dtype)
        need_s, need_t = ctx.needs_input_grad[:2]
        zs, zt = student.to(dtype), teacher.to(dtype)  # (N, C) each
        p = torch.log_softmax(zt if t == 1 else zt / t, dim=1).exp_()  # teacher probabilities
        d = torch.sub(zs, zt).div_(t)  # δ = (z_S − z_T)/T
        buf = torch.empty_like(d)  # scratch, then T·dL/dz_S
        d.sub_(torch.mul(p, d, out=buf).sum(dim=1, keepdim=True))  # d = δ − Σ p·δ
        far = (d.amax(dim=1) > far_apart(dtype)).nonzero().squeeze(1)  # rows where expm1(d) could overflow
        log_sum = torch.expm1(d, out=buf).mul_(p).sum(dim=1, keepdim=True).log1p_()  # log Σ p·e^d = log1p(Σ p·expm1(d))
        if far.numel():  # those rows in log space: log Σ p·e^d = logsumexp(log p + d), p's logs recomputed
            log_p = torch.log_softmax(zt[far] if t == 1 else zt[far] / t, dim=1)  # (R, C)
            log_sum[far] = torch.logsumexp(log_p + d[far], dim=1, keepdim=True)
        s = d.sub_(log_sum)  # s = log q − log p
        u = torch.expm1(s, out=buf).mul_(p)  # u = q − p
        if far.numel():
            u[far] = torch.exp(log_p + s[far]).sub_(p[far])  # q − p, where p·expm1(s) could overflow
        sum_u = u.sum(dim=1, keepdim=True)  # (N, 1)
        ps = s.mul_(p)  # p·s
        kl = -ps.sum(dim=1, keepdim=True)  # (N, 1) KL(p‖q) = −Σ p·s
        loss = (sum_u + kl).squeeze(1)  # (N,) Σ p·(expm1(s) − s)
        grad_t = torch.addcmul(ps, p, kl).mul_(-t) if need_t else None  # −T·p·(s + KL)
        if need_s and zero_sum_correction:
            grad_s = u.mul_(1.0 - sum_u).sub_(p.mul_(sum_u)).mul_(t)  # T·(u − q·Σu), q = p + u
        else:
            grad_s = u.mul_(t) if need_s else None  # T·u: the rewrite alone
        ctx.save_for_backward(grad_s, grad_t)
        ctx.dtypes = (student.dtype, teacher.dtype)
        return loss * t**2

    @staticmethod
    def backward(ctx, grad_loss):
        return (*scaled_row_grads(ctx, grad_loss), None, None)


def far_apart(dtype: torch.dtype) -> float:
    """The centred difference d above which a row is computed in log space: half of ln(largest float), so that
    Σ p·expm1(d) over any vocabulary stays finite (44 in float32, 354 in float64). Below it s = log q − log p ≤ d,
    so p·expm1(s) is finite too."""
    return 0.5 * math.log(torch.finfo(dtype).max)


def scaled_row_grads(ctx, grad_loss: torch.Tensor) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The backward of a KD Function whose forward saved each row-loss's gradients (grad_s, grad_t)
    and the inputs' dtypes: those gradients times d loss / d row-loss, in the inputs' dtypes."""
    grad_s, grad_t = ctx.saved_tensors
    w = grad_loss.unsqueeze(1)  # (N, 1) d loss / d row-loss
    dtype_s, dtype_t = ctx.dtypes
    out_s = None if grad_s is None else torch.mul(grad_s, w.to(grad_s.dtype)).to(dtype_s)
    out_t = None if grad_t is None else torch.mul(grad_t, w.to(grad_t.dtype)).to(dtype_t)
    return out_s, out_t


def stable_kd_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    *,
    temperature: float = 1.0,
    reduction: str = "mean",
    zero_sum_correction: bool = True,
) -> torch.Tensor:
    """Distillation loss T²·KL(softmax(z_T/T) ‖ softmax(z_S/T)) with the stable gradient.

    Args:
        student_logits: (N, C) student scores z_S.
        teacher_logits: (N, C) teacher scores z_T; gets its true gradient if it requires grad.
        temperature: T > 0.
        reduction: "mean" over the N rows (KL's "batchmean"), "sum", or "none" -> (N,).
        zero_sum_correction: subtract q·Σu from the student gradient (the paper's correction). Σu is 0 in exact
            arithmetic, so False gives the same gradient up to rounding: it is there to measure what the correction
            buys over the expm1 rewrite alone.

    Returns:
        The loss, in float32 for float16/bfloat16 logits; gradients have the logits' dtype.
    """
    check_reduction(reduction)
    if student_logits.dim() != 2:
        raise ValueError(f"student_logits must be (N, C), got shape {tuple(student_logits.shape)}")
    if teacher_logits.shape != student_logits.shape:
        raise ValueError(
            f"teacher_logits {tuple(teacher_logits.shape)} must match student_logits {tuple(student_logits.shape)}"
        )
    if not student_logits.is_floating_point() or teacher_logits.dtype != student_logits.dtype:
        raise ValueError(
            f"logits must share one floating dtype, got student {student_logits.dtype}, teacher {teacher_logits.dtype}"
        )
    if teacher_logits.device != student_logits.device:
        raise ValueError(f"teacher_logits are on {teacher_logits.device} but student_logits on {student_logits.device}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    loss = _StableKD.apply(student_logits, teacher_logits, float(temperature), bool(zero_sum_correction))
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()
