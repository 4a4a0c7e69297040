"""A split sampled head's draws are observable as the one-process head's: ``last_negatives``.

On 2 and 3 gloo ranks: with a sampler that does not read the weight (uniform) and the same seed,
the split head's draws are the one-process head's; with the kernel sampler (drawn per shard) they
are the same on every rank, never the target, with the one-process log q̃, and the loss is the
sampled loss of exactly those draws, also under a float64 default dtype.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.distributed as dist
from torch.testing import assert_close

from softmax_zoo.losses import QuadraticKernelSampler, SampledSoftmaxHead, UniformSampler
from softmax_zoo.losses.parallel.vocab_parallel import VocabShard
from softmax_zoo.losses.parallel.vocab_parallel_head import VocabParallelHead

from .ranks import run_ranks

C, D, N, M = 11, 4, 7, 3
SPANS = {2: [(0, 4), (4, 11)], 3: [(0, 1), (1, 7), (7, 11)]}


def _heads(sampler, shard):
    torch.manual_seed(0)
    one = SampledSoftmaxHead(D, C, sampler=sampler(), num_samples=M).double()
    torch.manual_seed(0)
    return one, VocabParallelHead(SampledSoftmaxHead(D, C, sampler=sampler(), num_samples=M).double(), shard)


def check_draws_observable(rank, world_size):
    shard = VocabShard(*SPANS[world_size][rank])
    g = torch.Generator().manual_seed(4)
    h = torch.randn(N, D, dtype=torch.float64, generator=g)
    t = torch.randint(0, C, (N,), generator=g)
    t[3] = -100
    keep = t != -100
    one, split = _heads(lambda: UniformSampler(C), shard)
    assert one.last_negatives is None and split.last_negatives is None
    for head in (one, split):
        torch.manual_seed(7)
        head(h, t)
    assert torch.equal(split.last_negatives.ids, one.last_negatives.ids)
    assert torch.equal(split.last_negatives.log_q, one.last_negatives.log_q)
    assert torch.equal(split.last_negatives.keep, keep) and torch.equal(one.last_negatives.keep, keep)

    one, split = _heads(lambda: QuadraticKernelSampler(leaf_size=2), shard)
    loss = split(h, t)
    ids, log_q, kept = split.last_negatives
    assert ids.shape == (int(keep.sum()), M) and torch.equal(kept, keep)
    every = [None] * world_size
    dist.all_gather_object(every, ids)
    assert all(torch.equal(e, ids) for e in every)
    assert not bool((ids == t[keep][:, None]).any())
    full = QuadraticKernelSampler(leaf_size=2)
    full.refresh(one.weight.detach())
    assert_close(log_q.double(), full.log_prob(h[keep], one.weight.detach(), ids, exclude=t[keep]).double(),
                 atol=1e-5, rtol=1e-5)
    cand = torch.cat([t[keep][:, None], ids], dim=1)  # (n, 1 + m): the sampled loss of exactly these draws
    logits = (h[keep][:, None, :] * one.weight.detach()[cand]).sum(-1)
    logits = torch.cat([logits[:, :1], logits[:, 1:] - log_q.double() - math.log(M)], dim=1)
    assert_close(loss.detach(), (logits.logsumexp(dim=1) - logits[:, 0]).mean())

    torch.set_default_dtype(torch.float64)  # the kernel tree stays float32, the head float64
    try:
        torch.manual_seed(0)
        split = VocabParallelHead(SampledSoftmaxHead(D, C, sampler=QuadraticKernelSampler(leaf_size=2), num_samples=M),
                                  shard)
        assert split.weight.dtype == torch.float64
        loss = split(h, t)
        loss.backward()
        assert loss.isfinite() and bool(split.weight.grad.isfinite().all())
        assert not bool((split.last_negatives.ids == t[keep][:, None]).any())
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("world_size", [2, 3])
def test_split_sampled_draws_are_observable(world_size, tmp_path):
    run_ranks(check_draws_observable, world_size, tmp_path, timeout=60.0)


def test_one_process_head_keeps_its_draws():
    torch.manual_seed(0)
    head = SampledSoftmaxHead(D, C, sampler=UniformSampler(C), num_samples=M)
    h, t = torch.randn(N, D), torch.randint(0, C, (N,))
    torch.manual_seed(1)
    head(h, t)
    torch.manual_seed(1)
    ids, log_q = UniformSampler(C).sample(h, head.weight, M, exclude=t)
    assert torch.equal(head.last_negatives.ids, ids) and torch.equal(head.last_negatives.log_q, log_q)
