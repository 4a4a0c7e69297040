"""Inference over class blocks (chunk_size set): predict, class_log_probs, topk_log_probs.

Against the plain heads (full matrix) and against textbook formulas, in float64, with class
blocks that do not divide C (C = 37), ties, NaN rows, excluded classes, and the memory bound
(no logits block larger than chunk_size × C).
"""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import AdaptiveSoftmaxHead
from softmax_zoo.losses.machinery import streaming
from softmax_zoo.losses.machinery.streaming import StreamingTopK, class_block_size, scan_classes, topk_lowest_index

from .conftest import logit_cases

D, C = 6, 37
VARIANTS = logit_cases(C)  # every registered logit-level variant
CHUNKS = [1, 3, 8, 100, "auto"]  # blocks of 3, 11 (2 · 37 // 7 ...), whole; see class_block_size


def make_pair(variant, chunk_size, dtype=torch.float64, bias=True):
    """(plain head, chunked head) sharing their parameters."""
    cls, extra = VARIANTS[variant]
    torch.manual_seed(0)
    plain = cls(D, C, bias=bias, **extra).to(dtype)
    if plain.bias is not None:
        torch.nn.init.normal_(plain.bias)
    lean = cls(D, C, weight=plain.weight, bias=bias, chunk_size=chunk_size, **extra).to(dtype)
    lean.bias = plain.bias
    return plain, lean


def hidden_of(gen, shape=(2, 5), dtype=torch.float64):
    return (torch.randn(*shape, D, generator=gen, dtype=torch.float64) * 3).to(dtype)


def logits_of(head, hidden):
    return hidden @ head.weight.T + (0 if head.bias is None else head.bias)


# --- the streaming primitives -------------------------------------------------------------------


@pytest.mark.parametrize("block", [1, 2, 5, C, C + 4])
@pytest.mark.parametrize("k", [1, 4, C])
def test_streaming_topk_equals_torch_topk(block, k, gen):
    values = torch.randn(9, C, generator=gen, dtype=torch.float64)
    top = StreamingTopK(k)
    for start in range(0, C, block):
        top.update(values[:, start : start + block], start)
    got, ids = top.result()
    ref, ref_ids = values.topk(k, dim=1)  # no ties among random floats
    assert torch.equal(got, ref) and torch.equal(ids, ref_ids)


@pytest.mark.parametrize("block", [1, 3, 4, C])
def test_streaming_topk_ties_go_to_the_lowest_id_whatever_the_block(block):
    values = torch.tensor([[0.0, 2.0, 1.0, 2.0, 2.0, 1.0, 2.0, 1.0]] * 2, dtype=torch.float64)
    values[1] = torch.tensor([float("-inf")] * 5 + [1.0, float("-inf"), 1.0], dtype=torch.float64)
    top = StreamingTopK(3)
    for start in range(0, values.shape[1], block):
        top.update(values[:, start : start + block], start)
    got, ids = top.result()
    assert ids.tolist() == [[1, 3, 4], [5, 7, 0]]
    assert got[0].tolist() == [2.0, 2.0, 2.0] and got[1].tolist() == [1.0, 1.0, float("-inf")]
    assert torch.equal(topk_lowest_index(values, 3)[1], ids)


@pytest.mark.parametrize("block", [1, 4, C])
def test_scan_logsumexp_and_nan_rows(block, gen):
    hidden = hidden_of(gen, (6,))
    weight = torch.randn(C, D, generator=gen, dtype=torch.float64)
    bias = torch.randn(C, generator=gen, dtype=torch.float64)
    bias[3] = float("-inf")
    hidden[2, 0] = float("nan")
    lse, [(values, ids)], nan = scan_classes(hidden, weight, bias, block, lse=True, tracks=[(2, None)])
    logits = hidden @ weight.T + bias
    torch.testing.assert_close(lse, logits.logsumexp(dim=1), rtol=1e-13, atol=0, equal_nan=True)
    assert nan.tolist() == [False, False, True, False, False, False]
    ok = ~nan
    ref, ref_ids = logits[ok].topk(2, dim=1)
    torch.testing.assert_close(values[ok], ref, rtol=1e-13, atol=0)
    assert torch.equal(ids[ok], ref_ids)


def test_class_block_size_keeps_chunk_size_times_c_logits():
    assert class_block_size(10, 37, 1) == 3  # 37 // 10
    assert class_block_size(10, 37, 3) == 11
    assert class_block_size(10, 37, 10) == 37  # N <= chunk_size: one block
    assert class_block_size(10**9, 37, 1) == 1
    assert class_block_size(40, 250_000, "auto") == 250_000  # decoding-sized N: one block


# --- the heads against their plain paths --------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("bias", [True, False])
def test_predict_equals_plain(variant, chunk_size, bias, gen):
    plain, lean = make_pair(variant, chunk_size, bias=bias)
    hidden = hidden_of(gen)
    pred = lean.predict(hidden)
    assert pred.shape == (2, 5)
    assert torch.equal(pred, plain.predict(hidden))
    assert torch.equal(pred, logits_of(plain, hidden).argmax(dim=-1))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk_size", CHUNKS)
