"""How exactly the loss forms compute, on fixed logits (no model, no training, no seed).

"A Fix for Softmax and Cross-Entropy" states two float32 minimal examples and calls its forms
"mathematically equivalent" to the standard ones. Measured here with torch, for the stable page:

- :func:`collapse_example`: the target gradient at logits [18, 0] (target 0), which the standard
  CE rounds to exactly 0 (softmax_t − 1 with softmax_t within 2^-24 of 1);
- :func:`cancellation_example`: the KD student gradient where student = teacher, which should be
  exactly 0;
- :func:`equivalence` and :func:`kd_equivalence`: the largest errors of each form against float64
  references over logits from a soft softmax to a saturated one;
- :func:`near_identical`: the KD student gradient's relative error where student and teacher logits
  are nearly identical, the case the paper says cancels catastrophically.

The results depend only on the torch version and the CPU's float arithmetic.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..losses import stable_cross_entropy, stable_kd_loss

COLLAPSE_LOGITS = (18.0, 0.0)  # the paper's first minimal example, target 0
KD_TEACHER = (2.0, 1.0, 0.0)  # the paper's second example: student logits = teacher logits
EQUIVALENCE_SCALES = (1.0, 10.0, 30.0, 100.0)  # logit standard deviations: from a soft softmax to a saturated one
EQUIVALENCE_SHAPE = (512, 16)  # rows x classes per scale
EQUIVALENCE_INPUTS_SEED = 0  # the generator of the equivalence check's logits (inputs, not a training seed)
KD_SHAPE = (256, 32)  # rows x classes of the KD equivalence check, per scale and temperature
KD_TEMPERATURES = (1.0, 4.0)


def collapse_example() -> dict[str, float]:
    """The target gradient at logits [18, 0] in float32: the paper's two formulas, autograd of F.cross_entropy, ours."""
    z = torch.tensor(COLLAPSE_LOGITS, dtype=torch.float32)
    out = {"paper standard": float(torch.softmax(z, -1)[0] - 1), "paper stable": float(-torch.sigmoid(z[1] - z[0]))}
    for name, loss in (("F.cross_entropy", F.cross_entropy), ("stable_cross_entropy", stable_cross_entropy)):
        x = z[None].clone().requires_grad_()  # (1, 2)
        loss(x, torch.tensor([0])).backward()
        out[name] = float(x.grad[0, 0])
    return out


def cancellation_example() -> dict[str, list[float]]:
    """The student gradient at s = t = [2, 1, 0] in float32: autograd of the standard form, the paper's fix, ours."""
    t = torch.tensor(KD_TEACHER, dtype=torch.float32)
    p = F.softmax(t, dim=-1)
    s = t.clone().requires_grad_()
    standard = torch.autograd.grad(-(p * F.log_softmax(s, dim=-1)).sum(), s)[0]
    d = s.detach() - t
    d = d - (p * d).sum()
    r = d - torch.log1p((p * torch.expm1(d)).sum())  # the paper's s_i
    u = p * torch.expm1(r)
    fixed = u - F.softmax(s.detach(), dim=-1) * u.sum()
    x = t[None].clone().requires_grad_()  # (1, 3)
    stable_kd_loss(x, t[None]).backward()
    return {"standard (autograd)": standard.tolist(), "paper stable": fixed.tolist(), "stable_kd_loss": x.grad[0].tolist()}


def _value_and_grads(loss, *inputs: torch.Tensor, **options: Any) -> tuple[float, list[torch.Tensor]]:
    """``loss(*inputs, **options)`` and its gradient with respect to each floating-point input."""
    xs = [x.clone().requires_grad_() if x.is_floating_point() else x for x in inputs]
    value = loss(*xs, **options)
    value.backward()
    return float(value.detach()), [x.grad for x in xs if x.is_floating_point()]


