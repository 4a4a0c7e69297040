"""chunk_size on every registered logit-level head (SoftmaxHead and its subclasses): equal to the plain heads.

float64 values and gradients (hidden, weight, bias) against the plain head on odd sizes, chunks
that do not divide N, a chunk whose rows are all ignored, every reduction, label smoothing, tied
weight, bias on and off; gradcheck of the Function; the reference formulas; argument errors.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from softmax_zoo.losses import StableSoftmaxHead
from softmax_zoo.losses.machinery import chunked
from softmax_zoo.losses.machinery.chunked import _ChunkedLinearLoss, auto_chunk_size
from softmax_zoo.losses.reference.logits import REDUCTIONS, cross_entropy_ref, sparse_cross_entropy_ref

from .conftest import logit_cases

D, C = 7, 11
VARIANTS = logit_cases(C)  # every registered logit-level variant: softmax, stable_softmax, sparse, sparse-k=C, ...


def make_pair(variant: str, chunk_size, dtype=torch.float64, weight=None, **kw):
    """(plain head, chunked head) with the same parameters."""
    cls, extra = VARIANTS[variant]
    torch.manual_seed(0)
    plain = cls(D, C, weight=weight, **extra, **kw).to(dtype)
    chunk = cls(D, C, weight=plain.weight, chunk_size=chunk_size, **extra, **kw).to(dtype)
    if plain.bias is not None:
        chunk.bias = plain.bias
    return plain, chunk


def make_data(n: int, gen: torch.Generator, dtype=torch.float64):
    """hidden (n, D), target (n,): every 5th row and rows 4-7 (a whole chunk of 4) ignored."""
    hidden = torch.randn(n, D, generator=gen, dtype=dtype) * 2
    target = torch.randint(0, C, (n,), generator=gen)
    target[::5] = -100
    target[4:8] = -100
    return hidden, target


def loss_and_grads(head, hidden, target, row_weight):
    """loss, and the gradients of Σ loss·r w.r.t. hidden and the head's parameters."""
    h = hidden.detach().clone().requires_grad_(True)
    params = list(head.parameters())
    loss = head(h, target)
    r = row_weight if loss.dim() else torch.ones((), dtype=loss.dtype)
    grads = torch.autograd.grad((loss * r).sum(), [h, *params])
    return loss.detach(), grads


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("chunk_size", [1, 4, 5, 26, 100])
def test_equals_plain_head_float64(variant, reduction, label_smoothing, bias, chunk_size, gen):
    hidden, target = make_data(26, gen)
    kw = dict(reduction=reduction, label_smoothing=label_smoothing, bias=bias)
    plain, chunk = make_pair(variant, chunk_size, **kw)
    weights = torch.rand(26, generator=gen, dtype=torch.float64)  # unequal: "none" reruns the pass
    loss, grads = loss_and_grads(chunk, hidden, target, weights)
    ref_loss, ref_grads = loss_and_grads(plain, hidden, target, weights)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-12, atol=1e-12)
    for g, ref in zip(grads, ref_grads):
        torch.testing.assert_close(g, ref, rtol=1e-10, atol=1e-12)
    assert torch.all(grads[0][target == -100] == 0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_none_reduction_uniform_weights_scale_the_saved_gradients(variant, gen, monkeypatch):
    """``loss.sum()`` after "none": the backward only scales, it does not rerun the pass."""
    hidden, target = make_data(13, gen)
    plain, chunk = make_pair(variant, 3, reduction="none", label_smoothing=0.1)
    calls = []
    original = chunked.chunked_pass
    monkeypatch.setattr(chunked, "chunked_pass", lambda *a: calls.append(1) or original(*a))
    loss, grads = loss_and_grads(chunk, hidden, target, torch.full((13,), 2.5, dtype=torch.float64))
    assert len(calls) == 1
    _, ref_grads = loss_and_grads(plain, hidden, target, torch.full((13,), 2.5, dtype=torch.float64))
    for g, ref in zip(grads, ref_grads):
        torch.testing.assert_close(g, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_second_backward_of_a_retained_graph_reruns_the_pass(variant, reduction, gen, monkeypatch):
    """The first backward scales the forward's gradients in place and hands them over; the second reruns the pass."""
    hidden, target = make_data(13, gen)
    plain, chunk = make_pair(variant, 4, reduction=reduction, label_smoothing=0.1)
    h = hidden.clone().requires_grad_(True)
    loss = chunk(h, target).sum()
    first = torch.autograd.grad(loss, [h, chunk.weight, chunk.bias], retain_graph=True)
    calls = []
    original = chunked.chunked_pass
    monkeypatch.setattr(chunked, "chunked_pass", lambda *a: calls.append(1) or original(*a))
    second = torch.autograd.grad(3 * loss, [h, chunk.weight, chunk.bias])
    assert len(calls) == 1
    ref = torch.autograd.grad(plain(h, target).sum(), [h, plain.weight, plain.bias])
    for a, b, r in zip(first, second, ref):
        torch.testing.assert_close(a, r, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(b, 3 * r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_tied_weight(variant, gen):
    embedding = nn.Embedding(C, D).double()
    hidden, target = make_data(17, gen)
    plain, chunk = make_pair(variant, 4, weight=embedding.weight, bias=False, label_smoothing=0.1)
    assert chunk.weight is embedding.weight
    (grad,) = torch.autograd.grad(chunk(hidden, target), embedding.weight)
    (ref,) = torch.autograd.grad(plain(hidden, target), embedding.weight)
    torch.testing.assert_close(grad, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck_float64(variant, reduction, gen):
    """The Function itself: hidden, weight and bias, chunks of 3 over 7 rows, one row ignored."""
    _, head = make_pair(variant, 3, label_smoothing=0.1)
    hidden = torch.randn(7, D, generator=gen, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, C, (7,), generator=gen)
    target[2] = -100
    keep = target != -100
    safe = target.masked_fill(~keep, 0)
    fn = lambda h, w, b: _ChunkedLinearLoss.apply(head.row_loss().loss_and_grad, safe, keep, reduction, 3, None, h, w, b)[0]  # noqa: E731
    weight = head.weight.detach().clone().requires_grad_(True)
    bias = head.bias.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(fn, (hidden, weight, bias))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_matches_reference_formulas(reduction, gen):
    """Against the textbook formulas of softmax_zoo.losses.reference on the float64 logits."""
    hidden, target = make_data(23, gen)
    for variant, ref in (("softmax", cross_entropy_ref), ("stable_softmax", cross_entropy_ref),
                         ("sparse", lambda z, t, **kw: sparse_cross_entropy_ref(z, t, 4, **kw))):
        _, head = make_pair(variant, 6, reduction=reduction, label_smoothing=0.1)
        loss = head(hidden, target)
        logits = hidden @ head.weight.T + head.bias
        expected = ref(logits, target, reduction=reduction, label_smoothing=0.1)
        torch.testing.assert_close(loss, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_float32_close_to_plain(variant, gen):
    hidden, target = make_data(3 * 43, gen, dtype=torch.float32)
    plain, chunk = make_pair(variant, 16, dtype=torch.float32, label_smoothing=0.1)
    hidden = hidden.reshape(3, 43, D)
    target = target.reshape(3, 43)
    loss, grads = loss_and_grads(chunk, hidden, target, None)
    ref_loss, ref_grads = loss_and_grads(plain, hidden, target, None)
    assert loss.dtype == torch.float32 and grads[0].shape == (3, 43, D)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-6)
    for g, ref in zip(grads, ref_grads):
        torch.testing.assert_close(g, ref, rtol=1e-4, atol=1e-6)


def test_autocast_bfloat16_close_to_plain(gen):
    hidden, target = make_data(40, gen, dtype=torch.float32)
    plain, chunk = make_pair("stable_softmax", 7, dtype=torch.float32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, grads = loss_and_grads(chunk, hidden, target, None)
        ref_loss, ref_grads = loss_and_grads(plain, hidden, target, None)
    assert loss.dtype == torch.float32 and grads[1].dtype == torch.float32
    torch.testing.assert_close(loss, ref_loss, rtol=1e-2, atol=1e-2)
    for g, ref in zip(grads, ref_grads):
        torch.testing.assert_close(g, ref, rtol=5e-2, atol=5e-3)


@pytest.mark.parametrize("variant", VARIANTS)
def test_never_more_than_chunk_rows_of_logits(variant, gen, monkeypatch):
    """Every logits tensor the chunked path makes has at most chunk_size rows."""
    rows = []
    linear = chunked.linear_into
    monkeypatch.setattr(chunked, "linear_into", lambda out, h, *a: rows.append((out.shape[0], h.shape[0])) or linear(out, h, *a))
    hidden, target = make_data(30, gen)
    _, head = make_pair(variant, 8, reduction="none")
    hidden.requires_grad_(True)
    (head(hidden, target) * torch.rand(30, dtype=torch.float64)).sum().backward()  # forward and rerun
    assert rows == [(8, 8), (8, 8), (8, 8), (6, 6)] * 2


def test_no_grad_equals_plain(gen):
    hidden, target = make_data(19, gen)
    plain, chunk = make_pair("sparse", 4, reduction="none")
    with torch.no_grad():
        torch.testing.assert_close(chunk(hidden, target), plain(hidden, target), rtol=1e-12, atol=1e-12)


def test_auto_chunk_size(gen):
    assert auto_chunk_size(4096, 32000) == 512  # 524 rows fit 2^24 logits: 8 chunks, split evenly
    assert auto_chunk_size(4100, 32000) == 513 and auto_chunk_size(4192, 32000) == 524
    assert auto_chunk_size(4193, 32000) == 466  # 9 chunks
    assert auto_chunk_size(10, 32000) == 10
    assert auto_chunk_size(10, 2**25) == 1
    hidden, target = make_data(26, gen)
    plain, chunk = make_pair("stable_softmax", "auto", label_smoothing=0.1)
    torch.testing.assert_close(chunk(hidden, target), plain(hidden, target), rtol=1e-12, atol=1e-12)
    assert "chunk_size='auto'" in repr(chunk)


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "big"])
def test_bad_chunk_size(value):
    with pytest.raises(ValueError, match=f'chunk_size must be >= 1 or "auto" or None, got {value!r}'):
        StableSoftmaxHead(D, C, chunk_size=value)


def test_bad_input(gen):
    _, head = make_pair("softmax", 4)
    hidden, target = make_data(10, gen)
    with pytest.raises(ValueError, match=r"target must be \(10,\), hidden's leading shape, got \(9,\)"):
        head(hidden, target[:9])
    with pytest.raises(ValueError, match=f"target {C} is outside"):
        head(hidden, target.masked_fill(target == -100, C))
    with pytest.raises(ValueError, match="hidden has 6 features"):
        head(hidden[:, :6], target)