def test_class_log_probs_equal_plain(variant, chunk_size, gen):
    plain, lean = make_pair(variant, chunk_size)
    hidden = hidden_of(gen)
    full = plain.log_probs(hidden)  # (2, 5, C)
    shared = torch.tensor([0, 36, 5, 5, 17], dtype=torch.int32)  # any integer dtype, repeats allowed
    per_row = torch.randint(0, C, (2, 5, 3), generator=gen)
    per_row[..., 0] = full.argmax(dim=-1)  # inside a sparse head's support
    for classes, expected in ((shared, full[..., shared.long()]), (per_row, full.gather(-1, per_row))):
        got = lean.class_log_probs(hidden, classes)
        assert got.dtype == torch.float64 and got.shape == expected.shape
        torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(plain.class_log_probs(hidden, classes), expected, rtol=0, atol=0)
    if variant == "sparse":  # outside the support: −inf, as the plain sparse distribution
        assert torch.isinf(lean.class_log_probs(hidden, shared)).any()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("k", [1, 3, 5, 9])
@pytest.mark.parametrize("exclude", [None, [0, 2, 36]])
def test_topk_log_probs_equal_plain(variant, chunk_size, k, exclude, gen):
    plain, lean = make_pair(variant, chunk_size)
    hidden = hidden_of(gen)
    values, ids = lean.topk_log_probs(hidden, k, exclude=exclude)
    ref_values, ref_ids = plain.topk_log_probs(hidden, k, exclude=exclude)
    assert values.shape == ids.shape == (2, 5, k) and values.dtype == torch.float64
    torch.testing.assert_close(values, ref_values, rtol=1e-12, atol=1e-12)
    finite = torch.isfinite(ref_values)  # −inf entries (beyond a sparse support): ids unspecified
    assert torch.equal(ids[finite], ref_ids[finite])
    # The textbook result: torch.topk of log_probs with the excluded columns at −inf.
    logp = plain.log_probs(hidden)
    if exclude:
        logp[..., exclude] = float("-inf")
    expected = logp.topk(k, dim=-1)
    torch.testing.assert_close(values, expected.values, rtol=1e-12, atol=1e-12)
    assert torch.equal(ids[finite], expected.indices[finite])
    if exclude:
        assert not torch.isin(ids[finite], torch.tensor(exclude)).any()


@pytest.mark.parametrize("variant", ["softmax", "sparse"])
def test_decoding_renormalised_topk(variant, gen):
    """What sparse-softmax decoding takes: top-k without banned ids, renormalised over the k."""
    plain, lean = make_pair(variant, 2)
    hidden = hidden_of(gen, (4,))
    banned = [1, 7]
    values, ids = lean.topk_log_probs(hidden, 3, exclude=banned)
    renorm = values - values.logsumexp(dim=-1, keepdim=True)
    logp = plain.log_probs(hidden)
    logp[:, banned] = float("-inf")
    top, idx = logp.topk(3, dim=-1)
    torch.testing.assert_close(renorm, top - top.logsumexp(dim=-1, keepdim=True), rtol=1e-12, atol=1e-12)
    assert torch.equal(ids, idx)


@pytest.mark.parametrize("variant", ["softmax", "stable_softmax"])
@pytest.mark.parametrize("chunk_size", [1, 3, 100])
def test_ties_resolved_as_the_plain_path(variant, chunk_size, gen):
    """Exactly equal logits: both paths take the lowest class id.

    Small integers make every logit exact, so it is the same in any block's matmul (with
    general floats a block's matmul may round a logit differently from the full one by an ulp,
    and then near-ties fall either way on either path).
    """
    plain, lean = make_pair(variant, chunk_size, bias=False)
    with torch.no_grad():
        plain.weight.copy_(torch.randint(-3, 4, (C, D), generator=gen))
        plain.weight[[4, 20, 33]] = plain.weight[30] = 9.0  # classes 4, 20, 30, 33 tie, above all others
    hidden = torch.randint(1, 4, (6, D), generator=gen).double()
    assert torch.equal(lean.predict(hidden), plain.predict(hidden))
    assert lean.predict(hidden).tolist() == [4] * 6
    for k in (2, 4, 9):
        assert torch.equal(lean.topk_log_probs(hidden, k)[1], plain.topk_log_probs(hidden, k)[1])
    assert lean.topk_log_probs(hidden, 4)[1].tolist() == [[4, 20, 30, 33]] * 6


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk_size", [None, 2])
def test_nan_row_in_nan_out(variant, chunk_size, gen):
    _, head = make_pair(variant, chunk_size)
    hidden = hidden_of(gen, (4,))
    hidden[1, 3] = float("nan")
    assert head.predict(hidden).tolist()[1] == -100
    assert torch.isnan(head.class_log_probs(hidden, [0, 3])[1]).all()
    values, _ = head.topk_log_probs(hidden, 3)
    assert torch.isnan(values[1]).all() and not torch.isnan(values[[0, 2, 3]]).any()


