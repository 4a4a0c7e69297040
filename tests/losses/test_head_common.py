"""The head interface shared by every registered logit-level head (SoftmaxHead and its subclasses)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from .conftest import logit_cases

D, C = 16, 40
# (head class, its example constructor arguments) of every registered logit-level variant
HEADS = [pytest.param(cls, extra, id=case) for case, (cls, extra) in logit_cases(C).items()]


@pytest.fixture
def data(gen):
    """hidden (2, 7, D), target (2, 7) with two ignored positions."""
    hidden = torch.randn(2, 7, D, generator=gen)
    target = torch.randint(0, C, (2, 7), generator=gen)
    target[0, :2] = -100
    return hidden, target


@pytest.mark.parametrize("cls, extra", HEADS)
def test_loss_equals_its_row_loss_on_logits(cls, extra, data):
    """The head is its variant's loss on hidden @ W^T + b (each variant's test file checks that
    loss against its public function and a reference)."""
    torch.manual_seed(0)
    head = cls(D, C, label_smoothing=0.1, **extra)
    hidden, target = data
    loss = head(hidden, target)
    logits = hidden.reshape(-1, D) @ head.weight.T + head.bias  # (14, C)
    assert loss.dim() == 0
    torch.testing.assert_close(loss, head.row_loss().on_logits(logits, target.reshape(-1)))


@pytest.mark.parametrize("cls, extra", HEADS)
def test_shapes(cls, extra, data):
    hidden, target = data
    head = cls(D, C, reduction="none", **extra)
    loss = head(hidden, target)
    assert loss.shape == (2, 7) and torch.all(loss[0, :2] == 0)
    assert head(hidden[0], target[0]).shape == (7,)
    logp = head.log_probs(hidden)
    assert logp.shape == (2, 7, C) and logp.dtype == torch.float32
    torch.testing.assert_close(logp.exp().sum(dim=-1), torch.ones(2, 7))
    assert torch.equal(head.predict(hidden), logp.argmax(dim=-1))


@pytest.mark.parametrize("cls, extra", HEADS)
def test_tied_weight_is_shared_and_trained(cls, extra, data):
    embedding = nn.Embedding(C, D)
    head = cls(D, C, weight=embedding.weight, bias=False, **extra)
    assert head.weight is embedding.weight
    assert [p for p in head.parameters()] == [embedding.weight]
    hidden, target = data
    head(hidden, target).backward()
    assert embedding.weight.grad is not None and embedding.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("cls, extra", HEADS)
def test_gradient_reaches_hidden(cls, extra, data):
    hidden, target = data
    hidden.requires_grad_(True)
    cls(D, C, **extra)(hidden, target).backward()
    assert hidden.grad.shape == hidden.shape and hidden.grad.abs().sum() > 0
    assert torch.all(hidden.grad[0, :2] == 0)  # ignored positions


@pytest.mark.parametrize("cls, extra", HEADS)
def test_bad_input(cls, extra, data):
    hidden, target = data
    head = cls(D, C, **extra)
    with pytest.raises(ValueError, match="hidden has 15 features but the head expects 16"):
        head(hidden[..., :15], target)
    with pytest.raises(ValueError, match="float64"):
        head(hidden.double(), target)
    with pytest.raises(ValueError, match=f"target {C} is outside"):
        head(hidden, target.masked_fill(target == target[1, 0], C))
    with pytest.raises(ValueError, match="target must be"):
        head(hidden, target[:, :5])
    with pytest.raises(ValueError, match=r"\(40, 16\), got \(40, 15\)"):
        cls(D, C, weight=nn.Parameter(torch.zeros(C, 15)), **extra)
    with pytest.raises(ValueError, match="'avg'"):
        cls(D, C, reduction="avg", **extra)
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        cls(D, C, label_smoothing=2.0, **extra)


@pytest.mark.parametrize("cls, extra", HEADS)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_gradcheck_float64(cls, extra, reduction, gen):
    """The plain path's backward (its RowLoss.grad, or F.cross_entropy's) against finite
    differences, w.r.t. the hidden states and the logits, one row ignored."""
    torch.manual_seed(0)
    head = cls(D, C, label_smoothing=0.1, reduction=reduction, **extra).double()
    hidden = torch.randn(5, D, generator=gen, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, C, (5,), generator=gen)
    target[1] = -100
    assert torch.autograd.gradcheck(lambda h: head(h, target), (hidden,))
    logits = (torch.randn(5, C, generator=gen, dtype=torch.float64) * 3).requires_grad_(True)
    on_logits = lambda z: head.row_loss().on_logits(z, target, reduction=reduction)  # noqa: E731
    assert torch.autograd.gradcheck(on_logits, (logits,))



def _head(cls, extra, eps):
    """The float64 head of seed 0 with label smoothing ``eps`` (reduction "none")."""
    torch.manual_seed(0)
    return cls(D, C, reduction="none", label_smoothing=eps, **extra).double()


def _inputs(cls, extra, gen):
    """hidden (12, D) and targets, every other one the most probable class (inside any top-k support)."""
    hidden = torch.randn(12, D, generator=gen, dtype=torch.float64) * 3
    target = torch.randint(0, C, (12,), generator=gen)
    target[::2] = _head(cls, extra, 0.0).log_probs(hidden[::2]).argmax(dim=1)
    return hidden, target


@pytest.mark.parametrize("cls, extra", HEADS)
def test_loss_is_the_cross_entropy_of_log_probs(cls, extra, gen):
    """At ε = 0 each row's loss is −log p_t of the head's own log_probs wherever p_t > 0: a variant's
    evaluation (log_probs, predict, NLL) follows its loss."""
    hidden, target = _inputs(cls, extra, gen)
    head = _head(cls, extra, 0.0)
    loss, logp = head(hidden, target), head.log_probs(hidden)
    logp_t = logp.gather(1, target[:, None]).squeeze(1)
    inside = logp_t.isfinite()
    assert inside[::2].all()
    torch.testing.assert_close(loss[inside], -logp_t[inside], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("cls, extra", HEADS)
def test_label_smoothing_spreads_over_the_support(cls, extra, gen):
    """loss_ε = (1 − ε)·loss_0 + ε·mean_{p_j > 0}(−log p_j) under the head's own distribution
    (RowLoss's smoothing rule); a variant that ignores label_smoothing fails."""
    hidden, target = _inputs(cls, extra, gen)
    head = _head(cls, extra, 0.0)
    loss_0, logp = head(hidden, target), head.log_probs(hidden)
    loss_eps = _head(cls, extra, 0.2)(hidden, target)
    support = logp.isfinite()
    uniform = -(logp.where(support, 0.0)).sum(dim=1) / support.sum(dim=1)  # (N,) mean of −log p over the support
    torch.testing.assert_close(loss_eps, 0.8 * loss_0 + 0.2 * uniform, rtol=1e-10, atol=1e-10)
    assert not torch.allclose(loss_eps, loss_0)