def equivalence() -> dict[str, dict[str, float]]:
    """Max errors against float64 on the same float32 logits, per form: relative loss, absolute gradient, and relative
    target gradient ∂L/∂z_t (the entry collapse rounds to 0) over the rows where it is a normal float32 (below that
    float32 holds it to no relative precision). References: F.cross_entropy in float64, and for ∂L/∂z_t −Σ_{j≠t} q_j
    in float64 (float64's own q_t − 1 is rounded to multiples of 2^-53, too coarse for the collapsed rows).
    """
    g = torch.Generator().manual_seed(EQUIVALENCE_INPUTS_SEED)
    out = {name: {"loss rel": 0.0, "grad abs": 0.0, "target rel": 0.0} for name in ("standard", "stable")}
    for scale in EQUIVALENCE_SCALES:
        logits = torch.randn(*EQUIVALENCE_SHAPE, generator=g) * scale  # (N, C) float32
        target = torch.randint(0, EQUIVALENCE_SHAPE[1], (EQUIVALENCE_SHAPE[0],), generator=g)
        ref_loss, (ref_grad,) = _value_and_grads(F.cross_entropy, logits.double(), target, reduction="sum")
        ref_t = -torch.softmax(logits.double(), -1).scatter(1, target[:, None], 0.0).sum(1)
        for name, loss in (("standard", F.cross_entropy), ("stable", stable_cross_entropy)):
            value, (grad,) = _value_and_grads(loss, logits, target, reduction="sum")
            grad = grad.double()
            grad_t = grad.gather(1, target[:, None])[:, 0]
            normal = ref_t.abs() >= torch.finfo(torch.float32).tiny
            errors = {"loss rel": abs(value - ref_loss) / abs(ref_loss), "grad abs": float((grad - ref_grad).abs().max()),
                      "target rel": float(((grad_t - ref_t).abs() / ref_t.abs())[normal].max())}
            out[name] = {k: max(out[name][k], v) for k, v in errors.items()}
    return out


def kd_equivalence() -> dict[tuple[float, float], dict[str, float]]:
    """(logit scale, temperature) -> max errors of :func:`stable_kd_loss` against the reference KD on non-identical
    float64 logits drawn independently (N(0, scale²) each, so p and q differ in every row): relative loss, absolute
    student and teacher gradient (inf or nan where the stable form overflows)."""
    g = torch.Generator().manual_seed(EQUIVALENCE_INPUTS_SEED)
    out = {}
    for scale in EQUIVALENCE_SCALES:
        for temperature in KD_TEMPERATURES:
            student, teacher = (torch.randn(*KD_SHAPE, generator=g, dtype=torch.float64) * scale for _ in range(2))  # (N, C)
            (v, (gs, gt)), (rv, (rgs, rgt)) = (_value_and_grads(loss, student, teacher, temperature=temperature)
                                               for loss in (stable_kd_loss, reference_kd))
            out[scale, temperature] = {"loss rel": abs(v - rv) / abs(rv), "student grad abs": float((gs - rgs).abs().max()),
                                       "teacher grad abs": float((gt - rgt).abs().max())}
    return out


def reference_kd(student: torch.Tensor, teacher: torch.Tensor, *, temperature: float) -> torch.Tensor:
    """T²·KL(softmax(z_T/T) ‖ softmax(z_S/T)), mean over rows, by ``F.kl_div`` (autograd for the gradients)."""
    log_q, log_p = F.log_softmax(student / temperature, -1), F.log_softmax(teacher / temperature, -1)
    return temperature**2 * F.kl_div(log_q, log_p, log_target=True, reduction="batchmean")


NEAR_DELTAS = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5)  # student = teacher + δ·ε, ε ~ N(0, 1): from distinct to nearly identical
NEAR_SHAPE = (256, 32)  # rows x classes per δ and dtype
NEAR_DTYPES = ("float32", "bfloat16")


def near_identical() -> dict[str, dict[float, dict[str, float]]]:
    """dtype -> δ -> form -> relative error ‖g − g*‖₂ / ‖g*‖₂ of the student gradient g = q − p where student and
    teacher logits differ by δ·ε (teacher logits N(0, 1), T = 1). g* is the float64 gradient of the same logits as
    rounded to the dtype, so the error is the arithmetic's alone. Forms: "standard" (autograd of the reference KD in
    the dtype), "cast" (the same on the logits cast to float32; bfloat16 only), "stable" (:func:`stable_kd_loss`)."""
    g = torch.Generator().manual_seed(EQUIVALENCE_INPUTS_SEED)
    out: dict[str, dict[float, dict[str, float]]] = {dtype: {} for dtype in NEAR_DTYPES}
    for delta in NEAR_DELTAS:
        teacher = torch.randn(*NEAR_SHAPE, generator=g, dtype=torch.float64)  # (N, C)
        student = teacher + delta * torch.randn(*NEAR_SHAPE, generator=g, dtype=torch.float64)
        for name in NEAR_DTYPES:
            dtype = getattr(torch, name)
            s, t = student.to(dtype), teacher.to(dtype)
            ref = _value_and_grads(reference_kd, s.double(), t.double(), temperature=1.0)[1][0]  # (N, C) student's
            forms = {"standard": (reference_kd, s, t), "stable": (stable_kd_loss, s, t)}
            if name != "float32":
                forms["cast"] = (reference_kd, s.float(), t.float())
            errors = {}
            for form, (loss, a, b) in forms.items():
                grad = _value_and_grads(loss, a, b, temperature=1.0)[1][0].double()
                errors[form] = float((grad - ref).norm() / ref.norm())
            out[name][delta] = errors
    return out
