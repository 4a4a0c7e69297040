"""No vocabulary-parallel call leaves a rank waiting: bad arguments on one rank raise the same error
on every rank, and ``chunk_size="auto"`` cuts the same chunks on every rank.

Each check runs on 2 and 3 gloo processes under a bounded timeout (``ranks.run_ranks``): a rank
left in a collective the others never make fails the test within it. After every refused call the
group is still in step: the ranks compare their errors with one more collective, and a healthy
call at the end equals one process.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.testing import assert_close

from softmax_zoo.losses import (
    AdaptiveSoftmaxHead,
    SampledSoftmaxHead,
    SoftmaxHead,
    SparseSoftmaxHead,
    UniformSampler,
    vocab_parallel_cross_entropy,
    vocab_parallel_linear_cross_entropy,
    vocab_parallel_stable_kd_loss,
)
from softmax_zoo.losses.parallel import vocab_parallel as vp_module
from softmax_zoo.losses.parallel.vocab_parallel import VocabShard, linear_call
from softmax_zoo.losses.parallel.vocab_parallel_head import VocabParallelHead

from .ranks import run_ranks

C, D, N = 11, 4, 6
SPANS = {2: [(0, 4), (4, 11)], 3: [(0, 1), (1, 7), (7, 11)]}
TIMEOUT_S = 60.0  # the group's collective timeout and the bound on each check


def _same_error_everywhere(call, match: str, error=ValueError) -> None:
    """``call()`` raises ``error`` matching ``match`` on this rank, with the message every other rank raises."""
    with pytest.raises(error, match=match) as raised:
        call()
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, (type(raised.value).__name__, str(raised.value)))
    assert all(e == every[0] for e in every), every


def _inputs():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(N, D, dtype=torch.float64, generator=g)
    w = torch.randn(C, D, dtype=torch.float64, generator=g)
    t = torch.randint(0, C, (N,), generator=g)
    t[2] = -100
    return h, w, t


def check_one_bad_rank_raises_on_every_rank(rank, world_size):
    """The last rank alone gets a bad argument; every rank raises its error."""
    start, stop = SPANS[world_size][rank]
    shard, last = VocabShard(start, stop), rank == world_size - 1
    h, w, t = _inputs()
    first_of_last, last_size = SPANS[world_size][-1][0], SPANS[world_size][-1][1] - SPANS[world_size][-1][0]

    # a bad shard on one rank: empty, or past C
    _same_error_everywhere(lambda: VocabShard(start, start if last else stop).check(C),
                           rf"rank {world_size - 1} of the shard's group .*shard \[{first_of_last}, {first_of_last}\) must be a non-empty")
    _same_error_everywhere(lambda: VocabShard(start, C + 1 if last else stop).check(C),
                           rf"shard \[{first_of_last}, {C + 1}\) must be a non-empty range inside \[0, {C}\)")
    # a head refused on one rank only
    torch.manual_seed(0)
    head = AdaptiveSoftmaxHead(D, C, cutoffs=[4]) if last else SoftmaxHead(D, C)
    _same_error_everywhere(lambda: VocabParallelHead(head, shard), "AdaptiveSoftmaxHead has no vocabulary-parallel form",
                           TypeError)
    head = SoftmaxHead(D, C, z_loss=1e-4 if last else 0.0)
    _same_error_everywhere(lambda: VocabParallelHead(head, shard), "SoftmaxHead with z_loss has no vocabulary-parallel")
    # a call with this rank's bad arguments
    part = w[start:stop]
    _same_error_everywhere(lambda: vocab_parallel_cross_entropy(
        h @ (w if last else part).T, t, shard, C), rf"logits must be \(N, {last_size}\)")
    _same_error_everywhere(lambda: vocab_parallel_cross_entropy(
        h @ part.T, t, shard, C, reduction="average" if last else "mean"), "reduction must be one of")
    _same_error_everywhere(lambda: vocab_parallel_linear_cross_entropy(
        h[:-1] if last else h, part, t[:-1] if last else t, shard, C), "disagree on the number of rows N: from 5 to 6")
    _same_error_everywhere(lambda: vocab_parallel_linear_cross_entropy(
        h, part, t, shard, C, chunk_size=4 if last else None), r"disagree on chunk_size \(0: None")
    _same_error_everywhere(lambda: vocab_parallel_linear_cross_entropy(
        h, part, t, shard, C, chunk_size=0 if last else 3), "chunk_size must be >= 1")
    # a bad variant name or keyword on one rank: read before the group agrees
    _same_error_everywhere(lambda: vocab_parallel_linear_cross_entropy(
        h, part, t, shard, C, loss="sparse_softmax", k=0 if last else 3), "k must be >= 1, got 0")
    _same_error_everywhere(lambda: vocab_parallel_cross_entropy(
        h @ part.T, t, shard, C, loss="nope" if last else "softmax"), "no loss variant 'nope' is registered")
    _same_error_everywhere(lambda: vocab_parallel_cross_entropy(
        h @ part.T, t, shard, C, **({"z_loss": 1e-4} if last else {})), "loss='softmax' with z_loss has no vocabulary-parallel")
    # a loss that differs from rank to rank: its collectives would not match
    _same_error_everywhere(lambda: vocab_parallel_linear_cross_entropy(
        h, part, t, shard, C, loss="sparse_softmax", k=4 if last else 3), r"disagree on the loss \(a CRC")
    _same_error_everywhere(lambda: vocab_parallel_cross_entropy(
        h @ part.T, t, shard, C, **({"loss": "sparse_softmax", "k": 3} if last else {})), r"disagree on the loss \(a CRC")
    torch.manual_seed(0)
    split = VocabParallelHead(SparseSoftmaxHead(D, C, k=3, label_smoothing=0.1 if last else 0.0).double(), shard)
    _same_error_everywhere(lambda: split(h, t), r"disagree on the loss \(a CRC")
    z = h @ part.T
    _same_error_everywhere(lambda: vocab_parallel_stable_kd_loss(z, z.float() if last else z, shard),
                           "teacher_logits .* must match student_logits")
    _same_error_everywhere(lambda: vocab_parallel_stable_kd_loss(z, z, shard, temperature=0.0 if last else 1.0),
                           "temperature must be > 0, got 0.0")
    for chunk_size in (None, 3):  # the head: the plain and the chunked path, and the sampled training path
        torch.manual_seed(0)
        split = VocabParallelHead(SparseSoftmaxHead(D, C, k=3, chunk_size=chunk_size).double(), shard)
        _same_error_everywhere(lambda: split(h[:, :-1] if last else h, t), "hidden has 3 features but the head expects 4")
        _same_error_everywhere(lambda: split(h, t[:-1] if last else t), "target must be")
    torch.manual_seed(0)
    sampled = VocabParallelHead(SampledSoftmaxHead(D, C, sampler=UniformSampler(C), num_samples=3).double(), shard)
    _same_error_everywhere(lambda: sampled(h, t.float() if last else t), "target must be an integer tensor")
    if last:
        sampled.eval()
    _same_error_everywhere(lambda: sampled(h, t), "disagree on the call's path")
    sampled.train()
    # inference
    _same_error_everywhere(lambda: split.predict(h[:, :-1] if last else h), "hidden has 3 features")
    _same_error_everywhere(lambda: split.topk_log_probs(h, C + 1 if last else 2), f"k must be <= the number of classes {C}")
    _same_error_everywhere(lambda: split.class_log_probs(h, [C] if last else [0]), f"class {C} is outside")
    # the group is still in step: a healthy call equals one process
    loss = vocab_parallel_linear_cross_entropy(h, part, t, shard, C, chunk_size="auto")
    assert_close(loss, F.cross_entropy(h @ w.T, t))


def check_auto_chunks_are_the_same_on_every_rank(rank, world_size, monkeypatch_budget: bool):
    """``chunk_size="auto"`` with uneven shards, and (``monkeypatch_budget``) a chunk budget that
    differs from rank to rank, as a GPU's free memory does: one set of chunks, equal to one process."""
    start, stop = SPANS[world_size][rank]
    shard = VocabShard(start, stop)
    h, w, t = _inputs()
    if monkeypatch_budget:  # rank r's device fits (r + 2)·C logits: 2 rows a chunk on rank 0, more elsewhere
        vp_module.chunk_logits = lambda device, weight_numel=0: (rank + 2) * C
    call = linear_call(h, w[start:stop], None, t, shard, C, chunk_size="auto", ignore_index=-100, reduction="mean")
    every = [None] * world_size
    dist.all_gather_object(every, call.chunk_rows)
    assert every == [2 if monkeypatch_budget else N] * world_size
    x, part = h.clone().requires_grad_(), w[start:stop].clone().requires_grad_()
    loss = vocab_parallel_linear_cross_entropy(x, part, t, shard, C, chunk_size="auto", reduction="sum")
    y, full = h.clone().requires_grad_(), w.clone().requires_grad_()
    expected = F.cross_entropy(y @ full.T, t, reduction="sum")
    loss.backward(), expected.backward()
    assert_close(loss, expected)
    assert_close(x.grad, y.grad)
    assert_close(part.grad, full.grad[start:stop])


