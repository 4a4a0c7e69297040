"""The vocabulary-parallel autograd Functions in one process (a one-process gloo group): float64
gradcheck, and values and gradients equal to the one-process losses they shard."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch.testing import assert_close

from softmax_zoo.losses import softmax_cross_entropy, sparse_softmax_cross_entropy, stable_cross_entropy, stable_kd_loss
from softmax_zoo.losses.methods.softmax import SoftmaxRows
from softmax_zoo.losses.parallel.vocab_parallel import (
    VocabShard,
    copy_to_shards,
    reduce_from_shards,
    shard_row_loss,
    vocab_parallel_cross_entropy,
    vocab_parallel_linear_cross_entropy,
)
from softmax_zoo.losses.parallel.vocab_parallel_kd import vocab_parallel_stable_kd_loss

from .ranks import single_process_group

C, D, N = 7, 3, 5
# case -> (the variant's name, its plain function on logits, the keywords both take)
VARIANTS = {
    "softmax": ("softmax", softmax_cross_entropy, {"label_smoothing": 0.1}),
    "stable": ("stable_softmax", stable_cross_entropy, {"label_smoothing": 0.1}),
    "sparse": ("sparse_softmax", sparse_softmax_cross_entropy, {"k": 3, "label_smoothing": 0.1}),
    "sparse-options": ("sparse_softmax", sparse_softmax_cross_entropy,
                       {"k": 3, "label_smoothing": 0.1, "smoothing_over": "all", "target_in_support": True}),
}


@pytest.fixture(scope="module")
def group(tmp_path_factory):
    single_process_group(tmp_path_factory.mktemp("store"))
    yield None
    dist.destroy_process_group()


def _inputs():
    g = torch.Generator().manual_seed(0)
    h = torch.randn(N, D, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(C, D, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(C, dtype=torch.float64, generator=g, requires_grad=True)
    t = torch.tensor([0, 3, -100, 6, 2])
    return h, w, b, t


@pytest.mark.parametrize("chunk_size", [None, 2])
@pytest.mark.parametrize("case", VARIANTS)
def test_sharded_row_losses(group, case, chunk_size):
    """The variant by its name and keywords, the plain function's names: gradcheck, and values and
    gradients equal to that function's on the whole logits."""
    name, plain, options = VARIANTS[case]
    h, w, b, t = _inputs()
    shard = VocabShard(0, C)

    def sharded(h, w, b, reduction="sum"):
        return vocab_parallel_linear_cross_entropy(h, w, t, shard, C, bias=b, loss=name, chunk_size=chunk_size,
                                                   reduction=reduction, **options)

    assert torch.autograd.gradcheck(sharded, (h, w, b))
    logits = torch.nn.functional.linear(h, w, b)
    expected = plain(logits, t, reduction="none", **options)
    got = sharded(h, w, b, reduction="none")
    assert_close(got, expected)
    upstream = torch.arange(1.0, N + 1, dtype=torch.float64)
    assert_close(torch.autograd.grad((got * upstream).sum(), (h, w, b)),
                 torch.autograd.grad((expected * upstream).sum(), (h, w, b)))
    z = logits.detach().requires_grad_(True)  # on given logits
    assert torch.autograd.gradcheck(lambda z: vocab_parallel_cross_entropy(z, t, shard, C, loss=name, reduction="sum",
                                                                           **options), (z,))
    assert_close(vocab_parallel_cross_entropy(z, t, shard, C, loss=name, reduction="none", **options), expected)


@pytest.mark.parametrize("scale", [1.0, 500.0])  # 500: centred differences past ln(largest float64), the log-space rows
def test_stable_kd(group, scale):
    g = torch.Generator().manual_seed(1)
    s = (torch.randn(N, C, dtype=torch.float64, generator=g) * scale).requires_grad_(True)
    t = (torch.randn(N, C, dtype=torch.float64, generator=g) * scale).requires_grad_(True)
    shard = VocabShard(0, C)
    assert torch.autograd.gradcheck(lambda s, t: vocab_parallel_stable_kd_loss(s, t, shard, temperature=2.0), (s, t))
    got = vocab_parallel_stable_kd_loss(s, t, shard, temperature=2.0, reduction="none")
    expected = stable_kd_loss(s, t, temperature=2.0, reduction="none")
    assert_close(got, expected)
    assert_close(torch.autograd.grad(got.sum(), (s, t)), torch.autograd.grad(expected.sum(), (s, t)))


def test_copy_and_reduce(group):
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: copy_to_shards(x, None) * 2, (x,))
    assert torch.autograd.gradcheck(lambda x: reduce_from_shards(x, None) * 2, (x,))


def test_unsupported_row_loss_options_are_refused(group):
    rows = SoftmaxRows(0.1)
    rows.z_loss = 0.0  # an option the sharded form does not know, off: harmless
    assert shard_row_loss(rows, VocabShard(0, C), C).label_smoothing == 0.1
    rows.z_loss = 1e-4
    with pytest.raises(ValueError, match=r"SoftmaxRows options \['z_loss'\] have no vocabulary-parallel form"):
        shard_row_loss(rows, VocabShard(0, C), C)


@pytest.mark.parametrize("option", [{"z_loss": 1e-4}, {"softcap": 30.0}, {"class_weight": [1.0] * 12}, {"return_lse": True}])
def test_a_head_with_loss_options_is_refused_by_name(group, option):
    """The options need the log-normaliser or the prediction across every shard: refused, naming them."""
    from softmax_zoo.losses import SoftmaxHead, VocabParallelHead, VocabShard

    head = SoftmaxHead(4, 12, **option)
    with pytest.raises(ValueError, match=next(iter(option))):
        VocabParallelHead(head, VocabShard(0, 12))
