"""The sparse head's sparse backward (``losses/machinery/sparse_linear.py``): where it is chosen, and that it is the dense path.

The dense path is the head's logits through ``F.linear`` and the row loss's whole (N, C) gradient
(``LinearHead.forward``, which autograd carries through the two GEMMs). Every comparison is to float64
precision, on the plain (``chunk_size=None``) and the chunked path, with ignored rows in every batch.
"""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from torch.testing import assert_close

from softmax_zoo.losses import SparseSoftmaxHead, linear_cross_entropy
from softmax_zoo.losses.machinery import chunked as chunked_module
from softmax_zoo.losses.machinery import sparse_linear
from softmax_zoo.losses.machinery.head import LinearHead
from softmax_zoo.losses.machinery.row_loss import SparseGrad
from softmax_zoo.losses.methods.sparse import SparseRows
from softmax_zoo.losses.parallel.vocab_parallel import VocabShard
from softmax_zoo.losses.parallel.vocab_parallel_head import VocabParallelHead
from softmax_zoo.losses.reference.logits import REDUCTIONS

from .ranks import run_ranks

N, D, C, K = 13, 6, 17, 4
# Every option that keeps the gradient at k + 1 nonzeros a row (class_weight: a (C,) tensor, built per test).
SPARSE_OPTIONS = {
    "paper": {},
    "smoothing": {"label_smoothing": 0.2},
    "target-in-support": {"target_in_support": True, "label_smoothing": 0.1},
    "all-classes-without-smoothing": {"smoothing_over": "all", "target_in_support": True},
    "z-loss": {"z_loss": 0.05, "label_smoothing": 0.1},
    "softcap": {"softcap": 2.0, "label_smoothing": 0.1},
    "class-weight": {"class_weight": "random"},
    "returns": {"return_lse": True, "return_token_accuracy": True, "z_loss": 0.01},
}
DENSE_OPTIONS = {  # an option or phase that spreads the gradient over every class
    "smoothing-over-all": {"smoothing_over": "all", "label_smoothing": 0.1},
    "k=C": {"k": C},
    "full-softmax-steps": {"full_softmax_steps": 3},
}


def _options(options: dict, gen: torch.Generator) -> dict:
    if options.get("class_weight") == "random":
        return dict(options, class_weight=torch.rand(C, generator=gen, dtype=torch.float64) + 0.1)
    return options


def _head(options: dict, chunk_size, reduction="mean", *, k=K, gen=None) -> SparseSoftmaxHead:
    torch.manual_seed(0)
    opts = {"k": k, **_options(options, gen or torch.Generator().manual_seed(1))}
    head = SparseSoftmaxHead(D, C, chunk_size=chunk_size, reduction=reduction, **opts).double()
    torch.nn.init.normal_(head.bias, std=0.5)
    if "full_softmax_steps" in options:
        head.training_step = 0  # in the warm-up: the full softmax
    return head


def _inputs(gen, n=N, scale=1.5):
    h = torch.randn(n, D, dtype=torch.float64, generator=gen) * scale
    t = torch.randint(0, C, (n,), generator=gen)
    t[::5] = -100
    return h, t


def _loss(out):
    return out.loss if isinstance(out, tuple) else out


def _step(forward, head, h, t, upstream=None):
    """Loss and the gradients of hidden, weight and bias of one backward (``upstream``: reduction="none"'s weights)."""
    x = h.clone().requires_grad_()
    head.zero_grad(set_to_none=True)
    loss = _loss(forward(x, t))
    (loss.sum() if upstream is None else (loss * upstream).sum()).backward()
    return loss.detach(), x.grad, head.weight.grad, None if head.bias is None else head.bias.grad


def _dense(head):
    return lambda x, t: LinearHead.forward(head, x, t)


