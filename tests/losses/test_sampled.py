"""SampledSoftmaxHead: the softmax-sampler oracle (loss = full CE for every draw, mean gradient =
full gradient), the bias of the other samplers shrinks with m, eval = SoftmaxHead, gradients reach
only the touched rows, the sampler is refreshed once per step, bad arguments raise."""

from __future__ import annotations

import math

import pytest
import torch

from softmax_zoo.losses import (
    QuadraticKernelSampler,
    SampledSoftmaxHead,
    SoftmaxHead,
    SoftmaxSampler,
    UniformSampler,
    UnigramSampler,
)

C, D = 30, 6


@pytest.fixture
def data():
    """hidden (3, 4, D), target (3, 4) with two ignored positions."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 4, D, generator=g, dtype=torch.float64)
    target = torch.randint(0, C, (3, 4), generator=g)
    target[1, 1] = target[2, 3] = -100
    return hidden, target


def _heads(sampler, num_samples, bias=False, dtype=torch.float64, **kwargs):
    """A sampled head with a spread-out weight and the SoftmaxHead sharing its parameters."""
    torch.manual_seed(1)
    head = SampledSoftmaxHead(D, C, sampler=sampler, num_samples=num_samples, bias=bias, **kwargs).to(dtype)
    with torch.no_grad():
        head.weight.normal_(0, 0.7)
        if bias:
            head.bias.normal_()
    full = SoftmaxHead(D, C, weight=head.weight, bias=bias, **kwargs)
    if bias:
        full.bias = head.bias
    return head, full


@pytest.mark.parametrize("num_samples", [1, 3, C - 1])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_softmax_sampler_loss_equals_full_ce_for_every_draw(num_samples, bias, reduction, data):
    hidden, target = data
    head, full = _heads(SoftmaxSampler(), num_samples, bias=bias, reduction=reduction)
    expected = full(hidden, target)
    for seed in range(3):
        torch.manual_seed(seed)
        torch.testing.assert_close(head(hidden, target), expected, rtol=1e-10, atol=1e-10)


def test_softmax_sampler_mean_gradient_is_full_gradient(data):
    """Each batch repeats the rows 100 times (100 independent draws); 30 batch means give the spread."""
    hidden, target = data
    head, full = _heads(SoftmaxSampler(), 4, bias=True)
    x = hidden.clone().requires_grad_()
    params = [x, head.weight, head.bias]
    want = torch.autograd.grad(full(x, target), params)
    want = torch.cat([g.flatten() for g in want])
    torch.manual_seed(0)
    batches = []
    for _ in range(30):
        loss = head(x.expand(100, -1, -1, -1), target.expand(100, -1, -1))  # mean over 100 draws per row
        batches.append(torch.cat([g.flatten() for g in torch.autograd.grad(loss, params)]))
    batches = torch.stack(batches)
    mean, stderr = batches.mean(0), batches.std(0) / len(batches) ** 0.5
    assert bool(((mean - want).abs() <= 5 * stderr + 1e-9).all())  # 5 sigma per coordinate
    assert float(stderr.max()) < 0.01  # the check above is not vacuous


def _sampled_bias(sampler, num_samples: int, repeats: int = 800) -> float:
    """full CE − E[sampled loss] (mean over rows), E estimated over ``repeats`` draws per row."""
    g = torch.Generator().manual_seed(3)
    hidden = torch.randn(5, D, generator=g, dtype=torch.float64) * 2
    target = torch.randint(0, C, (5,), generator=g)
    head, full = _heads(sampler, num_samples, reduction="none")
    torch.manual_seed(0)
    with torch.no_grad():
        sampled = head(hidden.repeat(repeats, 1), target.repeat(repeats)).view(repeats, 5).mean(0)
        return float((full(hidden, target) - sampled).mean())


@pytest.mark.parametrize(
    "sampler",
    [UniformSampler(C), UnigramSampler(torch.arange(1.0, C + 1), power=0.75), QuadraticKernelSampler(leaf_size=4, top_nodes=2)],
    ids=["uniform", "unigram", "kernel"],
)
def test_bias_shrinks_with_num_samples(sampler):
    bias = [_sampled_bias(sampler, m) for m in (1, 4, 16)]
    assert bias[0] > bias[1] > bias[2] > 0, bias  # E[log-sum] < log E[sum]: the loss is biased low


def test_eval_mode_equals_softmax_head(data):
    hidden, target = data
    head, full = _heads(UniformSampler(C), 5, bias=True)
    head.eval()
    torch.testing.assert_close(head(hidden, target), full(hidden, target))
    torch.testing.assert_close(head.log_probs(hidden), full.log_probs(hidden))
    assert torch.equal(head.predict(hidden), full.predict(hidden))


class Recorder(UniformSampler):
    """A uniform sampler that records what the head gives it and draws."""

    def __init__(self, num_classes):
        super().__init__(num_classes)
        self.refreshes, self.drawn, self.inputs = 0, [], []

    def refresh(self, weight):
        self.refreshes += 1

    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        self.inputs.append((hidden, weight, exclude))
        ids, log_q = super().sample(hidden, weight, num_samples, exclude, bias)
        self.drawn.append(ids)
        return ids, log_q


def test_target_never_drawn_and_only_touched_rows_get_gradient(data):
    hidden, target = data
    sampler = Recorder(C)
    head, _ = _heads(sampler, 3, bias=True)
    x = hidden.clone().requires_grad_()
    torch.manual_seed(0)
    head(x, target).backward()
    (h, w, exclude), ids = sampler.inputs[0], sampler.drawn[0]
    kept = target.reshape(-1)[target.reshape(-1) != -100]
    assert torch.equal(exclude, kept) and h.shape[0] == kept.numel()  # ignored rows draw nothing
    assert not (h.requires_grad or w.requires_grad)  # the sampler sees no autograd graph
    assert not bool((ids == kept[:, None]).any())
    touched = torch.zeros(C, dtype=torch.bool)
    touched[torch.cat([kept, ids.flatten()])] = True
    assert torch.equal(head.weight.grad.abs().sum(1) > 0, touched)
    assert torch.equal(head.bias.grad != 0, touched)
    assert torch.equal(x.grad[1, 1], torch.zeros(D, dtype=x.dtype))  # an ignored row


def test_sampler_refreshed_once_per_weight_change(data):
    hidden, target = data
    sampler = Recorder(C)
    head, _ = _heads(sampler, 3)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    head(hidden, target).backward()
    head(hidden, target)  # same weight: no refresh
    assert sampler.refreshes == 1
    opt.step()
    head(hidden, target)
    assert sampler.refreshes == 2


def test_gradcheck_with_fixed_draws():
    """The sampled loss is plain autograd; with the draws fixed (uniform q) it is differentiable."""
    g = torch.Generator().manual_seed(4)
    hidden = torch.randn(4, D, generator=g, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 5, 29, 7])
    head, _ = _heads(UniformSampler(C), 5, bias=True)

    def loss(h, w, b):
        torch.manual_seed(0)  # the same negatives at every call
        return torch.func.functional_call(head, {"weight": w, "bias": b}, (h, target))

    w = head.weight.detach().clone().requires_grad_()
    b = head.bias.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(loss, (hidden, w, b))


def test_kernel_sampler_trains_and_handles_shapes(data):
    hidden, target = data
    head = SampledSoftmaxHead(D, C, sampler=QuadraticKernelSampler(leaf_size=4, top_nodes=2), num_samples=5)
    x = hidden.float().requires_grad_()
    loss = head(x, target)
    loss.backward()
    assert loss.shape == () and torch.isfinite(loss) and x.grad.shape == x.shape
    head.reduction = "none"
    assert head(x, target).shape == target.shape


def test_all_rows_ignored_gives_nan_mean_like_torch():
    head, full = _heads(UniformSampler(C), 3)
    hidden, target = torch.randn(2, D, dtype=torch.float64), torch.full((2,), -100)
    assert torch.isnan(head(hidden, target)) and torch.isnan(full(hidden, target))


def test_tied_weight_is_shared():
    weight = torch.nn.Parameter(torch.randn(C, D))
    head = SampledSoftmaxHead(D, C, sampler=UniformSampler(C), num_samples=3, weight=weight)
    assert head.weight is weight


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"sampler": UniformSampler(C), "num_samples": 0}, r"got 0; for num_samples >= num_classes use the full softmax"),
        ({"sampler": UniformSampler(C), "num_samples": C}, rf"got {C}; .*full softmax"),
        ({"sampler": UniformSampler(C + 1), "num_samples": 3}, f"built for {C + 1} classes but the head has {C}"),
        ({"sampler": UnigramSampler(torch.ones(C - 1)), "num_samples": 3}, f"built for {C - 1} classes"),
    ],
)
def test_bad_arguments_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SampledSoftmaxHead(D, C, **kwargs)


def test_bad_target_names_the_value(data):
    hidden, _ = data
    head, _ = _heads(UniformSampler(C), 3)
    with pytest.raises(ValueError, match=f"target {C} is outside"):
        head(hidden[0], torch.tensor([0, 1, C, 2]))


def test_runs_on_device(device):
    head = SampledSoftmaxHead(D, C, sampler=QuadraticKernelSampler(leaf_size=4, top_nodes=2), num_samples=5).to(device)
    hidden = torch.randn(8, D, device=device, requires_grad=True)
    head(hidden, torch.randint(0, C, (8,), device=device)).backward()
    assert hidden.grad.device.type == device.type and bool(torch.isfinite(hidden.grad).all())


def test_kernel_sampler_has_less_bias_than_uniform():
    """Blanc & Rendle's claim at small scale: q closer to the softmax -> less bias at the same m."""
    for m in (4, 16):
        assert _sampled_bias(QuadraticKernelSampler(leaf_size=4, top_nodes=2), m) < 0.5 * _sampled_bias(UniformSampler(C), m)


