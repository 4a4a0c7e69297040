"""Sparse-softmax loss options: smoothing over all classes, the target in the support, a full-softmax start.

Every path: float64 gradcheck, and values and gradients against autograd of the formula
(``reference.sparse_options_ref``), through the function, the head and the chunked head.
"""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import SparseSoftmaxHead, softmax_cross_entropy, sparse_softmax_cross_entropy
from softmax_zoo.losses.reference.logits import (
    REDUCTIONS,
    cross_entropy_ref,
    make_inputs,
    sparse_cross_entropy_ref,
    sparse_options_ref,
    value_and_grad,
)
from softmax_zoo.trainer import TrainingStepToHeads

OPTIONS = [
    {"smoothing_over": "all"},
    {"target_in_support": True},
    {"smoothing_over": "all", "target_in_support": True},
    {"smoothing_over": "support", "target_in_support": False},  # the paper's loss, the defaults
]


def _inputs(gen, dtype=torch.float64, n=12, c=9, k=3):
    logits, target = make_inputs(n, c, gen, dtype=dtype)
    target[1] = logits[1].argmin()  # outside the top-k
    target[2] = logits[2].argmax()  # inside
    return logits, target, k


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_gradcheck_float64(options, reduction, label_smoothing, gen):
    logits, target, k = _inputs(gen)
    fn = lambda z: sparse_softmax_cross_entropy(  # noqa: E731
        z, target, k, reduction=reduction, label_smoothing=label_smoothing, **options
    )
    assert torch.autograd.gradcheck(fn, (logits.requires_grad_(True),))


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_matches_autograd_of_the_formula(options, reduction, label_smoothing, gen):
    logits, target = make_inputs(3 * 41, 301, gen, dtype=torch.float64)
    target[:40:3] = logits[:40:3].argmin(dim=1)  # many targets surely outside the top-k
    kw = dict(reduction=reduction, label_smoothing=label_smoothing, **options)
    loss, grad = value_and_grad(sparse_softmax_cross_entropy, logits, target, 10, **kw)
    ref_loss, ref_grad = value_and_grad(sparse_options_ref, logits, target, 10, **kw)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-12, atol=1e-12)


def test_reference_of_the_options_is_the_papers_loss_at_the_defaults(gen):
    logits, target = make_inputs(50, 40, gen, dtype=torch.float64)
    torch.testing.assert_close(
        sparse_options_ref(logits, target, 5, label_smoothing=0.1), sparse_cross_entropy_ref(logits, target, 5, label_smoothing=0.1)
    )


def test_target_in_support_is_a_proper_nll_and_changes_only_rows_with_the_target_outside(gen):
    logits, target, k = _inputs(gen, n=40, c=20, k=4)
    plain = sparse_softmax_cross_entropy(logits, target, k, reduction="none")
    joined = sparse_softmax_cross_entropy(logits, target, k, reduction="none", target_in_support=True)
    keep = target != -100
    inside = (logits.topk(k, dim=1).indices == target.clamp(min=0).unsqueeze(1)).any(dim=1)
    assert bool((joined[keep] > 0).all())  # −log p_t over Ω_k ∪ {t}, positive for every kept row
    torch.testing.assert_close(joined[keep & inside], plain[keep & inside])
    assert bool((joined[keep & ~inside] > plain[keep & ~inside]).all())  # the normaliser grew by exp(z_t)


@pytest.mark.parametrize("options", OPTIONS)
def test_k_equal_c_is_smoothed_softmax(options, gen):
    logits, target = make_inputs(20, 6, gen, dtype=torch.float64)
    torch.testing.assert_close(
        sparse_softmax_cross_entropy(logits, target, 6, label_smoothing=0.1, **options),
        cross_entropy_ref(logits, target, label_smoothing=0.1),
    )


@pytest.mark.parametrize("options", OPTIONS[:3])
@pytest.mark.parametrize("chunk_size", [None, 5])
def test_head_and_chunked_head_match_the_reference(options, chunk_size, gen):
    torch.manual_seed(0)
    head = SparseSoftmaxHead(8, 30, k=4, label_smoothing=0.1, chunk_size=chunk_size, **options).double()
    hidden = torch.randn(17, 8, dtype=torch.float64, generator=gen, requires_grad=True)
    target = torch.randint(0, 30, (17,), generator=gen)
    target[::5] = -100
    head(hidden, target).backward()
    got = (hidden.grad.clone(), head.weight.grad.clone())
    hidden.grad = None
    head.zero_grad()
    sparse_options_ref(head.logits(hidden), target, 4, label_smoothing=0.1, **options).backward()
    torch.testing.assert_close(got[0], hidden.grad)
    torch.testing.assert_close(got[1], head.weight.grad)


@pytest.mark.parametrize("chunk_size", [None, 5])
def test_full_softmax_steps_train_with_softmax_then_sparse(chunk_size, gen):
    head = SparseSoftmaxHead(8, 30, k=4, label_smoothing=0.1, full_softmax_steps=2, chunk_size=chunk_size).double()
    hidden = torch.randn(11, 8, dtype=torch.float64, generator=gen)
    target = torch.randint(0, 30, (11,), generator=gen)
    logits = head.logits(hidden).detach()
    soft = softmax_cross_entropy(logits, target, label_smoothing=0.1)
    sparse = sparse_softmax_cross_entropy(logits, target, 4, label_smoothing=0.1)
    with pytest.raises(ValueError, match="full_softmax_steps=2 needs head.training_step"):
        head(hidden, target)  # training without a step: refused, not guessed
    callback = TrainingStepToHeads(torch.nn.Sequential(head))
    for step, expected in [(0, soft), (1, soft), (2, sparse), (5, sparse)]:
        callback.on_step_begin(None, type("State", (), {"global_step": step})(), None)
        assert head.training_step == step
        torch.testing.assert_close(head(hidden, target), expected)
    head.training_step = 0
    head.eval()  # evaluation is always the sparse loss
    torch.testing.assert_close(head(hidden, target), sparse)


def test_options_are_checked_and_named():
    with pytest.raises(ValueError, match="smoothing_over must be one of \\('support', 'all'\\), got 'every'"):
        SparseSoftmaxHead(8, 30, k=4, smoothing_over="every")
    with pytest.raises(ValueError, match="full_softmax_steps must be >= 0, got -1"):
        SparseSoftmaxHead(8, 30, k=4, full_softmax_steps=-1)
    with pytest.raises(ValueError, match="smoothing_over must be one of"):
        sparse_softmax_cross_entropy(torch.zeros(2, 5), torch.zeros(2, dtype=torch.long), 2, smoothing_over="x")
