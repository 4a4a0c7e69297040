"""The sampled softmax head under CPU autocast (bfloat16 and float16), as the trainer's
``precision: auto`` runs it on a GPU: several optimiser steps at shapes whose tree refresh takes
the partial path (fewer than half the leaves changed), the samplers' log q equal to their own exact
distribution, and the logQ correction ln(m·q̃) applied in float32 with ``bias=False``."""

from __future__ import annotations

import math

import pytest
import torch

from softmax_zoo.losses import (
    CentredQuadraticKernelSampler,
    QuadraticKernelSampler,
    SampledSoftmaxHead,
    SoftmaxSampler,
    UniformSampler,
)
from softmax_zoo.losses.methods.sampled import candidate_logits
from softmax_zoo.losses.methods.samplers import Sampler
from softmax_zoo.losses.reference.sampled import centred_kernel_probs, kernel_probs, softmax_probs

AUTOCAST = [torch.bfloat16, torch.float16]  # CPU autocast supports both (torch >= 2.4)
C, D, M, N, LEAF = 20_000, 32, 4, 16, 64  # 313 leaves; a step changes at most N·(1 + M) = 80 rows
KERNELS = {
    "quadratic": (QuadraticKernelSampler, kernel_probs),
    "centred": (CentredQuadraticKernelSampler, centred_kernel_probs),
}


def _batch(step: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(N, 8, generator=gen), torch.randint(0, C, (N,), generator=gen)


def _train(head: SampledSoftmaxHead, dtype: torch.dtype, steps: int) -> tuple[torch.nn.Module, list[int]]:
    """``steps`` Adagrad steps of an encoder (8 -> D) + ``head`` under autocast; leaves changed per step."""
    gen = torch.Generator().manual_seed(0)
    encoder = torch.nn.Linear(8, D)
    opt = torch.optim.Adagrad([*encoder.parameters(), *head.parameters()], lr=0.5)
    changed = []
    for step in range(steps):
        x, t = _batch(step, gen)
        before = head.weight.detach().clone()
        with torch.autocast("cpu", dtype=dtype):
            loss = head(encoder(x), t)  # hidden in the autocast dtype, as a model under autocast gives it
        loss.backward()
        opt.step()
        opt.zero_grad()
        rows = (head.weight.detach() != before).any(1).nonzero()[:, 0]
        changed.append(int(torch.unique(rows // LEAF).numel()))
    return encoder, changed


@pytest.mark.parametrize("dtype", AUTOCAST, ids=str)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_head_trains_and_its_log_q_is_exact_under_autocast(kernel, dtype):
    """Three steps train (partial refreshes before steps 2 and 3, and after 3); then the tree's draws
    and log q under autocast are those of the exact kernel of the current weight (float64 reference)."""
    torch.manual_seed(0)
    sampler_cls, probs_of = KERNELS[kernel]
    head = SampledSoftmaxHead(D, C, sampler=sampler_cls(leaf_size=LEAF), num_samples=M)
    encoder, changed = _train(head, dtype, steps=3)
    leaves = math.ceil(C / LEAF)
    assert all(0 < k and 2 * k < leaves for k in changed), f"not the partial-refresh path: {changed} of {leaves}"

    gen = torch.Generator().manual_seed(1)
    x, t = _batch(0, gen)
    with torch.autocast("cpu", dtype=dtype):
        hidden = encoder(x).detach()
        head.refresh_sampler()  # the third step's partial refresh
        ids, log_q = head.sampler.sample(hidden, head.weight.detach(), 64, exclude=t)
        log_prob = head.sampler.log_prob(hidden, head.weight.detach(), ids, exclude=t)
    exact = probs_of(hidden, head.weight.detach(), head.sampler.alpha, exclude=t).log().gather(1, ids)
    assert log_q.dtype == torch.float32 and bool((ids != t[:, None]).all())
    torch.testing.assert_close(log_q.double(), exact, rtol=0, atol=1e-4)
    torch.testing.assert_close(log_prob.double(), exact, rtol=0, atol=1e-4)


def test_softmax_sampler_is_float32_under_autocast():
    """The oracle's q is the float32 softmax of the float32 logits, whatever the autocast."""
    gen = torch.Generator().manual_seed(2)
    hidden, weight, t = torch.randn(8, D, generator=gen), torch.randn(500, D, generator=gen), torch.arange(8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ids, log_q = SoftmaxSampler().sample(hidden, weight, 16, exclude=t)
    exact = softmax_probs(hidden, weight, exclude=t).log().gather(1, ids)
    torch.testing.assert_close(log_q.double(), exact, rtol=0, atol=1e-5)


class _Recording(Sampler):
    """A uniform sampler that keeps what it drew (ids, log q̃) for the reference loss."""

    def __init__(self, num_classes: int) -> None:
        self.inner, self.num_classes, self.draws = UniformSampler(num_classes), num_classes, []

    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        self.draws.append(self.inner.sample(hidden, weight, num_samples, exclude, bias))
        return self.draws[-1]


@pytest.mark.parametrize("dtype", AUTOCAST, ids=str)
@pytest.mark.parametrize("m", [8, 64, 512])
def test_log_q_correction_is_float32_without_bias(m, dtype):
    """bias=False at C = 50,000: over two steps the loss is the float32 cross-entropy of the autocast
    candidate logits minus ln(m·q̃) in float32 (not ln(m·q̃) rounded to the autocast dtype)."""
    torch.manual_seed(3)
    classes, n = 50_000, 8
    sampler = _Recording(classes)
    head = SampledSoftmaxHead(D, classes, sampler=sampler, num_samples=m, bias=False)
    opt = torch.optim.SGD(head.parameters(), lr=1.0)
    gen = torch.Generator().manual_seed(4)
    for _ in range(2):
        hidden, t = torch.randn(n, D, generator=gen), torch.randint(0, classes, (n,), generator=gen)
        with torch.autocast("cpu", dtype=dtype):
            loss = head(hidden, t)
            neg, log_q = sampler.draws[-1]
            logits = candidate_logits(hidden, head.weight, torch.cat([t[:, None], neg], 1)).detach().float()
        logits[:, 1:] -= log_q + math.log(m)  # float32 correction
        expected = (torch.logsumexp(logits, 1) - logits[:, 0]).mean()
        torch.testing.assert_close(loss.detach(), expected, rtol=1e-6, atol=1e-6)
        loss.backward()
        opt.step()
        opt.zero_grad()
