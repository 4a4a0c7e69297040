"""vocab_parallel_linear_kd_loss on 2 and 3 gloo ranks (uneven shards) against linear_kd_loss on one process,
values and gradients for every divergence, teacher form, reduction and class chunking; float64 gradcheck on one."""

from __future__ import annotations

import itertools

import pytest
import torch
import torch.distributed as dist
from torch.testing import assert_close

from softmax_zoo.losses import VocabShard, linear_kd_loss, vocab_parallel_linear_kd_loss

from .ranks import run_ranks, single_process_group

C, D, N, K = 11, 4, 9, 4
SPANS = {2: [(0, 3), (3, 11)], 3: [(0, 5), (5, 6), (6, 11)]}
DIVERGENCES = [("forward_kl", 0.5), ("reverse_kl", 0.5), ("jsd", 0.3)]
# (reduction, chunk_size, class_chunk_size)
SETTINGS = [("mean", "auto", None), ("sum", 4, 2), ("none", 3, None), ("none", 4, 3)]


def _inputs(scale: float = 2.0):
    g = torch.Generator().manual_seed(5)
    h, w, b = (torch.randn(*s, dtype=torch.float64, generator=g) for s in ((N, D), (C, D), (C,)))
    th, tw, tb = (torch.randn(*s, dtype=torch.float64, generator=g) for s in ((N, D + 2), (C, D + 2), (C,)))
    h, th = h * scale, th * scale
    ids = torch.stack([torch.randperm(C, generator=g)[:K] for _ in range(N)])
    target = torch.randint(0, C, (N,), generator=g)
    target[[1, 5]] = -100
    return h, w, b, th, tw, tb, ids, target


def _teachers(th, tw, tb, ids, start, stop):
    """Each teacher form: (the one-process keywords, this rank's keywords)."""
    logits = th @ tw.T + tb
    return {
        "logits": (dict(teacher_logits=logits), dict(teacher_logits=logits[:, start:stop])),
        "hidden": (dict(teacher_hidden=th, teacher_weight=tw, teacher_bias=tb),
                   dict(teacher_hidden=th, teacher_weight=tw[start:stop], teacher_bias=tb[start:stop])),
        "topk": (dict(teacher_topk=(ids, logits.gather(1, ids))),) * 2,
    }


def _run(fn, h, w, b, reduction):
    x, wp, bp = h.clone().requires_grad_(), w.clone().requires_grad_(), b.clone().requires_grad_()
    loss = fn(x, wp, bp)
    upstream = torch.arange(1.0, N + 1, dtype=torch.float64) if reduction == "none" else torch.ones(())
    (loss * upstream).sum().backward()
    return loss.detach(), x.grad, wp.grad, bp.grad


def check_equals_one_process(rank, world_size):
    start, stop = SPANS[world_size][rank]
    shard = VocabShard(start, stop)
    for scale in (2.0, 300.0):  # 300: far-apart rows, the log-space path
        h, w, b, th, tw, tb, ids, target = _inputs(scale)
        teachers = _teachers(th, tw, tb, ids, start, stop)
        for (div, beta), name, (reduction, rows, cols) in itertools.product(DIVERGENCES, teachers, SETTINGS):
            if name == "topk" and div != "forward_kl":
                continue
            one, mine = teachers[name]
            kw = dict(divergence=div, beta=beta, temperature=1.5, target=target, reduction=reduction)
            loss, gh, gw, gb = _run(lambda x, wp, bp: linear_kd_loss(x, wp, student_bias=bp, **one, **kw), h, w, b, reduction)
            part = _run(lambda x, wp, bp: vocab_parallel_linear_kd_loss(
                x, wp[start:stop], shard, C, student_bias=bp[start:stop], chunk_size=rows, class_chunk_size=cols,
                **mine, **kw), h, w, b, reduction)
            assert_close(part[0], loss, rtol=1e-10, atol=1e-9)
            assert_close(part[1], gh, rtol=1e-9, atol=1e-10)
            assert_close(part[2][start:stop], gw[start:stop], rtol=1e-9, atol=1e-10)
            assert_close(part[3][start:stop], gb[start:stop], rtol=1e-9, atol=1e-10)
            assert not part[2][:start].any() and not part[2][stop:].any()  # only this rank's rows
    # identical student and teacher: an exactly zero loss and gradient, as on one process
    h, w, b, *_ = _inputs()
    x, wp = h.float().requires_grad_(), w[start:stop].float().requires_grad_()
    loss = vocab_parallel_linear_kd_loss(x, wp, shard, C, teacher_hidden=x.detach(), teacher_weight=wp.detach(),
                                         class_chunk_size=2)
    loss.backward()
    assert loss.item() == 0 and not x.grad.any() and not wp.grad.any()


@pytest.mark.parametrize("world_size", [2, 3])
def test_equals_one_process(world_size, tmp_path):
    run_ranks(check_equals_one_process, world_size, tmp_path)


@pytest.mark.parametrize("divergence, beta, teacher", [("forward_kl", 0.5, "logits"), ("forward_kl", 0.5, "topk"),
                                                       ("reverse_kl", 0.5, "hidden"), ("jsd", 0.3, "hidden")])
def test_gradcheck_float64_one_rank(divergence, beta, teacher, tmp_path):
    single_process_group(tmp_path)
    try:
        h, w, b, th, tw, tb, ids, target = _inputs()
        mine = _teachers(th, tw, tb, ids, 0, C)[teacher][1]
        fn = lambda x, wp, bp: vocab_parallel_linear_kd_loss(  # noqa: E731
            x, wp, VocabShard(0, C), C, student_bias=bp, divergence=divergence, beta=beta, temperature=2.0,
            target=target, chunk_size=4, class_chunk_size=3, **mine)
        assert torch.autograd.gradcheck(fn, (h.requires_grad_(), w.requires_grad_(), b.requires_grad_()))
    finally:
        dist.destroy_process_group()


def test_weight_must_match_the_shard(tmp_path):
    single_process_group(tmp_path)
    try:
        with pytest.raises(ValueError, match=r"student_weight must be \(11, d\), the shard \[0, 11\), got \(10, 4\)"):
            vocab_parallel_linear_kd_loss(torch.zeros(3, 4), torch.zeros(10, 4), VocabShard(0, C), C,
                                          teacher_logits=torch.zeros(3, 11))
    finally:
        dist.destroy_process_group()
