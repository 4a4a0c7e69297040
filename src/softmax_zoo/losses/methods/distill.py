"""Knowledge-distillation losses: the standard KL form next to :func:`stable_kd_loss`.

Hinton et al. 2015: the student matches the teacher's softened distribution,
L = α·T²·KL(softmax(z_T/T) ‖ softmax(z_S/T)) + (1 − α)·CE(z_S, y). Both KL forms below have the same
value and, in exact arithmetic, the same gradient T·(q − p); they differ in rounding
("A Fix for Softmax and Cross-Entropy"): the standard one subtracts two
probabilities, so identical logits still leave a nonzero gradient, the stable one builds it from
the logit differences and gives exactly 0 there.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..methods.stable_kd import stable_kd_loss

KL_FORMS = ("stable", "standard")


def standard_kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, *, temperature: float = 1.0) -> torch.Tensor:
    """T²·KL(p‖q) as usually written: ``kl_div(log_softmax(z_S/T), log_softmax(z_T/T))``, batch mean.

    Computed in the logits' own dtype (bfloat16 logits: bfloat16 arithmetic, as in a model that
    runs its loss under autocast), so that its rounding is the one the standard form has in practice.

    Args:
        student_logits: (N, C). teacher_logits: (N, C), same dtype.
        temperature: T > 0.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    log_q = F.log_softmax(student_logits / temperature, dim=-1)  # (N, C)
    log_p = F.log_softmax(teacher_logits / temperature, dim=-1)
    return F.kl_div(log_q, log_p, log_target=True, reduction="batchmean") * temperature**2


def kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, *, temperature: float, form: str) -> torch.Tensor:
    """T²·KL(p_T‖q_S), mean over the N rows, in the ``form`` "stable" or "standard".

    Args:
        student_logits: (N, C). teacher_logits: (N, C), no gradient is taken through them.
    """
    teacher_logits = teacher_logits.detach()
    if form == "stable":
        return stable_kd_loss(student_logits, teacher_logits, temperature=temperature)
    if form == "standard":
        return standard_kd_loss(student_logits, teacher_logits, temperature=temperature)
    raise ValueError(f"distillation KL form must be one of {KL_FORMS}, got {form!r}")