@pytest.mark.parametrize("m", [3, 40])
def test_candidate_logits_paths_agree_in_values_and_gradients(monkeypatch, m):
    """The per-row gather and the one GEMM over distinct candidates give the same logits and gradients (float64)."""
    from softmax_zoo.losses.methods import sampled

    g = torch.Generator().manual_seed(5)
    hidden = torch.randn(6, D, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(C, D, generator=g, dtype=torch.float64, requires_grad=True)
    cand = torch.randint(0, C, (6, 1 + m), generator=g)
    upstream = torch.randn(6, 1 + m, generator=g, dtype=torch.float64)
    results = []
    for ratio in (0.0, math.inf):  # 0: always the per-row gather; inf: always the shared GEMM
        monkeypatch.setattr(sampled, "SHARED_GEMM_RATIO", ratio)
        logits = sampled.candidate_logits(hidden, weight, cand)
        grads = torch.autograd.grad((logits * upstream).sum(), (hidden, weight))
        results.append((logits, *grads))
        assert torch.autograd.gradcheck(lambda h, w: sampled.candidate_logits(h, w, cand), (hidden, weight))
    reference = torch.einsum("nd,nkd->nk", hidden, weight[cand])
    for got in results:
        torch.testing.assert_close(got[0], reference, rtol=1e-12, atol=1e-12)
    for a, b in zip(results[0][1:], results[1][1:]):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
    untouched = torch.ones(C, dtype=torch.bool)
    untouched[cand.flatten()] = False
    assert bool((results[1][2][untouched] == 0).all())  # the GEMM path's weight gradient stays on the candidates' rows
