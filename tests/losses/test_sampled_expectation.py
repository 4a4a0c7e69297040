"""SampledSoftmaxHead against the exact expectation over the sampler's draws, on a 6-class problem.

For one row with logits o (C,) and target t, the head draws m negatives s_1..s_m with replacement
from q̃ (the sampler's q without t, renormalised) and trains on

    ô = (o_t, o_{s_1} − ln(m·q̃_{s_1}), .., o_{s_m} − ln(m·q̃_{s_m})),   L̂ = logsumexp(ô) − o_t,
    ∂L̂/∂o_t = p̂_0 − 1,   ∂L̂/∂o_j = Σ_k [s_k = j]·p̂_k  (j ≠ t),   p̂ = softmax(ô)

(Blanc & Rendle 2018, section 2). Enumerating all (C − 1)^m draw sequences with their probability
Π_k q̃_{s_k} gives E[L̂] and E[∇_o L̂] exactly. Checked here:

* the head's loss and logit gradient, weighted over every sequence, equal this reference (the
  correction, the target exclusion and the gradient routing are the head's own code);
* the head's Monte-Carlo mean with the real sampler converges to it (the draws follow q̃);
* the softmax sampler's expected gradient is the full-softmax gradient for every m (the paper's
  unbiasedness claim); with any other q the loss is biased low (Jensen) and the bias shrinks with m;
* with the uniform sampler the correction is one constant, ln(m/(C − 1)), and the expected
  push-down of a non-target logit is at most m/(C − 1) however large its full-softmax probability.
"""

from __future__ import annotations

import math

import pytest
import torch

from softmax_zoo.losses import (
    QuadraticKernelSampler,
    SampledSoftmaxHead,
    Sampler,
    SoftmaxSampler,
    UniformSampler,
    UnigramSampler,
)

C, D = 6, 4
TARGET = 2


def _problem(bias: bool = True, scale: float = 1.0) -> tuple[SampledSoftmaxHead, torch.Tensor]:
    """A float64 head with random weight (and bias) and one hidden row (1, D)."""
    g = torch.Generator().manual_seed(0)
    head = SampledSoftmaxHead(D, C, sampler=UniformSampler(C), num_samples=1, bias=bias).double()
    with torch.no_grad():
        head.weight.copy_(torch.randn(C, D, generator=g, dtype=torch.float64) * scale)
        if bias:
            head.bias.copy_(torch.randn(C, generator=g, dtype=torch.float64))
    return head, torch.randn(1, D, generator=g, dtype=torch.float64)


def _samplers() -> dict[str, Sampler]:
    return {
        "uniform": UniformSampler(C),
        "unigram": UnigramSampler(torch.tensor([50.0, 20, 10, 5, 2, 1]), power=0.75),
        "kernel": QuadraticKernelSampler(alpha=10.0, leaf_size=2, top_nodes=1),
        "softmax": SoftmaxSampler(),
    }


def _q_tilde(sampler: Sampler, head: SampledSoftmaxHead, hidden: torch.Tensor) -> torch.Tensor:
    """(C,) float64 q̃ of the row, from the sampler's log_prob (0 at the target)."""
    sampler.refresh(head.weight.detach())
    ids = torch.arange(C)[None]
    bias = None if head.bias is None else head.bias.detach()
    log_q = sampler.log_prob(hidden, head.weight.detach(), ids, exclude=torch.tensor([TARGET]), bias=bias)
    return log_q[0].double().exp()


def _sequences(q_tilde: torch.Tensor, m: int) -> tuple[torch.Tensor, torch.Tensor]:
    """All draw sequences of positive probability (S, m) and their probabilities (S,)."""
    seqs = torch.cartesian_prod(*[torch.arange(C)] * m).reshape(-1, m)
    prob = q_tilde[seqs].prod(1)
    keep = prob > 0
    return seqs[keep], prob[keep]


