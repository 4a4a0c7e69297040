"""stable_kd_loss: gradcheck (student and teacher), float64 reference, exact zero, low precision, errors."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import stable_kd_loss
from softmax_zoo.losses.reference.logits import REDUCTIONS, kd_ref


def kd_inputs(n: int, c: int, gen: torch.Generator, dtype=torch.float64):
    """Student and teacher logits (n, c) of similar scale."""
    student = torch.randn(n, c, generator=gen, dtype=torch.float64) * 2
    teacher = torch.randn(n, c, generator=gen, dtype=torch.float64) * 3
    return student.to(dtype), teacher.to(dtype)


def values_and_grads(fn, student, teacher, **kw):
    """Loss and gradients w.r.t. both (cloned) inputs, with unequal row weights for "none"."""
    s = student.detach().clone().requires_grad_(True)
    t = teacher.detach().clone().requires_grad_(True)
    loss = fn(s, t, **kw)
    r = torch.rand(loss.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64) if loss.dim() else 1.0
    (loss * (r.to(loss.dtype) if loss.dim() else r)).sum().backward()
    return loss.detach(), s.grad, t.grad


def rel_err(x: torch.Tensor, ref: torch.Tensor) -> float:
    """‖x − ref‖ / ‖ref‖ in float64."""
    return ((x.double() - ref).norm() / ref.norm()).item()


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("temperature", [1.0, 2.5])
def test_gradcheck_float64(reduction, temperature, gen):
    student, teacher = kd_inputs(5, 6, gen)
    inputs = (student.requires_grad_(True), teacher.requires_grad_(True))
    fn = lambda s, t: stable_kd_loss(s, t, temperature=temperature, reduction=reduction)  # noqa: E731
    assert torch.autograd.gradcheck(fn, inputs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("temperature", [1.0, 4.0])
def test_matches_float64_reference(reduction, temperature, gen, device):
    """float32 values and both gradients within 1e-6 (relative) of float64 autograd of T²·KL."""
    student, teacher = kd_inputs(3 * 41, 1001, gen)
    kw = dict(temperature=temperature, reduction=reduction)
    loss, gs, gt = values_and_grads(stable_kd_loss, student.float().to(device), teacher.float().to(device), **kw)
    # The reference sees exactly the float32 logits, so only the computation's error is measured.
    ref_loss, ref_gs, ref_gt = values_and_grads(kd_ref, student.float().double(), teacher.float().double(), **kw)
    assert gs.dtype == gt.dtype == torch.float32
    assert rel_err(loss.cpu(), ref_loss) < 1e-6
    assert rel_err(gs.cpu(), ref_gs) < 1e-6
    assert rel_err(gt.cpu(), ref_gt) < 1e-6


def test_matches_float64_reference_odd_shape(gen):
    """A flattened 3 × 423 × 3001 batch."""
    student, teacher = kd_inputs(3 * 423, 3001, gen, dtype=torch.float32)
    kw = dict(temperature=2.0, reduction="none")
    ref_loss, ref_gs, ref_gt = values_and_grads(kd_ref, student.double(), teacher.double(), **kw)
    loss, gs, gt = values_and_grads(stable_kd_loss, student, teacher, **kw)
    assert max(rel_err(loss, ref_loss), rel_err(gs, ref_gs), rel_err(gt, ref_gt)) < 1e-6


def test_float64_equals_reference(gen):
    student, teacher = kd_inputs(30, 77, gen)
    got = values_and_grads(stable_kd_loss, student, teacher, temperature=3.0, reduction="none")
    want = values_and_grads(kd_ref, student, teacher, temperature=3.0, reduction="none")
    for x, ref in zip(got, want):
        torch.testing.assert_close(x, ref, rtol=1e-10, atol=1e-13)


def far_apart_inputs(gen: torch.Generator, scale: float, dtype=torch.float64):
    """Logits (6, 50) drawn apart at ``scale``, every other row scaled down to ordinary sizes (one batch, both paths)."""
    student, teacher = (torch.randn(6, 50, generator=gen, dtype=torch.float64) * scale for _ in range(2))
    student[::2] /= scale
    teacher[::2] /= scale
    return student.to(dtype), teacher.to(dtype)


@pytest.mark.parametrize("dtype, scale", [(torch.float64, 100.0), (torch.float32, 30.0)])
def test_far_apart_logits_match_the_reference(dtype, scale, gen):
    """Centred differences beyond ln(largest float) (about 800 in float64, 260 in float32 here), where expm1(d)
    overflows: those rows are computed in log space, the loss and both gradients still match float64 KL."""
    student, teacher = far_apart_inputs(gen, scale, dtype)
    kw = dict(temperature=1.0, reduction="none")
    got = values_and_grads(stable_kd_loss, student, teacher, **kw)
    want = values_and_grads(kd_ref, student.double(), teacher.double(), **kw)
    assert all(torch.isfinite(x).all() for x in got)
    # float32: s and KL reach hundreds of nats here, and the teacher's gradient −T·p·(s + KL) is their difference
    assert max(rel_err(x, ref) for x, ref in zip(got, want)) < (1e-12 if dtype == torch.float64 else 1e-5)


def test_gradcheck_far_apart(gen):
    student, teacher = far_apart_inputs(gen, 100.0)
    inputs = (student.requires_grad_(True), teacher.requires_grad_(True))
    assert torch.autograd.gradcheck(lambda s, t: stable_kd_loss(s, t, reduction="none"), inputs)


@pytest.mark.parametrize("temperature", [0.5, 1.0, 3.0])
def test_identical_logits_give_exactly_zero(temperature, gen):
    """δ = 0: zero loss and exactly zero gradients in float32, where softmax(z)−softmax(z) is noisy."""
    logits = torch.randn(64, 500, generator=gen) * 5
    loss, gs, gt = values_and_grads(stable_kd_loss, logits, logits, temperature=temperature)
    assert loss.item() == 0 and torch.all(gs == 0) and torch.all(gt == 0)
    _, ref_gs, _ = values_and_grads(kd_ref, logits, logits, temperature=temperature)
    assert ref_gs.abs().max() > 0  # the plain path's rounding noise: this test can fail


def test_near_identical_logits(gen):
    """Differences of 1e-4: gradients still within 1e-6 in float32 (the plain float32 path: ~1e-3)."""
    teacher = torch.randn(32, 400, generator=gen) * 3
    student = teacher + torch.randn(32, 400, generator=gen) * 1e-4
    ref = values_and_grads(kd_ref, student.double(), teacher.double(), temperature=2.0)
    loss, gs, gt = values_and_grads(stable_kd_loss, student, teacher, temperature=2.0)
    _, plain_gs, _ = values_and_grads(kd_ref, student, teacher, temperature=2.0)
    assert rel_err(gs, ref[1]) < 1e-6 and rel_err(gt, ref[2]) < 1e-6
    assert rel_err(loss, ref[0]) < 1e-3  # a KL of ~1e-8: relative accuracy of the value is lower
    assert rel_err(plain_gs, ref[1]) > 1e-5


def test_detached_teacher_gets_no_gradient(gen):
    student, teacher = kd_inputs(4, 10, gen, dtype=torch.float32)
    s = student.requires_grad_(True)
    stable_kd_loss(s, teacher).backward()
    assert s.grad is not None and teacher.grad is None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision(dtype, gen):
    student, teacher = kd_inputs(40, 300, gen, dtype=dtype)
    loss, gs, gt = values_and_grads(stable_kd_loss, student, teacher, reduction="none")
    ref_loss, ref_gs, _ = values_and_grads(kd_ref, student.double(), teacher.double(), reduction="none")
    assert loss.dtype == torch.float32 and gs.dtype == gt.dtype == dtype
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gs.double(), ref_gs.to(dtype).double(), rtol=0, atol=2 * torch.finfo(dtype).eps)


def test_loss_non_negative(gen):
    student, teacher = kd_inputs(100, 30, gen, dtype=torch.float32)
    assert (stable_kd_loss(student * 10, teacher, reduction="none") >= 0).all()


@pytest.mark.parametrize(
    "student, teacher, kwargs, match",
    [
        (torch.zeros(3, 4), torch.zeros(3, 5), {}, r"teacher_logits \(3, 5\) must match"),
        (torch.zeros(3), torch.zeros(3), {}, "student_logits must be"),
        (torch.zeros(3, 4), torch.zeros(3, 4, dtype=torch.float64), {}, "float64"),
        (torch.zeros(3, 4), torch.zeros(3, 4), {"temperature": 0.0}, "temperature must be > 0, got 0.0"),
        (torch.zeros(3, 4), torch.zeros(3, 4), {"reduction": "batchmean"}, "'batchmean'"),
    ],
)
def test_bad_input(student, teacher, kwargs, match):
    with pytest.raises(ValueError, match=match):
        stable_kd_loss(student, teacher, **kwargs)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_without_the_zero_sum_correction_gradcheck_float64(reduction, gen):
    """Σu is 0 in exact arithmetic, so the rewrite alone is the same gradient: gradcheck and the reference agree."""
    student, teacher = kd_inputs(5, 6, gen)
    inputs = (student.requires_grad_(True), teacher.requires_grad_(True))
    fn = lambda s, t: stable_kd_loss(s, t, temperature=2.0, reduction=reduction, zero_sum_correction=False)  # noqa: E731
    assert torch.autograd.gradcheck(fn, inputs)
    ours = values_and_grads(stable_kd_loss, student, teacher, temperature=2.0, reduction=reduction, zero_sum_correction=False)
    ref = values_and_grads(kd_ref, student, teacher, temperature=2.0, reduction=reduction)
    for a, b in zip(ours, ref):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_the_zero_sum_correction_shrinks_the_row_sums_in_float32(gen):
    """Rows of the corrected float32 gradient sum closer to 0 than the rewrite alone's (the correction's purpose)."""
    teacher = torch.randn(64, 2000, generator=gen) * 3
    student = teacher + torch.randn(64, 2000, generator=gen)
    violation = {}
    for correction in (True, False):
        _, gs, _ = values_and_grads(stable_kd_loss, student, teacher, reduction="sum", zero_sum_correction=correction)
        violation[correction] = gs.double().sum(1).abs().mean().item()
    assert violation[True] < violation[False]
