"""stable_cross_entropy: gradcheck, float64 reference, the σ(a) target gradient, low precision, errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from softmax_zoo.losses import stable_cross_entropy
from softmax_zoo.losses.reference.logits import REDUCTIONS, cross_entropy_ref, make_inputs, value_and_grad


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_gradcheck_float64(reduction, label_smoothing, gen):
    logits, target = make_inputs(6, 5, gen, dtype=torch.float64)
    x = logits.requires_grad_(True)
    fn = lambda z: stable_cross_entropy(z, target, reduction=reduction, label_smoothing=label_smoothing)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (x,))


def check_reference(n, c, gen, device, **kw):
    """float32 against float64 autograd of the plain formula, on cloned inputs."""
    logits, target = make_inputs(n, c, gen)
    loss, grad = value_and_grad(stable_cross_entropy, logits.to(device), target.to(device), **kw)
    ref_loss, ref_grad = value_and_grad(cross_entropy_ref, logits.double(), target, **kw)
    assert grad.dtype == torch.float32
    torch.testing.assert_close(loss.cpu().double(), ref_loss, rtol=2e-6, atol=1e-6)
    torch.testing.assert_close(grad.cpu().double(), ref_grad, rtol=1e-4, atol=1e-8)
    assert torch.all(grad.cpu()[target == -100] == 0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_matches_reference(reduction, label_smoothing, gen, device):
    check_reference(3 * 41, 1001, gen, device, reduction=reduction, label_smoothing=label_smoothing)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_matches_reference_odd_shape(label_smoothing, gen, device):
    """A flattened 3 × 423 × 3001 batch, per-row weights through reduction="none"."""
    check_reference(3 * 423, 3001, gen, device, reduction="none", label_smoothing=label_smoothing)


def test_float64_equals_cross_entropy(gen):
    logits, target = make_inputs(50, 257, gen, dtype=torch.float64)
    loss, grad = value_and_grad(stable_cross_entropy, logits, target, reduction="none", label_smoothing=0.3)
    ref_loss, ref_grad = value_and_grad(F.cross_entropy, logits, target, reduction="none", label_smoothing=0.3)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-10, atol=1e-14)


def test_target_gradient_does_not_round_to_zero():
    """Logits [18, 0], target 0: −σ(−18) = −1.52e−8 where the standard path gives exactly 0."""
    logits, target = torch.tensor([[18.0, 0.0]]), torch.tensor([0])
    _, grad = value_and_grad(stable_cross_entropy, logits, target)
    _, standard = value_and_grad(F.cross_entropy, logits, target)
    expected = -torch.sigmoid(torch.tensor(-18.0, dtype=torch.float64)).item()  # -1.523e-8
    assert standard[0, 0] == 0
    assert grad[0, 0].item() == pytest.approx(expected, rel=1e-6)
    assert grad[0, 1].item() == pytest.approx(-expected, rel=1e-6)
    assert stable_cross_entropy(logits, target).item() == pytest.approx(-expected, rel=1e-6)


def test_huge_gap_keeps_tiny_gradient():
    """A gap of 100 gives σ(−100) = 3.7e−44, a float32 subnormal, still nonzero and finite."""
    _, grad = value_and_grad(stable_cross_entropy, torch.tensor([[100.0, 0.0, -5.0]]), torch.tensor([0]))
    assert torch.isfinite(grad).all() and grad[0, 0] < 0 and grad[0, 1] > 0


def test_all_other_logits_minus_inf():
    """Rows whose non-target logits are all −inf: loss 0, gradient 0, no nan (like F.cross_entropy)."""
    logits = torch.tensor([[0.5, float("-inf"), float("-inf")], [1.0, 2.0, float("-inf")]])
    target = torch.tensor([0, 1])
    loss, grad = value_and_grad(stable_cross_entropy, logits, target, reduction="none")
    ref_loss, ref_grad = value_and_grad(F.cross_entropy, logits, target, reduction="none")
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(grad, ref_grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision(dtype, gen):
    """Computed in float32: matches float64 on the same (rounded) logits; gradient in the input dtype."""
    logits, target = make_inputs(40, 300, gen, dtype=dtype)
    loss, grad = value_and_grad(stable_cross_entropy, logits, target, reduction="none")
    ref_loss, ref_grad = value_and_grad(cross_entropy_ref, logits.double(), target, reduction="none")
    assert loss.dtype == torch.float32 and grad.dtype == dtype
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad.double(), ref_grad.to(dtype).double(), rtol=0, atol=2 * torch.finfo(dtype).eps)


def test_loss_non_negative(gen):
    logits, target = make_inputs(200, 50, gen, scale=20.0)
    for eps in (0.0, 0.5, 1.0):
        assert (stable_cross_entropy(logits, target, reduction="none", label_smoothing=eps) >= 0).all()


def test_all_rows_ignored_mean_is_nan_like_torch():
    logits, target = torch.zeros(3, 4), torch.full((3,), -100)
    assert torch.isnan(stable_cross_entropy(logits, target)) and torch.isnan(F.cross_entropy(logits, target))


@pytest.mark.parametrize(
    "logits, target, kwargs, match",
    [
        (torch.zeros(3, 4), torch.tensor([0, 4, 1]), {}, "target 4 is outside"),
        (torch.zeros(3, 4), torch.tensor([0, -1, 1]), {}, "target -1 is outside"),
        (torch.zeros(3, 4), torch.tensor([0, 1]), {}, "target must be"),
        (torch.zeros(3, 4, 2), torch.tensor([0, 1, 2]), {}, "logits must be"),
        (torch.zeros(3, 4), torch.tensor([0, 1, 2]), {"reduction": "avg"}, "'avg'"),
        (torch.zeros(3, 4), torch.tensor([0, 1, 2]), {"label_smoothing": 1.5}, "1.5"),
    ],
)
def test_bad_input(logits, target, kwargs, match):
    with pytest.raises(ValueError, match=match):
        stable_cross_entropy(logits, target, **kwargs)


@pytest.mark.slow
def test_matches_reference_full_vocabulary(gen):
    """3 × 423 × 32000, the size of a language-model batch."""
    check_reference(3 * 423, 32000, gen, "cpu", reduction="mean", label_smoothing=0.1)


def test_non_contiguous_logits(gen):
    """A transposed (C, N) buffer, as when logits come out of a (C, N) matmul."""
    logits, target = make_inputs(30, 41, gen, dtype=torch.float64)
    strided = logits.t().contiguous().t()  # same values, strides (1, N)
    loss, grad = value_and_grad(stable_cross_entropy, strided, target, reduction="none")
    ref_loss, ref_grad = value_and_grad(F.cross_entropy, logits, target, reduction="none")
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(grad, ref_grad)