@pytest.fixture
def sparse_calls(monkeypatch):
    """The number of chunks whose gradients ``sparse_linear_grads`` made, in a list (one entry a call)."""
    calls = []
    real = chunked_module.sparse_linear_grads
    monkeypatch.setattr(chunked_module, "sparse_linear_grads", lambda *a: calls.append(1) or real(*a))
    return calls


@pytest.mark.parametrize("chunk_size", [None, 4])
@pytest.mark.parametrize("case", [*SPARSE_OPTIONS, *DENSE_OPTIONS])
def test_the_sparse_backward_is_chosen_where_the_gradient_is_sparse(case, chunk_size, sparse_calls, gen):
    head = _head({**SPARSE_OPTIONS, **DENSE_OPTIONS}[case], chunk_size)
    h, t = _inputs(gen)
    _step(head, head, h, t)
    sparse = case in SPARSE_OPTIONS
    assert head.row_loss_with_options().has_sparse_grad is sparse
    assert len(sparse_calls) == (0 if not sparse else 1 if chunk_size is None else -(-N // chunk_size))


def test_has_sparse_grad_of_the_row_loss():
    assert SparseRows(3).has_sparse_grad and SparseRows(3, 0.1, target_in_support=True).has_sparse_grad
    assert SparseRows(3, 0.0, smoothing_over="all").has_sparse_grad  # nothing spread without smoothing
    assert not SparseRows(3, 0.1, smoothing_over="all").has_sparse_grad


@pytest.mark.parametrize("chunk_size", [None, 4])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", SPARSE_OPTIONS)
def test_equals_the_dense_path_in_float64(case, reduction, chunk_size, gen):
    head = _head(SPARSE_OPTIONS[case], chunk_size, reduction)
    h, t = _inputs(gen)
    upstreams = [None] if reduction != "none" else [None, torch.linspace(-1.0, 2.0, N, dtype=torch.float64)]
    for upstream in upstreams:  # reduction="none": loss.sum(), and per-row weights (the chunked pass reruns)
        got, want = _step(head, head, h, t, upstream), _step(_dense(head), head, h, t, upstream)
        for a, b in zip(got, want):
            assert_close(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("scatter_elements", [1, 3 * N * D, sparse_linear.SCATTER_ELEMENTS])
def test_blocks_of_index_columns(scatter_elements, gen, monkeypatch):
    """The scatter's blocks of index columns (one column, a few, all of them) give the same gradients."""
    monkeypatch.setattr(sparse_linear, "SCATTER_ELEMENTS", scatter_elements)
    head = _head({"target_in_support": True, "label_smoothing": 0.1}, None)
    h, t = _inputs(gen)
    for a, b in zip(_step(head, head, h, t), _step(_dense(head), head, h, t)):
        assert_close(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("k", [1, 2, C - 1, C])
@pytest.mark.parametrize("chunk_size", [None, 3])
def test_k_from_1_to_c(k, chunk_size, gen):
    head = _head({"label_smoothing": 0.1}, chunk_size, k=k)
    h, t = _inputs(gen)
    for a, b in zip(_step(head, head, h, t), _step(_dense(head), head, h, t)):
        assert_close(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("chunk_size", [None, 3])
@pytest.mark.parametrize("options", [{}, {"target_in_support": True, "label_smoothing": 0.1}])
def test_ties_at_the_kth_logit(options, chunk_size, gen):
    """Small integer weights, hidden states and biases: logits that are integers, tied all along each row, at
    the k-th place too (checked); the top-k that both paths take of the same logits gives the same gradient."""
    head = _head(options, chunk_size)
    with torch.no_grad():
        head.weight.copy_(torch.randint(-1, 2, (C, D), generator=gen))
        head.bias.copy_(torch.randint(-1, 2, (C,), generator=gen))
    h = torch.randint(-1, 2, (N, D), generator=gen).double()
    t = torch.randint(0, C, (N,), generator=gen)
    z = head.logits(h).detach().sort(dim=1, descending=True).values
    assert bool((z[:, K - 1] == z[:, K]).sum() >= N // 2)  # most rows tie across the k-th place
    for a, b in zip(_step(head, head, h, t), _step(_dense(head), head, h, t)):
        assert_close(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("chunk_size", [None, 5])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", ["paper", "target-in-support", "softcap", "class-weight"])
def test_gradcheck_float64_of_linear_cross_entropy(case, reduction, chunk_size, gen):
    """``linear_cross_entropy(loss="sparse_softmax")``: the sparse backward's gradients of hidden, weight and bias."""
    h, t = _inputs(gen, n=7)
    w = torch.randn(C, D, dtype=torch.float64, generator=gen).requires_grad_()
    b = torch.randn(C, dtype=torch.float64, generator=gen).requires_grad_()
    opts = _options(SPARSE_OPTIONS[case], gen)

    def fn(hidden, weight, bias):
        return linear_cross_entropy(hidden, weight, t, bias=bias, loss="sparse_softmax", k=K, chunk_size=chunk_size,
                                    reduction=reduction, **opts)

    assert torch.autograd.gradcheck(fn, (h.requires_grad_(), w, b))


def test_linear_cross_entropy_takes_the_sparse_backward(sparse_calls, gen):
    h, t = _inputs(gen)
    w = torch.randn(C, D, dtype=torch.float64, generator=gen).requires_grad_()
    linear_cross_entropy(h, w, t, loss="sparse_softmax", k=K).backward()
    assert sparse_calls


@pytest.fixture
def deterministic():
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(before)


@pytest.mark.parametrize("blocks", [1, K + 1], ids=["one-block", "column-by-column"])
@pytest.mark.parametrize("bias", [True, False])
def test_deterministic_algorithms_take_the_sorted_segment_sum(bias, blocks, gen, monkeypatch, deterministic):
    """Under ``torch.use_deterministic_algorithms(True)`` the scatter is the sorted segment sum (index_add_ only
    at distinct classes), equal to the dense path and bit for bit the same run after run; many rows share a class."""
    if blocks > 1:
        monkeypatch.setattr(sparse_linear, "SCATTER_ELEMENTS", 1)  # one index column a block
    head = _head({"label_smoothing": 0.1}, 8)
    if not bias:
        head.bias = None
    h, t = _inputs(gen, n=40)
    t[t >= 0] = 3  # every kept target the same class: many pairs of one class in each index column
    segments = []
    real = sparse_linear._segment_sum_
    monkeypatch.setattr(sparse_linear, "_segment_sum_", lambda *a: segments.append(1) or real(*a))
    runs = [_step(head, head, h, t) for _ in range(2)]
    assert len(segments) == 2 * 5 * blocks  # 2 runs × 5 chunks × the blocks of (k + 1) index columns
    assert all(a is b is None or torch.equal(a, b) for a, b in zip(*runs))
    torch.use_deterministic_algorithms(False)
    assert_close(runs[0], _step(_dense(head), head, h, t), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("chunk_size", [None, 64])
def test_autocast_as_close_as_the_dense_path(dtype, chunk_size):
    """Under CPU autocast the sparse backward's gradients are as close to float32's as the dense path's are
    (it gathers the float32 weight, where the dense path multiplies rounded copies)."""
    gen = torch.Generator().manual_seed(0)
    n, d, c = 256, 32, 1000
    head = SparseSoftmaxHead(d, c, k=20, chunk_size=chunk_size, label_smoothing=0.1)
    h, t = torch.randn(n, d, generator=gen), torch.randint(0, c, (n,), generator=gen)
    exact = _step(_dense(head), head, h, t)  # float32, no autocast
    with torch.autocast("cpu", dtype=dtype):
        sparse, dense = _step(head, head, h, t), _step(_dense(head), head, h, t)
    for got, ref, want in zip(sparse[1:], dense[1:], exact[1:]):
        error, dense_error = ((x.float() - want).norm() / want.norm() for x in (got, ref))
        # within the dense path's own error, with 10% slack: the two sum the same products in another order
        assert error <= max(1.1 * dense_error, 1e-3), f"sparse {error:.2e}, dense {dense_error:.2e}"
        assert dense_error < 0.05
    assert_close(sparse[0], dense[0], rtol=1.6e-2, atol=1e-5)


def check_vocab_parallel_sparse_backward(rank, world_size):
    """Each rank's sparse gradient of the vocabulary-parallel head, plain (one chunk of all N rows) and
    chunked: the global top-k's members it owns, equal to one process's dense path."""
    calls = []
    real = chunked_module.sparse_linear_grads
    chunked_module.sparse_linear_grads = lambda *a: calls.append(1) or real(*a)
    start, stop = [(0, 3), (3, C)][rank]  # one shard narrower than k
    gen = torch.Generator().manual_seed(0)
    h, t = _inputs(gen)
    for chunk_size in (None, 4):
        for options in ({}, {"label_smoothing": 0.2, "target_in_support": True}):
            for reduction in REDUCTIONS:
                upstream = torch.linspace(-1.0, 2.0, N, dtype=torch.float64) if reduction == "none" else None
                head = _head(options, chunk_size, reduction)
                want = _step(_dense(head), head, h, t, upstream)
                vp = VocabParallelHead(_head(options, chunk_size, reduction), VocabShard(start, stop))
                calls.clear()
                got = _step(vp, vp, h, t, upstream)
                passes = 2 if reduction == "none" else 1  # unequal row weights: the backward reruns the pass
                assert len(calls) == passes * (1 if chunk_size is None else -(-N // chunk_size))
                assert_close(got[0], want[0], rtol=1e-12, atol=1e-14)
                assert_close(got[1], want[1], rtol=1e-12, atol=1e-14)
                assert_close(got[2], want[2][start:stop], rtol=1e-12, atol=1e-14)
                assert_close(got[3], want[3][start:stop], rtol=1e-12, atol=1e-14)
    dist.barrier()


def test_vocab_parallel_sparse_backward_on_two_ranks(tmp_path):
    run_ranks(check_vocab_parallel_sparse_backward, 2, tmp_path)


def test_the_scatter_writes_its_temporary_into_the_scratch_buffer(gen):
    """Given the chunk's logits buffer, the scatter's (rows, columns, d) temporary lives there: the same gradients, and
    the buffer overwritten (without one, a fresh temporary)."""
    r, m, c = 6, 5, 40
    g = SparseGrad(torch.randint(0, c, (r, m), generator=gen), torch.randn(r, m, generator=gen, dtype=torch.float64))
    h, w = torch.randn(r, D, generator=gen, dtype=torch.float64), torch.randn(c, D, generator=gen, dtype=torch.float64)
    results = []
    for scratch in (None, torch.zeros(r, c, dtype=torch.float64)):
        gh, gw, gb = torch.empty(r, D, dtype=torch.float64), torch.zeros(c, D, dtype=torch.float64), torch.zeros(c, dtype=torch.float64)
        sparse_linear.sparse_linear_grads(g, h, w, gh, gw, gb, scratch)
        results.append((gh, gw, gb))
    assert bool(scratch.ne(0).any())
    dense = torch.zeros(r, c, dtype=torch.float64).scatter_add_(1, g.index, g.values)
    for got in results:
        assert_close(got, (dense @ w, dense.T @ h, dense.sum(0)), rtol=1e-12, atol=1e-14)


def test_the_old_name_of_row_loss_with_options_warns_and_gives_the_same_rows():
    head = SparseSoftmaxHead(4, 10, k=3)
    with pytest.warns(DeprecationWarning, match="row_loss_with_options"):
        old = head.loss_rows()
    assert type(old) is type(head.row_loss_with_options()) and old.has_sparse_grad == head.row_loss_with_options().has_sparse_grad
