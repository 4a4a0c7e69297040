"""Device memory of the heads: the chunk budget per device (a CPU keeps 2^24 logits), and buffers that
cannot fit the free memory refused before they are allocated, with their sizes; lm1b's paper-scale
sampled arms against a 141 GB GPU."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import QuadraticKernelSampler, SoftmaxHead
from softmax_zoo.losses.machinery import memory
from softmax_zoo.losses.machinery._core import CHUNK_LOGITS
from softmax_zoo.losses.machinery.chunked import auto_chunk_size
from softmax_zoo.losses.methods.sampled import candidate_logits
from softmax_zoo.losses.reference.sampled import kernel_probs

H200 = 141e9  # bytes


def test_cpu_chunk_budget_is_unchanged():
    assert memory.chunk_logits(torch.device("cpu")) == CHUNK_LOGITS == 1 << 24
    assert auto_chunk_size(4096, 32_000, memory.chunk_logits(torch.device("cpu"))) == 512


@pytest.mark.parametrize(("free_gib", "budget"), [(140, 1 << 30), (16, 1 << 28), (1, 1 << 24), (0.5, 1 << 24)])
def test_gpu_chunk_budget_follows_free_memory(monkeypatch, free_gib, budget):
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (int(free_gib * 2**30), 141 * 10**9))
    assert memory.chunk_logits(torch.device("cuda")) == budget
    if free_gib == 140:  # an empty H200: a C=128,000 batch of 8,192 rows in one chunk, 7 chunks of 1,171 rows (1,353 fit) at lm1b's C
        assert auto_chunk_size(8192, 128_000, budget) == 8192 and auto_chunk_size(8192, 793_471, budget) == 1171


def test_a_tree_that_cannot_fit_is_refused_with_its_size(monkeypatch):
    monkeypatch.setattr(memory, "free_bytes", lambda device: 2**20)
    with pytest.raises(torch.OutOfMemoryError, match=r"quadratic-kernel tree for C=20,000, d=32 .* needs 0.0 GiB, cpu has 0.0 GiB free"):
        QuadraticKernelSampler().refresh(torch.randn(20_000, 32))


def test_lm1b_paper_tree_cannot_fit_an_h200():
    """lm1b paper scale (C=793,471, d=2,048): 16,464 node sums of 16 MiB (257.3 GiB) and the tree's copy of the rows (6.1 GiB).
    The dense level's 775 nodes are rounded up to 784, a multiple of 16: 784 · (16 + 4 + 1) node sums."""
    sampler = QuadraticKernelSampler()
    assert sampler.level_sizes(793_471) == [784 * 16, 784 * 4, 784]
    tree = sampler.tree_bytes(793_471, 2048)
    assert tree / 2**30 == pytest.approx(257.3 + 6.1, abs=0.1) and tree > H200
    # one level of 784 nodes (775 leaves rounded up)
    assert QuadraticKernelSampler(leaf_size=1024).tree_bytes(793_471, 2048) / 2**30 == pytest.approx(18.4, abs=0.1)


def test_dense_level_is_aligned_only_within_top_nodes():
    """The dense level rounds up to a multiple of 16 where that stays within top_nodes, else keeps its own count."""
    assert QuadraticKernelSampler().level_sizes(500_000) == [496 * 16, 496 * 4, 496]
    assert QuadraticKernelSampler(leaf_size=4, top_nodes=2).level_sizes(30) == [8, 2]
    assert QuadraticKernelSampler(leaf_size=8, top_nodes=20).level_sizes(150) == [19]


def test_top_level_in_row_chunks_keeps_log_q_exact(monkeypatch):
    """The dense top level's h⊗h in chunks of 3 rows: the draws' log q is still the exact kernel's."""
    monkeypatch.setattr(memory, "chunk_logits", lambda device: 3 * 16 * 16)
    gen = torch.Generator().manual_seed(0)
    hidden, weight, target = torch.randn(10, 16, generator=gen), torch.randn(5000, 16, generator=gen), torch.arange(10)
    sampler = QuadraticKernelSampler(leaf_size=8, top_nodes=64)
    ids, log_q = sampler.sample(hidden, weight, 32, exclude=target)
    exact = kernel_probs(hidden, weight, sampler.alpha, target).log().gather(1, ids)
    torch.testing.assert_close(log_q.double(), exact, rtol=0, atol=1e-5)


def test_large_m_and_d_take_the_gemm_path(monkeypatch):
    """n·(1 + m)·d gathered values against n·U logits: with d = 128 the (n, U) GEMM is the smaller, and taken."""
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1)  # every path refused: the message names the one taken
    n, m, d, classes = 100, 3, 128, 100_000  # U ≈ 398 > 64·(1 + m) = 256, the speed rule's bound; < (1 + m)·d = 512
    gen = torch.Generator().manual_seed(0)
    cand = torch.randint(0, classes, (n, 1 + m), generator=gen)
    with pytest.raises(torch.OutOfMemoryError, match=r"\(100, 3\d\d\) candidate logits"):
        candidate_logits(torch.randn(n, d), torch.randn(classes, d), cand)
    with pytest.raises(torch.OutOfMemoryError, match=r"\(100, 4, 16\) gathered rows"):  # small d: the gather
        candidate_logits(torch.randn(n, 16), torch.randn(classes, 16), cand)


def test_lm1b_paper_uniform_arm_fits_by_the_gemm_path():
    """lm1b paper scale (n = 128 × 20 tokens, m = 8,192, d = 2,048, C = 793,471), by arithmetic: the
    uniform arm's draws cover nearly every class, and the (n, U) logits (7.6 GiB) replace the 160 GiB gather."""
    n, m, d, classes = 2560, 8192, 2048, 793_471
    distinct = classes * (1 - (1 - 1 / classes) ** (n * m))  # expected U
    assert 4 * n * (1 + m) * d / 2**30 == pytest.approx(160.0, abs=0.1)
    assert distinct < (1 + m) * d and 4 * n * distinct / 2**30 == pytest.approx(7.6, abs=0.1)


def test_cpu_chunks_have_at_least_d_rows():
    """At a large C the 2^24 budget would leave chunks of fewer rows than d; a CPU takes d rows (a buffer
    the size of the (C, d) weight gradient), and the head's stated step buffer is that chunk's."""
    c, d = 128_000, 512
    assert CHUNK_LOGITS // c == 131
    assert auto_chunk_size(4096, c, memory.chunk_logits(torch.device("cpu"), c * d)) == 512
    assert auto_chunk_size(4096, 32_000, memory.chunk_logits(torch.device("cpu"), 32_000 * d)) == 512  # the budget's own
    with torch.device("meta"):
        head = SoftmaxHead(d, c, chunk_size="auto")
    assert head.step_buffers(4096) == {f"one chunk's (512, {c:,}) logits x {memory.LOGIT_BUFFERS}": memory.logits_bytes(512, c)}
