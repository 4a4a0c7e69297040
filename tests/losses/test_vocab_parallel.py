"""Vocabulary-parallel heads on 2 and 4 gloo processes equal one process, in float64.

Each rank builds the one-process head (same seed) as the reference and its own shard of it
(``VocabParallelHead``), and compares the loss and every gradient: hidden's (the full one on
every rank) and its weight and bias rows against the reference's [start, stop) rows. Shards are
uneven (one holds a single class) and one case puts every target outside the first rank's shard.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.distributed as dist
from torch.testing import assert_close

from softmax_zoo.losses import (
    AdaptiveSoftmaxHead,
    CentredQuadraticKernelSampler,
    QuadraticKernelSampler,
    SampledSoftmaxHead,
    SoftmaxHead,
    SoftmaxSampler,
    SparseSoftmaxHead,
    StableSoftmaxHead,
    UniformSampler,
    UnigramSampler,
    stable_kd_loss,
)
from softmax_zoo.losses.parallel.vocab_parallel import VocabShard
from softmax_zoo.losses.parallel.vocab_parallel_head import VocabParallelHead
from softmax_zoo.losses.parallel.vocab_parallel_kd import vocab_parallel_stable_kd_loss
from softmax_zoo.losses.parallel.vocab_parallel_sampled import draw_negatives

from .ranks import run_ranks

C, D, N = 11, 5, 9
SPANS = {2: [(0, 3), (3, 11)], 4: [(0, 2), (2, 5), (5, 6), (6, 11)]}
COUNTS = torch.arange(1, C + 1, dtype=torch.float64)

LOGIT_CASES = {
    "softmax": (SoftmaxHead, {}),
    "stable": (StableSoftmaxHead, {}),
    "sparse": (SparseSoftmaxHead, {"k": 3}),
    "sparse-options": (SparseSoftmaxHead, {"k": 3, "target_in_support": True, "smoothing_over": "all"}),
    "sparse-k=C": (SparseSoftmaxHead, {"k": C}),
    "sparse-full-softmax-steps": (SparseSoftmaxHead, {"k": 3, "full_softmax_steps": 5}),
}
# (label_smoothing, reduction, chunk_size)
LOGIT_SETTINGS = [(0.0, "mean", None), (0.1, "sum", 4), (0.2, "none", None), (0.1, "none", 3), (0.0, "mean", "auto")]
SAMPLED_CASES = {
    "sampled-uniform": lambda: {"sampler": UniformSampler(C), "num_samples": 4},
    "sampled-unigram": lambda: {"sampler": UnigramSampler(COUNTS, power=0.75), "num_samples": 4, "bias": True},
}


def _inputs(spans, *, away_from_first: bool):
    g = torch.Generator().manual_seed(3)
    h = torch.randn(N, D, dtype=torch.float64, generator=g)
    low = spans[0][1] if away_from_first else 0
    t = torch.randint(low, C, (N,), generator=g)
    t[[1, 5]] = -100
    return h, t


def _build(cls, options, seed=0):
    torch.manual_seed(seed)
    head = cls(D, C, **options).double()
    if "full_softmax_steps" in options:
        head.training_step = 0
    return head


def _compare(head, vp, h, t, start, stop, reduction):
    """Loss and every gradient of ``vp`` (this rank's shard) against the one-process ``head``."""
    results = []
    for model in (head, vp):
        x = h.clone().requires_grad_()
        torch.manual_seed(7)  # the samplers' draws
        loss = model(x, t)
        upstream = torch.arange(1.0, N + 1, dtype=torch.float64) if reduction == "none" else torch.ones(())
        (loss * upstream).sum().backward()
        results.append((loss.detach(), x.grad, model.weight.grad, None if model.bias is None else model.bias.grad))
    (loss, gh, gw, gb), (vloss, vgh, vgw, vgb) = results
    assert_close(vloss, loss)
    assert_close(vgh, gh)
    assert_close(vgw, gw[start:stop])
    if gb is not None:
        assert_close(vgb, gb[start:stop])


def _check_inference(head, vp, h, t):
    head.eval(), vp.eval()
    with torch.no_grad():
        assert_close(vp(h, t), head(h, t))
        assert_close(vp.log_probs(h), head.log_probs(h))
        assert torch.equal(vp.predict(h), head.predict(h))
        for exclude in (None, [1, 4]):
            values, ids = vp.topk_log_probs(h, 4, exclude=exclude)
            ref_values, ref_ids = head.topk_log_probs(h, 4, exclude=exclude)
            assert_close(values, ref_values)
            finite = ref_values.isfinite()  # ids of −inf entries are unspecified (OutputHead.topk_log_probs)
            assert torch.equal(ids[finite], ref_ids[finite])
        classes = t.clamp(min=0)[:, None]
        assert_close(vp.class_log_probs(h, classes), head.class_log_probs(h, classes))
        assert_close(vp.class_log_probs(h, [0, 6, 10]), head.class_log_probs(h, [0, 6, 10]))


def check_heads_equal_one_process(rank, world_size):
    start, stop = SPANS[world_size][rank]
    shard = VocabShard(start, stop)
    for away in (False, True):
        h, t = _inputs(SPANS[world_size], away_from_first=away)
        for cls, options in LOGIT_CASES.values():
            for eps, reduction, chunk in LOGIT_SETTINGS:
                opts = dict(options, label_smoothing=eps, reduction=reduction, chunk_size=chunk)
                head, vp = _build(cls, opts), VocabParallelHead(_build(cls, opts), shard)
                _compare(head, vp, h, t, start, stop, reduction)
            _check_inference(head, vp, h, t)
        for options in SAMPLED_CASES.values():
            for reduction in ("mean", "none"):
                opts = dict(options(), reduction=reduction)
                head, vp = _build(SampledSoftmaxHead, opts), VocabParallelHead(_build(SampledSoftmaxHead, opts), shard)
                _compare(head, vp, h, t, start, stop, reduction)
            _check_inference(head, vp, h, t)


def check_sampled_distributions(rank, world_size):
    """Kernel and softmax samplers: per-shard draws of the one-process q̃, the same on every rank."""
    start, stop = SPANS[world_size][rank]
    shard = VocabShard(start, stop)
    torch.manual_seed(0)
    weight = torch.randn(C, D, dtype=torch.float64) * 0.5
    h = torch.randn(2, D, dtype=torch.float64)
    t = torch.tensor([2, 9])
    for sampler, full in ((QuadraticKernelSampler(alpha=10.0, leaf_size=2), QuadraticKernelSampler(alpha=10.0, leaf_size=2)),
                          (SoftmaxSampler(), SoftmaxSampler())):
        sampler.refresh(weight[start:stop]), full.refresh(weight)
        torch.manual_seed(1)
        ids, log_q = draw_negatives(sampler, h, weight[start:stop], None, t, 4000, shard)
        every = [torch.empty_like(ids) for _ in range(world_size)]
        dist.all_gather(every, ids)
        assert all(torch.equal(e, ids) for e in every)
        assert not bool((ids == t[:, None]).any())
        assert_close(log_q.double(), full.log_prob(h, weight, ids, exclude=t).double(), atol=1e-5, rtol=1e-5)
        all_ids = torch.arange(C).expand(2, C)
        q = full.log_prob(h, weight, all_ids, exclude=t).double().exp()  # (2, C)
        freq = torch.stack([torch.bincount(row, minlength=C) for row in ids]).double() / ids.shape[1]
        assert float((freq - q).abs().sum(dim=1).max()) / 2 < 0.05  # total variation, ~0.02 expected at 4000 draws
    # The kernel-sampled head: its loss and gradients are the one-process ones for the same draws.
    torch.manual_seed(0)
    full_head = SampledSoftmaxHead(D, C, sampler=QuadraticKernelSampler(leaf_size=2), num_samples=3).double()
    torch.manual_seed(0)
    vp = VocabParallelHead(SampledSoftmaxHead(D, C, sampler=QuadraticKernelSampler(leaf_size=2), num_samples=3).double(), shard)
    hidden, target = _inputs(SPANS[world_size], away_from_first=False)
    x = hidden.clone().requires_grad_()
    torch.manual_seed(2)
    vp(x, target).backward()
    keep = target != -100
    vp.head.sampler.refresh(vp.weight.detach())
    torch.manual_seed(2)
    neg, log_q = draw_negatives(vp.head.sampler, hidden[keep], vp.weight.detach(), None, target[keep], 3, shard)
    y = hidden.clone().requires_grad_()
    cand = torch.cat([target[keep][:, None], neg], dim=1)
    logits = (y[keep][:, None, :] * full_head.weight[cand]).sum(-1)  # (n, 1 + m)
    logits = torch.cat([logits[:, :1], logits[:, 1:] - log_q.double() - math.log(3)], dim=1)
    (logits.logsumexp(dim=1) - logits[:, 0]).mean().backward()
    assert_close(x.grad, y.grad)
    assert_close(vp.weight.grad, full_head.weight.grad[start:stop])
    # The exact softmax sampler's sampled loss is the full cross-entropy for every draw (Blanc & Rendle 2018).
    torch.manual_seed(0)
    full_head = SampledSoftmaxHead(D, C, sampler=SoftmaxSampler(), num_samples=3, bias=True, reduction="none").double()
    with torch.no_grad():
        full_head.bias.normal_()
    torch.manual_seed(0)
    vp = VocabParallelHead(SampledSoftmaxHead(D, C, sampler=SoftmaxSampler(), num_samples=3, bias=True,
                                              reduction="none").double(), shard)
    with torch.no_grad():
        vp.bias.copy_(full_head.bias[start:stop])
    hidden, target = _inputs(SPANS[world_size], away_from_first=False)
    expected = torch.nn.functional.cross_entropy(full_head.logits(hidden), target, reduction="none")
    assert_close(vp(hidden, target), expected)


def check_kd_equals_one_process(rank, world_size):
    start, stop = SPANS[world_size][rank]
    shard = VocabShard(start, stop)
    g = torch.Generator().manual_seed(5)
    student, teacher = torch.randn(N, C, dtype=torch.float64, generator=g), torch.randn(N, C, dtype=torch.float64, generator=g)
    student[::2] *= 500  # every other row far apart: centred differences past ln(largest float64), the log-space rows
    teacher[::2] *= 500
    for reduction, correction in (("mean", True), ("sum", True), ("none", True), ("mean", False)):
        full_s, full_t = student.clone().requires_grad_(), teacher.clone().requires_grad_()
        part_s, part_t = student[:, start:stop].clone().requires_grad_(), teacher[:, start:stop].clone().requires_grad_()
        loss = stable_kd_loss(full_s, full_t, temperature=2.0, reduction=reduction, zero_sum_correction=correction)
        part = vocab_parallel_stable_kd_loss(part_s, part_t, shard, temperature=2.0, reduction=reduction,
                                             zero_sum_correction=correction)
        assert_close(part, loss)
        upstream = torch.arange(1.0, N + 1, dtype=torch.float64) if reduction == "none" else 1.0
        (loss * upstream).sum().backward()
        (part * upstream).sum().backward()
        assert_close(part_s.grad, full_s.grad[:, start:stop])
        assert_close(part_t.grad, full_t.grad[:, start:stop])
    same = student[:, start:stop].clone().requires_grad_()
    vocab_parallel_stable_kd_loss(same, student[:, start:stop].clone(), shard).backward()
    assert bool((same.grad == 0).all())  # identical logits: exactly zero, as the one-process form


def check_errors(rank, world_size):
    def raises(match, start, stop, num_classes=C, group=None):
        with pytest.raises(ValueError, match=match):
            VocabShard(start, stop, group).check(num_classes)

    raises("do not tile.*a gap at class 5", *[(0, 5), (6, 11)][rank])
    raises("do not tile.*an overlap at class 5", *[(0, 6), (5, 11)][rank])
    raises(r"do not tile \[0, 11\): they end at 10", *[(0, 5), (5, 10)][rank])
    raises("disagree on the number of classes", *[(0, 5), (5, 11)][rank], num_classes=[11, 12][rank])
    raises(r"shard \[5, 3\) must be a non-empty range", 5, 3)
    only_first = dist.new_group([0])  # a group without rank 1: the shards are cut for the other
    if rank == 0:
        raises(r"do not tile \[0, 11\): they end at 5", 0, 5, group=only_first)
    else:
        raises("not a member of the shard's process group", 5, 11, group=only_first)
    with pytest.raises(TypeError, match="AdaptiveSoftmaxHead has no vocabulary-parallel form.*clusters"):
        VocabParallelHead(AdaptiveSoftmaxHead(D, C, cutoffs=[4]), VocabShard(0, C))
    with pytest.raises(TypeError, match="CentredQuadraticKernelSampler has no vocabulary-parallel form"):
        VocabParallelHead(SampledSoftmaxHead(D, C, sampler=CentredQuadraticKernelSampler(), num_samples=2),
                          VocabShard(0, C))


CHECKS = [check_heads_equal_one_process, check_sampled_distributions, check_kd_equals_one_process, check_errors]


def check_all(rank, world_size):
    for check in CHECKS:
        check(rank, world_size)


def test_two_ranks(tmp_path):
    """Every check in one group of 2 processes (the processes' start-up is most of the time)."""
    run_ranks(check_all, 2, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("check", CHECKS[:3])
def test_four_ranks(check, tmp_path):
    run_ranks(check, 4, tmp_path)