def reference(o: torch.Tensor, t: int, q_tilde: torch.Tensor, m: int) -> tuple[float, torch.Tensor]:
    """Exact E[L̂] and E[∇_o L̂] (C,) over the draws, from the formulas in the module docstring."""
    seqs, prob = _sequences(q_tilde, m)
    cand = torch.cat([o[t].expand(len(seqs), 1), o[seqs] - torch.log(m * q_tilde[seqs])], dim=1)  # (S, 1 + m)
    loss = torch.logsumexp(cand, 1) - o[t]  # (S,)
    p_hat = torch.softmax(cand, 1)
    grad = torch.zeros(len(seqs), C, dtype=o.dtype)
    grad[:, t] = p_hat[:, 0] - 1
    grad.scatter_add_(1, seqs, p_hat[:, 1:])
    return float(prob @ loss), prob @ grad


def full_gradient(o: torch.Tensor, t: int) -> torch.Tensor:
    return torch.softmax(o, 0) - torch.nn.functional.one_hot(torch.tensor(t), C).double()


class FixedDraws(Sampler):
    """Hands the head given draws, with the wrapped sampler's log q̃ of them."""

    def __init__(self, inner: Sampler, ids: torch.Tensor) -> None:
        self.inner, self.ids = inner, ids
        self.num_classes = inner.num_classes

    def refresh(self, weight):
        self.inner.refresh(weight)

    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        assert self.ids.shape == (hidden.shape[0], num_samples)
        return self.ids, self.inner.log_prob(hidden, weight, self.ids, exclude=exclude, bias=bias)


def _logits(head, hidden) -> torch.Tensor:
    with torch.no_grad():
        return head.logits(hidden)[0]  # (C,)


@pytest.mark.parametrize("name", ["uniform", "unigram", "kernel", "softmax"])
@pytest.mark.parametrize("m", [1, 2, 4])
def test_head_weighted_over_every_draw_equals_exact_expectation(name, m):
    head, hidden = _problem()
    sampler = _samplers()[name]
    q_tilde = _q_tilde(sampler, head, hidden)
    assert q_tilde[TARGET] == 0 and math.isclose(float(q_tilde.sum()), 1.0, rel_tol=1e-6)
    want_loss, want_grad = reference(_logits(head, hidden), TARGET, q_tilde, m)

    seqs, prob = _sequences(q_tilde, m)
    head.sampler, head.num_samples, head.reduction = FixedDraws(sampler, seqs), m, "none"
    head.train()
    losses = head(hidden.expand(len(seqs), -1), torch.full((len(seqs),), TARGET))  # (S,): one row per sequence
    expected_loss = prob @ losses
    expected_loss.backward()  # bias.grad = Σ_S prob_S ∇_o L̂_S, since ∂o_j/∂b_j = 1
    assert math.isclose(expected_loss.item(), want_loss, rel_tol=1e-6)
    torch.testing.assert_close(head.bias.grad, want_grad, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["uniform", "unigram", "kernel"])
def test_monte_carlo_mean_of_the_head_converges_to_the_exact_expectation(name):
    """30 batches of 2000 draws each (the row repeated); per coordinate within 5 standard errors."""
    m = 3
    head, hidden = _problem()
    sampler = _samplers()[name]
    want_loss, want_grad = reference(_logits(head, hidden), TARGET, _q_tilde(sampler, head, hidden), m)
    head.sampler, head.num_samples = sampler, m
    head.train()
    torch.manual_seed(0)
    losses, grads = [], []
    for _ in range(30):
        head.bias.grad = None
        loss = head(hidden.expand(2000, -1), torch.full((2000,), TARGET))  # mean over 2000 draws
        loss.backward()
        losses.append(float(loss))
        grads.append(head.bias.grad.clone())
    losses, grads = torch.tensor(losses, dtype=torch.float64), torch.stack(grads)
    loss_se = float(losses.std() / 30**0.5)
    grad_se = grads.std(0) / 30**0.5
    assert abs(float(losses.mean()) - want_loss) <= 5 * loss_se
    assert bool(((grads.mean(0) - want_grad).abs() <= 5 * grad_se + 1e-12).all())
    assert loss_se < 0.01 and float(grad_se.max()) < 0.01  # the checks above are not vacuous


