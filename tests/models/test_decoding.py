"""Beam search: cache == recompute, beam 1 == greedy, exhaustive beam == brute force, sparse top-k."""

import itertools
import math

import pytest
import torch

from softmax_zoo.models.decoding import (
    DecodeConfig,
    Decoded,
    blocked_ngram_tokens,
    decode,
    fall_through,
    length_penalty,
    sparse_topk,
)

from .tiny_unilm import CLS, MASK, PAD, SEP, WORDS, step_log_probs, tiny_unilm

SOURCES = [[4, 5, 6], [7], [6, 6, 4, 5, 7]]
BANNED = (PAD, CLS, MASK)


def _batch(sources):
    width = max(len(s) for s in sources) + 2
    ids = torch.zeros(len(sources), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, s in enumerate(sources):
        ids[i, : len(s) + 2] = torch.tensor([CLS, *s, SEP])
        mask[i, : len(s) + 2] = 1
    return ids, mask


def _decode(model, sources, **kw):
    ids, mask = _batch(sources)
    return [d.ids for d in decode(model, ids, mask, DecodeConfig(banned=BANNED, **kw), mask_id=MASK, eos_id=SEP)]


def _allowed(logp):
    logp = logp.clone()
    logp[list(BANNED)] = -math.inf
    return logp


@torch.no_grad()
def test_beam1_equals_greedy_recomputed_without_cache():
    model = tiny_unilm(seed=1)
    for source, out in zip(SOURCES, _decode(model, SOURCES, beam=1, max_len=8)):
        greedy = []
        for _ in range(7):  # max_len counts the end token
            tok = int(_allowed(step_log_probs(model, source, greedy)).argmax())
            if tok == SEP:
                break
            greedy.append(tok)
        assert out == greedy


@torch.no_grad()
@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_unpruned_beam_finds_brute_force_best(alpha):
    model = tiny_unilm(seed=2)
    max_len = 3
    for source, out in zip(SOURCES, _decode(model, SOURCES, beam=16, max_len=max_len, length_penalty=alpha)):
        best, best_score = None, -math.inf
        prefix_logp = {
            words: _allowed(step_log_probs(model, source, list(words)))
            for n in range(max_len)
            for words in itertools.product(WORDS, repeat=n)
        }
        for n in range(max_len):  # n words, then the end token
            for words in itertools.product(WORDS, repeat=n):
                seq = (*words, SEP)
                score = sum(float(prefix_logp[seq[:t]][seq[t]]) for t in range(n + 1))
                score /= length_penalty(n + 1, alpha)
                if score > best_score:
                    best, best_score = list(words), score
        assert out == best


@torch.no_grad()
def test_sparse_decoding_never_leaves_the_step_top_k():
    model = tiny_unilm(seed=3, vocab_size=30, hidden=16)
    outs = _decode(model, SOURCES, beam=3, max_len=6, topk=2)
    assert all(len(o) >= 2 for o in outs)
    for source, out in zip(SOURCES, outs):
        emitted = out if len(out) == 5 else [*out, SEP]  # at max_len the end is forced, not chosen
        for t, tok in enumerate(emitted):
            top2 = _allowed(step_log_probs(model, source, out[:t])).topk(2).indices.tolist()
            assert tok in top2, (source, out, t, top2)


@torch.no_grad()
def test_min_len_max_len_and_ngram_blocking():
    model = tiny_unilm(seed=4)
    for out in _decode(model, SOURCES, beam=2, max_len=7, min_len=4, ngram_block=2):
        assert 4 <= len(out) <= 6
        bigrams = list(zip(out, out[1:]))
        assert len(bigrams) == len(set(bigrams))


def test_blocked_ngram_tokens_follows_unilm_rule():
    assert blocked_ngram_tokens([4, 5, 6, 4, 5], 3, set()) == {6}
    assert blocked_ngram_tokens([4, 5, 6, 4, 5], 3, {5}) == set()  # the tail holds an ignored token
    assert blocked_ngram_tokens([4, 5, 4, 7, 4], 2, set()) == {5, 7}
    assert blocked_ngram_tokens([4, 5, 4, 7, 4], 2, {7}) == {5}  # an ignored completion is allowed
    assert blocked_ngram_tokens([4], 3, set()) == set()


def test_sparse_topk_renormalises():
    logp = torch.log_softmax(torch.tensor([[1.0, 3.0, 2.0, 0.0]]), -1)
    out = sparse_topk(logp, 2)
    torch.testing.assert_close(out.exp().sum(), torch.tensor(1.0))
    assert torch.isinf(out[0, [0, 3]]).all()
    torch.testing.assert_close(out[0, 1] - out[0, 2], torch.tensor(1.0))


def test_decode_config_names_bad_values():
    with pytest.raises(ValueError, match="beam must be >= 1, got 0"):
        DecodeConfig(beam=0)
    with pytest.raises(ValueError, match="topk must be >= 1 or None, got 0"):
        DecodeConfig(topk=0)


def _favour(model, word: int, end_bias: float = -20.0):
    """Make ``word`` every step's top-1 and the end token improbable (the head's bias)."""
    with torch.no_grad():
        model.head.bias[word] += 20.0
        model.head.bias[SEP] += end_bias
    return model


@torch.no_grad()
def test_blocked_top1_at_beam1_falls_through_to_the_best_allowed_token_and_is_counted():
    model = _favour(tiny_unilm(seed=5), word=4)
    ids, mask = _batch(SOURCES)
    cfg = DecodeConfig(beam=1, max_len=4, ngram_block=1, topk=1, banned=BANNED)  # no word may repeat
    outs = decode(model, ids, mask, cfg, mask_id=MASK, eos_id=SEP)
    for source, out in zip(SOURCES, outs):
        # Reference: greedy over the full distribution under the same constraints.
        greedy = []
        for _ in range(3):
            logp = _allowed(step_log_probs(model, source, greedy))
            logp[greedy] = -math.inf
            greedy.append(int(logp.argmax()))
        assert greedy[0] == 4 and out.ids == greedy
        # Steps 1 and 2 (word 4 blocked) and the end at max_len (outside the top-1) fell through.
        assert out.constraint_steps == 3 and out.ended_by_constraint
    soft = decode(model, ids, mask, DecodeConfig(beam=1, max_len=4, ngram_block=1, banned=BANNED), mask_id=MASK, eos_id=SEP)
    assert [o.ids for o in soft] == [o.ids for o in outs]  # at beam 1 sparse top-1 + fall-through = constrained greedy
    assert all(o.constraint_steps == 0 and o.ended_by_constraint for o in soft)  # the full distribution needs no fall-through
    # Word 4, the full distribution's best at every step, is forbidden at steps 1, 2 and 3 in both arms alike.
    assert [o.blocked_steps for o in soft] == [o.blocked_steps for o in outs] == [3] * len(SOURCES)


@torch.no_grad()
def test_an_end_chosen_inside_the_top_k_is_not_a_constraint_end():
    model = _favour(tiny_unilm(seed=5), word=SEP, end_bias=0.0)  # the end token is every step's top-1
    ids, mask = _batch(SOURCES)
    outs = decode(model, ids, mask, DecodeConfig(beam=2, max_len=4, topk=2, banned=BANNED), mask_id=MASK, eos_id=SEP)
    assert outs == [Decoded([], 0, False)] * len(SOURCES)


def test_fall_through_only_touches_empty_rows_and_respects_the_constraints():
    full = torch.log_softmax(torch.tensor([[3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0]]), -1)
    forbid = torch.tensor([[True, False, False, False], [False, False, False, True], [True, True, True, True]])
    logp = sparse_topk(full, 1).masked_fill(forbid, -math.inf)  # row 0 and row 2 empty, row 1 keeps nothing either
    fell = fall_through(logp, full, forbid)
    assert fell.tolist() == [True, True, False]  # row 2: every token forbidden, nothing to fall to
    assert torch.isfinite(logp).sum(1).tolist() == [1, 1, 0]
    assert logp[0, 1] == full[0, 1] and logp[1, 2] == full[1, 2]  # the best allowed, full-distribution log-prob
