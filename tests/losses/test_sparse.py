"""sparse_softmax and sparse_softmax_cross_entropy: gradcheck, references, sparsity, k = C, errors."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import SparseSoftmaxHead, softmax_cross_entropy, sparse_softmax, sparse_softmax_cross_entropy
from softmax_zoo.losses.reference.logits import REDUCTIONS, make_inputs, sparse_cross_entropy_ref, sparse_softmax_ref, value_and_grad


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_gradcheck_float64(reduction, label_smoothing, gen):
    logits, target = make_inputs(8, 7, gen, dtype=torch.float64)
    target[1] = logits[1].argmin()  # a target outside the top-3
    x = logits.requires_grad_(True)
    fn = lambda z: sparse_softmax_cross_entropy(  # noqa: E731
        z, target, 3, reduction=reduction, label_smoothing=label_smoothing
    )
    assert torch.autograd.gradcheck(fn, (x,))


def check_reference(n, c, k, gen, device, **kw):
    """float32 against float64 autograd of topk + gather, on cloned inputs."""
    logits, target = make_inputs(n, c, gen)
    loss, grad = value_and_grad(sparse_softmax_cross_entropy, logits.to(device), target.to(device), k, **kw)
    ref_loss, ref_grad = value_and_grad(sparse_cross_entropy_ref, logits.double(), target, k, **kw)
    assert grad.dtype == torch.float32
    torch.testing.assert_close(loss.cpu().double(), ref_loss, rtol=2e-6, atol=1e-6)
    torch.testing.assert_close(grad.cpu().double(), ref_grad, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_matches_reference(reduction, label_smoothing, gen, device):
    check_reference(3 * 41, 1001, 10, gen, device, reduction=reduction, label_smoothing=label_smoothing)


@pytest.mark.parametrize("k", [1, 20])
def test_matches_reference_odd_shape(k, gen, device):
    """A flattened 3 × 423 × 3001 batch, per-row weights through reduction="none"."""
    check_reference(3 * 423, 3001, k, gen, device, reduction="none", label_smoothing=0.1)


def test_gradient_has_k_plus_one_nonzeros(gen):
    """Target outside the top-k: gradient −1 there, the top-k softmax weights, zeros elsewhere."""
    logits, target = make_inputs(30, 50, gen)
    target[::2] = logits[::2].argmin(dim=1)  # even rows: target surely outside the top-5
    target[1::2] = logits[1::2].argmax(dim=1)  # odd rows: target is the top-1
    _, grad = value_and_grad(sparse_softmax_cross_entropy, logits, target, 5, reduction="sum")
    nonzeros = (grad != 0).sum(dim=1)
    outside = torch.arange(30) % 2 == 0
    assert torch.all(nonzeros[outside & (target != -100)] == 6)
    assert torch.all(nonzeros[~outside & (target != -100)] == 5)
    assert torch.all(nonzeros[target == -100] == 0)
    rows = torch.nonzero(outside & (target != -100)).squeeze(1)
    assert torch.all(grad[rows, target[rows]] == -1)
    torch.testing.assert_close(grad[rows].clamp(min=0), sparse_softmax(logits[rows], 5))


@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
def test_k_equal_num_classes_is_full_softmax(label_smoothing, gen):
    logits, target = make_inputs(20, 9, gen)
    kw = dict(reduction="none", label_smoothing=label_smoothing)
    loss, grad = value_and_grad(sparse_softmax_cross_entropy, logits, target, 9, **kw)
    full_loss, full_grad = value_and_grad(softmax_cross_entropy, logits, target, **kw)
    assert torch.equal(loss, full_loss) and torch.equal(grad, full_grad)
    near_loss, near_grad = value_and_grad(sparse_softmax_cross_entropy, logits.double(), target, 8, **kw)
    assert not torch.allclose(near_loss, full_loss.double())  # k = C − 1 differs: the test can fail


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_low_precision(dtype, gen):
    logits, target = make_inputs(40, 300, gen, dtype=dtype)
    loss, grad = value_and_grad(sparse_softmax_cross_entropy, logits, target, 7, reduction="none")
    ref_loss, ref_grad = value_and_grad(sparse_cross_entropy_ref, logits.double(), target, 7, reduction="none")
    assert loss.dtype == torch.float32 and grad.dtype == dtype
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad.double(), ref_grad.to(dtype).double(), rtol=0, atol=2 * torch.finfo(dtype).eps)


def test_loss_non_negative_when_target_in_top_k(gen):
    """logsumexp over a set that holds z_t is ≥ z_t (outside the top-k the loss is ≥ 0 as well)."""
    logits, target = make_inputs(300, 40, gen, scale=10.0)
    assert (sparse_softmax_cross_entropy(logits, target, 4, reduction="none") >= 0).all()


@pytest.mark.parametrize("k", [1, 3, 17])
def test_sparse_softmax_properties(k, gen):
    logits = torch.randn(5, 17, 6, generator=gen, dtype=torch.float64)
    probs = sparse_softmax(logits, k, dim=1)
    assert torch.all((probs != 0).sum(dim=1) == k)
    torch.testing.assert_close(probs.sum(dim=1), torch.ones(5, 6, dtype=torch.float64))
    torch.testing.assert_close(probs, sparse_softmax_ref(logits, k, dim=1))
    if k == 17:
        torch.testing.assert_close(probs, torch.softmax(logits, dim=1))


def test_sparse_softmax_gradient(gen):
    logits = torch.randn(4, 9, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z: sparse_softmax(z, 3), (logits,))
    r = torch.randn(4, 9, generator=gen, dtype=torch.float64)
    (grad,) = torch.autograd.grad((sparse_softmax(logits, 3) * r).sum(), logits)
    (ref,) = torch.autograd.grad((sparse_softmax_ref(logits, 3) * r).sum(), logits)
    torch.testing.assert_close(grad, ref)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_sparse_softmax_low_precision(dtype, gen):
    # distinct values (0.1 apart) even after rounding, so the top-10 set has no ties
    logits = torch.stack([torch.randperm(100, generator=gen) / 10.0 for _ in range(6)]).to(dtype)
    probs = sparse_softmax(logits, 10)
    assert probs.dtype == dtype and torch.all((probs != 0).sum(dim=1) == 10)
    ref = sparse_softmax_ref(logits.double(), 10)
    torch.testing.assert_close(probs.double(), ref, rtol=0, atol=torch.finfo(dtype).eps)


def test_head_log_probs_minus_inf_outside_top_k(gen):
    torch.manual_seed(0)
    head = SparseSoftmaxHead(8, 30, k=4)
    logp = head.log_probs(torch.randn(2, 5, 8, generator=gen))
    assert logp.shape == (2, 5, 30) and logp.dtype == torch.float32
    assert torch.all(torch.isfinite(logp).sum(dim=-1) == 4)
    torch.testing.assert_close(logp.exp().sum(dim=-1), torch.ones(2, 5))


@pytest.mark.parametrize(
    "k, match",
    [(0, "k must be >= 1, got 0"), (31, "k must be <= the number of classes 30, got 31"), (2.0, "k must be an int")],
)
def test_bad_k(k, match):
    with pytest.raises(ValueError, match=match):
        sparse_softmax_cross_entropy(torch.zeros(2, 30), torch.tensor([0, 1]), k)
    with pytest.raises(ValueError, match=match):
        sparse_softmax(torch.zeros(2, 30), k)
    with pytest.raises(ValueError, match=match):
        SparseSoftmaxHead(8, 30, k=k)


@pytest.mark.parametrize(
    "logits, target, kwargs, match",
    [
        (torch.zeros(3, 4), torch.tensor([0, 4, 1]), {}, "target 4 is outside"),
        (torch.zeros(3, 4), torch.tensor([0, 1]), {}, "target must be"),
        (torch.zeros(4), torch.tensor([0]), {}, "logits must be"),
        (torch.zeros(3, 4), torch.tensor([0, 1, 2]), {"reduction": "avg"}, "'avg'"),
        (torch.zeros(3, 4), torch.tensor([0, 1, 2]), {"label_smoothing": -0.1}, "-0.1"),
    ],
)
def test_bad_input(logits, target, kwargs, match):
    with pytest.raises(ValueError, match=match):
        sparse_softmax_cross_entropy(logits, target, 2, **kwargs)


@pytest.mark.slow
def test_matches_reference_full_vocabulary(gen):
    """3 × 423 × 32000, the size of a language-model batch."""
    check_reference(3 * 423, 32000, 10, gen, "cpu", reduction="mean", label_smoothing=0.1)


def test_non_contiguous_logits(gen):
    logits, target = make_inputs(30, 41, gen, dtype=torch.float64)
    strided = logits.t().contiguous().t()  # same values, strides (1, N)
    loss, grad = value_and_grad(sparse_softmax_cross_entropy, strided, target, 6, reduction="none")
    ref_loss, ref_grad = value_and_grad(sparse_cross_entropy_ref, logits, target, 6, reduction="none")
    torch.testing.assert_close(loss, ref_loss)
    torch.testing.assert_close(grad, ref_grad)
