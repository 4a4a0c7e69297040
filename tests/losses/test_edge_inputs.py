"""Edge inputs a new user meets, for every logit-level function and every head (``_core``'s rules).

All rows ignored, integer target dtypes other than int64, float16/bfloat16 logits, a float64
model, and a NaN in the hidden states.
"""

from __future__ import annotations

import math

import pytest
import torch

from softmax_zoo.losses import SoftmaxHead, softmax_cross_entropy, sparse_softmax_cross_entropy, stable_cross_entropy
from softmax_zoo.losses.reference.logits import REDUCTIONS

from .conftest import head_cases, logit_cases

D, C = 8, 12
FUNCTIONS = [
    pytest.param(softmax_cross_entropy, id="softmax"),
    pytest.param(stable_cross_entropy, id="stable"),
    pytest.param(lambda z, t, **kw: sparse_softmax_cross_entropy(z, t, 4, **kw), id="sparse"),
    pytest.param(lambda z, t, **kw: sparse_softmax_cross_entropy(z, t, C, **kw), id="sparse-k=C"),
]

# Every registered head, and each logit-level one chunked (chunk_size=2): see make_head.
HEADS = [case for case in head_cases(C)] + [f"{case}-chunked" for case in logit_cases(C)]
INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


def make_head(name: str, **kw):
    """The head of case ``name`` of :data:`HEADS`: a registered example (logit-level ones with
    label_smoothing=0.1), or ``<case>-chunked`` with chunk_size=2."""
    torch.manual_seed(0)
    case = name.removesuffix("-chunked")
    cls, extra = head_cases(C)[case]
    if case != name:
        kw["chunk_size"] = 2
    elif issubclass(cls, SoftmaxHead):
        kw.setdefault("label_smoothing", 0.1)
    return cls(D, C, **extra, **kw)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_all_ignored_function(fn, reduction):
    """Loss: zeros ("none"), 0 ("sum"), nan ("mean", 0/0 as F.cross_entropy); gradient: finite zeros."""
    logits = torch.randn(5, C, dtype=torch.float64, requires_grad=True)
    loss = fn(logits, torch.full((5,), -100), reduction=reduction)
    expected = {"none": torch.zeros(5, dtype=torch.float64), "sum": 0.0, "mean": math.nan}[reduction]
    torch.testing.assert_close(loss, torch.as_tensor(expected, dtype=torch.float64), equal_nan=True)
    loss.sum().backward()
    assert torch.equal(logits.grad, torch.zeros_like(logits))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", HEADS)
def test_all_ignored_head(name, reduction):
    head = make_head(name, reduction=reduction)
    hidden = torch.randn(2, 3, D, requires_grad=True)
    loss = head(hidden, torch.full((2, 3), -100))
    if reduction == "mean":
        assert torch.isnan(loss)
    else:
        assert torch.all(loss == 0)
    loss.sum().backward()
    for tensor in (hidden, *head.parameters()):
        assert tensor.grad is None or torch.equal(tensor.grad, torch.zeros_like(tensor))


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_integer_target_dtypes_function(fn, dtype):
    logits = torch.randn(6, C, dtype=torch.float64)
    target = torch.tensor([0, 3, 11, 5, 7, 2])
    if dtype != torch.uint8:  # -100 does not fit in uint8
        target[1] = -100
    expected = fn(logits, target, reduction="none")
    torch.testing.assert_close(fn(logits, target.to(dtype), reduction="none"), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("name", HEADS)
def test_integer_target_dtypes_head(name, dtype):
    hidden, target = torch.randn(2, 3, D), torch.tensor([[0, 3, 11], [5, 7, 2]])
    head = make_head(name, reduction="none")
    torch.manual_seed(1)  # the sampled head draws the same negatives in both calls
    expected = head(hidden, target)
    torch.manual_seed(1)
    torch.testing.assert_close(head(hidden, target.to(dtype)), expected, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bool])
def test_non_integer_target_names_dtype(dtype):
    with pytest.raises(ValueError, match=f"target must be an integer tensor, got {dtype}"):
        softmax_cross_entropy(torch.zeros(2, C), torch.zeros(2, dtype=dtype))
    with pytest.raises(ValueError, match=f"target must be an integer tensor, got {dtype}"):
        make_head("adaptive")(torch.zeros(2, D), torch.zeros(2, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("fn", FUNCTIONS)
def test_low_precision_loss_is_float32(fn, dtype):
    """One rule: the loss in float32, the gradient in the logits' dtype, close to float64."""
    base = torch.randn(10, C, dtype=torch.float64) * 3
    logits = base.to(dtype).requires_grad_(True)
    target = torch.randint(0, C, (10,))
    loss = fn(logits, target, reduction="sum", label_smoothing=0.1)
    loss.backward()
    assert loss.dtype == torch.float32 and logits.grad.dtype == dtype
    exact = fn(logits.detach().double(), target, reduction="sum", label_smoothing=0.1)
    torch.testing.assert_close(loss.double(), exact, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", HEADS)
def test_float64_model_keeps_float64(name):
    head = make_head(name).double().eval()
    hidden = torch.randn(2, 3, D, dtype=torch.float64)
    logp = head.log_probs(hidden)
    assert logp.dtype == torch.float64 and logp.shape == (2, 3, C)
    assert head(hidden, torch.tensor([[0, 3, 11], [5, 7, 2]])).dtype == torch.float64


@pytest.mark.parametrize("name", HEADS)
def test_nan_hidden_row(name):
    """NaN in, NaN out: the whole row of log_probs; predict gives ignore_index there only."""
    head = make_head(name, ignore_index=-7).eval()
    hidden = torch.randn(2, 3, D)
    hidden[1, 0, 2] = float("nan")
    logp = head.log_probs(hidden)
    assert torch.all(torch.isnan(logp[1, 0]))
    nan_rows = torch.isnan(logp).any(dim=-1)
    assert nan_rows.sum() == 1
    pred = head.predict(hidden)
    assert pred[1, 0] == -7
    assert torch.equal(pred[~nan_rows], logp[~nan_rows].argmax(dim=-1))
