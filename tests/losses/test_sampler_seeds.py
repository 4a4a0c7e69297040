"""Under DDP every rank starts from the same seed; the sampled head then seeds its sampler with
seed + rank, so that ranks draw different negatives (and a rank the same ones on a rerun)."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import QuadraticKernelSampler, SampledSoftmaxHead, UniformSampler


def draws_on_rank(rank: int, sampler, monkeypatch) -> torch.Tensor:
    """The negatives a head draws in its first two training steps on ``rank`` of a (mocked) 2-process group."""
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda group=None: rank)
    torch.manual_seed(0)  # the run's seed, the same on every rank
    head = SampledSoftmaxHead(8, 500, sampler=sampler, num_samples=16)
    seen, original = [], sampler.sample

    def recording(*args, **kwargs):
        ids, log_q = original(*args, **kwargs)
        seen.append(ids)
        return ids, log_q

    monkeypatch.setattr(sampler, "sample", recording)
    for _ in range(2):
        head(torch.randn(4, 8), torch.arange(4)).backward()
    return torch.stack(seen)


@pytest.mark.parametrize("make", [lambda: UniformSampler(500), lambda: QuadraticKernelSampler(leaf_size=8)], ids=["uniform", "quadratic"])
def test_ranks_draw_different_negatives(make, monkeypatch):
    rank0, rank1 = draws_on_rank(0, make(), monkeypatch), draws_on_rank(1, make(), monkeypatch)
    assert not torch.equal(rank0, rank1)
    assert torch.equal(rank1, draws_on_rank(1, make(), monkeypatch))  # seed + rank: reproducible per rank


def test_one_process_draws_from_the_global_generator():
    sampler = UniformSampler(500)
    head = SampledSoftmaxHead(8, 500, sampler=sampler, num_samples=16)
    head(torch.randn(4, 8), torch.arange(4))
    assert sampler.generator is None