@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_softmax_sampler_expected_gradient_is_the_full_gradient(m):
    """Blanc & Rendle 2018, section 2: q ∝ exp(o) makes the sampled gradient unbiased, for every m."""
    head, hidden = _problem()
    o = _logits(head, hidden)
    loss, grad = reference(o, TARGET, _q_tilde(SoftmaxSampler(), head, hidden), m)
    full_ce = float(torch.logsumexp(o, 0) - o[TARGET])
    assert math.isclose(loss, full_ce, rel_tol=1e-9)
    torch.testing.assert_close(grad, full_gradient(o, TARGET), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["uniform", "unigram", "kernel"])
def test_other_samplers_are_biased_low_and_the_bias_shrinks_with_m(name):
    head, hidden = _problem(scale=2.0)
    sampler = _samplers()[name]
    o = _logits(head, hidden)
    q_tilde = _q_tilde(sampler, head, hidden)
    full_ce = float(torch.logsumexp(o, 0) - o[TARGET])
    loss_gap, grad_gap = [], []
    for m in (1, 2, 3, 4, 5):
        loss, grad = reference(o, TARGET, q_tilde, m)
        loss_gap.append(full_ce - loss)
        grad_gap.append(float((grad - full_gradient(o, TARGET)).norm()))
    assert all(a > b > 0 for a, b in zip(loss_gap, loss_gap[1:])), loss_gap  # E log Ẑ < log Z (Jensen)
    assert all(a > b for a, b in zip(grad_gap, grad_gap[1:])), grad_gap
    assert grad_gap[-1] > 1e-3, grad_gap  # still biased at m = C − 1


def test_uniform_sampled_loss_is_consistent_as_m_grows():
    """Large m: (C − 1)/m Σ_k exp(o_{s_k}) -> Z without the target (law of large numbers), L̂ -> full CE."""
    head, hidden = _problem(scale=2.0)
    o = _logits(head, hidden)
    head.num_samples = 4000
    head.train()
    torch.manual_seed(0)
    with torch.no_grad():
        loss = float(head(hidden.expand(200, -1), torch.full((200,), TARGET)))
    assert abs(loss - float(torch.logsumexp(o, 0) - o[TARGET])) < 0.01


def test_uniform_correction_is_one_constant():
    head, hidden = _problem()
    for m in (1, 3, 5):
        head.num_samples = m
        torch.manual_seed(0)
        ids, log_q = UniformSampler(C).sample(hidden.expand(50, -1), head.weight, m, exclude=torch.full((50,), TARGET))
        assert not bool((ids == TARGET).any())
        torch.testing.assert_close(log_q + math.log(m), torch.full_like(log_q, math.log(m / (C - 1))))


@pytest.mark.parametrize("m", [1, 2, 4])
def test_uniform_push_down_of_a_dominant_negative_is_capped_at_m_over_c(m):
    """A non-target class holding ~all the full-softmax mass gets gradient p_j ≈ 1 from the full
    softmax, but from the sampled softmax with uniform q only P(j drawn) = 1 − (1 − 1/(C − 1))^m
    ≤ m/(C − 1): when drawn (any number of times) its draws share p̂ ≈ 1, otherwise it gets 0."""
    o = torch.zeros(C, dtype=torch.float64)
    o[0] = 30.0  # class 0 ≠ TARGET dominates: p_0 ≈ 1 − 1e-12
    _, grad = reference(o, TARGET, _q_tilde(UniformSampler(C), *_problem()), m)
    assert float(full_gradient(o, TARGET)[0]) > 0.999
    p_drawn = 1 - (1 - 1 / (C - 1)) ** m
    assert math.isclose(float(grad[0]), p_drawn, rel_tol=1e-6)
    assert float(grad[0]) <= m / (C - 1) + 1e-12
