"""Under DDP every rank starts from the same seed; the engine gives each rank's samplers a generator
seeded with seed + rank (seed_samplers), so that ranks draw different negatives (and a rank the same
ones on a rerun). Without it a sampler draws from torch's global generator."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import QuadraticKernelSampler, SampledSoftmaxHead, UniformSampler
from softmax_zoo.losses.methods.sampled import seed_samplers


def draws(sampler, monkeypatch, rank: int | None) -> torch.Tensor:
    """The negatives a head draws in two training steps after the run's seed 0 (and seed_samplers(0 + rank))."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(SampledSoftmaxHead(8, 500, sampler=sampler, num_samples=16))
    if rank is not None:
        assert seed_samplers(model, 0 + rank, torch.device("cpu")) == 1
    seen, original = [], sampler.sample

    def recording(*args, **kwargs):
        ids, log_q = original(*args, **kwargs)
        seen.append(ids)
        return ids, log_q

    monkeypatch.setattr(sampler, "sample", recording)
    for _ in range(2):
        model[0](torch.randn(4, 8), torch.arange(4)).backward()
    return torch.stack(seen)


@pytest.mark.parametrize("make", [lambda: UniformSampler(500), lambda: QuadraticKernelSampler(leaf_size=8)], ids=["uniform", "quadratic"])
def test_ranks_draw_different_negatives(make, monkeypatch):
    rank0, rank1 = draws(make(), monkeypatch, 0), draws(make(), monkeypatch, 1)
    assert not torch.equal(rank0, rank1)
    assert torch.equal(rank1, draws(make(), monkeypatch, 1))  # seed + rank: reproducible per rank


def test_unseeded_sampler_draws_from_the_global_generator(monkeypatch):
    sampler = UniformSampler(500)
    first = draws(sampler, monkeypatch, None)
    assert sampler.generator is None and torch.equal(first, draws(UniformSampler(500), monkeypatch, None))