@pytest.mark.parametrize("variant", VARIANTS)
def test_float32_close_to_plain(variant, gen):
    plain, lean = make_pair(variant, 4, dtype=torch.float32)
    hidden = hidden_of(gen, (3, 11), dtype=torch.float32)
    values, ids = lean.topk_log_probs(hidden, 4)
    ref, ref_ids = plain.topk_log_probs(hidden, 4)
    assert values.dtype == torch.float32
    torch.testing.assert_close(values, ref, rtol=1e-5, atol=1e-5)
    assert (ids == ref_ids).float().mean() > 0.99
    target = plain.predict(hidden)
    torch.testing.assert_close(
        lean.class_log_probs(hidden, target[..., None]), plain.class_log_probs(hidden, target[..., None])
    )


@pytest.mark.parametrize("chunk_size", [1, 3])
def test_never_a_block_over_chunk_size_times_c(chunk_size, gen, monkeypatch):
    """Every logits block the lean path makes holds at most chunk_size × C entries."""
    _, lean = make_pair("sparse", chunk_size)
    sizes = []
    original = streaming.F.linear
    monkeypatch.setattr(streaming.F, "linear", lambda *a: sizes.append(original(*a).numel()) or original(*a))
    hidden = hidden_of(gen, (3, 7))
    lean.predict(hidden)
    lean.topk_log_probs(hidden, 3)
    lean.class_log_probs(hidden, [1, 2])
    assert sizes and max(sizes) <= chunk_size * C and len(sizes) >= 3 * -(-C // class_block_size(21, C, chunk_size))


def test_other_heads_get_the_plain_defaults(gen):
    head = AdaptiveSoftmaxHead(D, C, cutoffs=[10], div_value=2.0).double()
    hidden = hidden_of(gen, (5,))
    logp = head.log_probs(hidden)
    torch.testing.assert_close(head.class_log_probs(hidden, [3, 30]), logp[:, [3, 30]], rtol=0, atol=0)
    values, ids = head.topk_log_probs(hidden, 2)
    assert torch.equal(ids, logp.topk(2).indices)


@pytest.mark.parametrize("chunk_size", [None, 3])
def test_bad_arguments_name_the_value(chunk_size, gen):
    _, head = make_pair("softmax", chunk_size)
    hidden = hidden_of(gen, (2,))
    with pytest.raises(ValueError, match="class 37 is outside"):
        head.class_log_probs(hidden, [0, 37])
    with pytest.raises(ValueError, match="integer"):
        head.class_log_probs(hidden, torch.tensor([0.0]))
    with pytest.raises(ValueError, match=r"classes must be \(K,\)"):
        head.class_log_probs(hidden, torch.zeros(3, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="k must be <= the number of classes 37, got 38"):
        head.topk_log_probs(hidden, 38)
    with pytest.raises(ValueError, match="k must be >= 1, got 0"):
        head.topk_log_probs(hidden, 0)
    with pytest.raises(ValueError, match="class -1 is outside"):
        head.topk_log_probs(hidden, 2, exclude=[-1])


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk_size", [3, "auto"])
def test_a_temperature_streams_over_class_blocks_as_the_plain_head(variant, chunk_size, gen):
    """temperature T: the block scan runs on (h / T) W^T + b / T and gives the plain head's tempered answers."""
    cls, extra = VARIANTS[variant]
    torch.manual_seed(0)
    plain = cls(D, C, temperature=0.4, **extra).double()
    torch.nn.init.normal_(plain.bias)
    lean = cls(D, C, weight=plain.weight, chunk_size=chunk_size, temperature=0.4, **extra).double()
    lean.bias = plain.bias
    assert lean.streams_inference() == lean.row_loss().softmax_of_logits
    hidden = hidden_of(gen)
    logp = torch.log_softmax(logits_of(plain, hidden) / 0.4, dim=-1)
    if plain.support_k is None:
        torch.testing.assert_close(plain.log_probs(hidden), logp, rtol=1e-12, atol=1e-12)
    assert torch.equal(lean.predict(hidden), plain.predict(hidden))
    classes = torch.tensor([0, 5, C - 1])
    torch.testing.assert_close(lean.class_log_probs(hidden, classes), plain.class_log_probs(hidden, classes),
                               rtol=1e-12, atol=1e-12)
    values, ids = lean.topk_log_probs(hidden, 4)
    ref_values, ref_ids = plain.topk_log_probs(hidden, 4)
    torch.testing.assert_close(values, ref_values, rtol=1e-12, atol=1e-12)
    assert torch.equal(ids[ref_values.isfinite()], ref_ids[ref_values.isfinite()])