def check_auto_chunks_of_the_issue_case(rank, world_size):
    """N = 2,000 rows, C = 16,777 classes on even shards (8,389 and 8,388): sized from each shard's
    own class count, rank 0 would cut 2 chunks and rank 1 one, and the collectives would not match."""
    num_classes, n = 16_777, 2_000
    shard = VocabShard.even(num_classes)
    g = torch.Generator().manual_seed(1)
    h = torch.randn(n, 2, generator=g)
    w = torch.randn(num_classes, 2, generator=g)[shard.start : shard.stop]
    t = torch.randint(0, num_classes, (n,), generator=g)
    call = linear_call(h, w, None, t, shard, num_classes, chunk_size="auto", ignore_index=-100, reduction="mean")
    every = [None] * world_size
    dist.all_gather_object(every, call.chunk_rows)
    assert every == [1_000] * world_size  # 2^24 logits of all C classes: 1,000 rows; the fewest chunks, even
    with torch.no_grad():
        loss = vocab_parallel_linear_cross_entropy(h, w, t, shard, num_classes, chunk_size="auto")
    assert loss.isfinite()


@pytest.mark.parametrize("world_size", [2, 3])
def test_one_bad_rank_raises_on_every_rank(world_size, tmp_path):
    run_ranks(check_one_bad_rank_raises_on_every_rank, world_size, tmp_path, timeout=TIMEOUT_S)


@pytest.mark.parametrize("monkeypatch_budget", [False, True], ids=["uneven-shards", "uneven-budgets"])
@pytest.mark.parametrize("world_size", [2, 3])
def test_auto_chunks_are_the_same_on_every_rank(world_size, monkeypatch_budget, tmp_path):
    run_ranks(check_auto_chunks_are_the_same_on_every_rank, world_size, tmp_path, monkeypatch_budget, timeout=TIMEOUT_S)


def test_auto_chunks_of_uneven_even_shards(tmp_path):
    run_ranks(check_auto_chunks_of_the_issue_case, 2, tmp_path, timeout=TIMEOUT_S)
