"""Materialised distillation divergences: the (N, C) logits of student and teacher whole, autograd of the formulas.

:func:`divergence_ref` is what :func:`softmax_zoo.losses.methods.linear_kd.linear_kd_loss` is checked against;
:func:`materialised_kd` is the library's whole-matrix KD (``F.linear`` + ``stable_kd_loss``) it is benchmarked beside.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..methods.stable_kd import stable_kd_loss


def divergence_ref(student_logits, teacher_log_p, *, divergence="forward_kl", beta=0.5, temperature=1.0,
                   keep=None, reduction="mean"):
    """T²·D per row of softmax(z_S/T) and the teacher's log-probabilities (N, C) (−inf where p = 0), reduced.

    forward_kl: Σ p·(log p − log q); reverse_kl: Σ q·(log q − log p); jsd: β·KL(p‖M) + (1 − β)·KL(q‖M),
    M = β·p + (1 − β)·q (β = 0: forward_kl, β = 1: reverse_kl, as Liger-Kernel). ``keep`` (N,) bool: the
    rows that count ("mean" over them).
    """
    log_q = torch.log_softmax(student_logits / temperature, dim=1)
    log_p = teacher_log_p
    p, q = log_p.exp(), log_q.exp()
    if divergence == "jsd" and beta == 0:
        divergence = "forward_kl"
    if divergence == "jsd" and beta == 1:
        divergence = "reverse_kl"
    if divergence == "forward_kl":
        rows = torch.where(p > 0, p * (log_p - log_q), 0.0).sum(dim=1)
    elif divergence == "reverse_kl":
        rows = (q * (log_q - log_p)).sum(dim=1)
    else:
        log_m = torch.log(beta * p + (1 - beta) * q)
        rows = beta * torch.where(p > 0, p * (log_p - log_m), 0.0).sum(dim=1) + (1 - beta) * (q * (log_q - log_m)).sum(dim=1)
    rows = rows * temperature**2
    keep = torch.ones_like(rows, dtype=torch.bool) if keep is None else keep
    rows = torch.where(keep, rows, 0.0)
    if reduction == "none":
        return rows
    return rows.sum() if reduction == "sum" else rows.sum() / keep.sum()


def teacher_log_probs(teacher_logits=None, topk=None, num_classes=None, *, temperature=1.0):
    """log softmax(z_T/T) (N, C), or of a top-K teacher (ids (N, K), logits (N, K)): −inf outside its K ids."""
    if teacher_logits is not None:
        return torch.log_softmax(teacher_logits / temperature, dim=1)
    ids, values = topk
    out = values.new_full((ids.shape[0], num_classes), float("-inf"))
    return out.scatter(1, ids, torch.log_softmax(values / temperature, dim=1))


def materialised_kd(student_hidden, student_weight, teacher_hidden, teacher_weight, *, temperature=1.0):
    """The whole-matrix KD: both (N, C) logits, then ``stable_kd_loss`` (forward KL, mean over rows)."""
    with torch.no_grad():
        teacher = F.linear(teacher_hidden, teacher_weight)  # (N, C)
    return stable_kd_loss(F.linear(student_hidden, student_weight), teacher, temperature=temperature)
