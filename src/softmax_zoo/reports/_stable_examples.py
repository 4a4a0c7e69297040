"""The fix paper's two FP32 minimal examples and its "mathematically equivalent", computed by the report with torch.

No training and no seed: each row is deterministic (:func:`~._verdicts.deterministic`) and depends only on the torch
version and the CPU's float arithmetic.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ..losses import stable_cross_entropy, stable_kd_loss

COLLAPSE_LOGITS = (18.0, 0.0)  # the paper's first minimal example, target 0
PAPER_COLLAPSE = {"standard": 0.0, "stable": -1.52e-8}  # its printed gradients
KD_TEACHER = (2.0, 1.0, 0.0)  # the paper's second example: student logits = teacher logits
EQUIVALENCE_SCALES = (1.0, 10.0, 30.0, 100.0)  # logit standard deviations: from a soft softmax to a saturated one
EQUIVALENCE_SHAPE = (512, 16)  # rows x classes per scale
EQUIVALENCE_INPUTS_SEED = 0  # the generator of the equivalence check's logits (inputs, not a training seed)
KD_SHAPE = (256, 32)  # rows x classes of the KD equivalence check, per scale and temperature
KD_TEMPERATURES = (1.0, 4.0)
KD_TOLERANCE = 1e-12  # ours: "equivalent" in float64 = every relative loss and absolute gradient error below this
EQUIVALENT_ULPS = 8  # ours: "equivalent" = max abs gradient error within 8 float32 ulps of 1 (|∂L/∂z| <= 1)


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


def examples() -> list[dict[str, Any]]:
    """The claims rows of the two minimal examples and of the equivalence check, as data."""
    c, k, e, kd = collapse_example(), cancellation_example(), equivalence(), kd_equivalence()
    bound = EQUIVALENT_ULPS * torch.finfo(torch.float32).eps
    where = {dtype: f"torch {torch.__version__.split('+')[0]}, CPU, {dtype}" for dtype in ("float32", "float64")}  # what the rows depend on
    return [
        {"id": "stable-example-collapse", "grads": c, "paper": PAPER_COLLAPSE, "where": where["float32"],
         "matches": c["paper standard"] == 0.0 and f"{c['paper stable']:.2e}" == f"{PAPER_COLLAPSE['stable']:.2e}"},
        {"id": "stable-example-cancellation", "grads": k, "where": where["float32"],
         "zero": all(v == 0 for v in k["paper stable"] + k["stable_kd_loss"]), "residual": any(v != 0 for v in k["standard (autograd)"])},
        {"id": "stable-equivalence", "errors": e, "where": where["float32"], "bound": bound, "ulps": EQUIVALENT_ULPS,
         "shape": EQUIVALENCE_SHAPE, "scales": EQUIVALENCE_SCALES, "seed": EQUIVALENCE_INPUTS_SEED,
         "within": e["stable"]["grad abs"] <= bound},
        {"id": "stable-kd-equivalence", "errors": kd, "where": where["float64"], "tolerance": KD_TOLERANCE,
         "shape": KD_SHAPE, "scales": EQUIVALENCE_SCALES, "temperatures": KD_TEMPERATURES, "seed": EQUIVALENCE_INPUTS_SEED,
         "off": [case for case, e in kd.items() if not max(e.values()) <= KD_TOLERANCE]},  # (scale, T) outside the tolerance
    ]
