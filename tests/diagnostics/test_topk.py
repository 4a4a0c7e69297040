"""Top-k regime diagnostics: against a brute-force count, and the decoding view against decoding's steps."""

import statistics

import pytest
import torch

from softmax_zoo.diagnostics.topk import TopkDiagnostics, diagnostics_k, head_scores, topk_rows
from softmax_zoo.losses import AdaptiveSoftmaxHead, SoftmaxHead, SparseSoftmaxHead
from softmax_zoo.models.decoding import decoding_view, teacher_forced_states

from ..models.tiny_unilm import CLS, MASK, PAD, SEP, step_log_probs, tiny_unilm


def _brute(scores, target, k, near=0.1):
    """rank, in top-k, near count of each row by Python loops over sorted values."""
    out = []
    for row, t in zip(scores.tolist(), target.tolist()):
        rank = 1 + sum(v > row[t] for v in row)
        kth = sorted(row, reverse=True)[k - 1]
        out.append((rank, rank <= k, sum(abs(v - kth) <= near for v in row)))
    return out


@pytest.mark.parametrize("k", [1, 3, 10])
def test_topk_rows_and_summary_match_brute_force(k):
    g = torch.Generator().manual_seed(k)
    scores = torch.randn(40, 10, generator=g, dtype=torch.float64)
    scores[:5, :4] = 0.5  # ties and a flat top
    scores[5:10] = scores[5:10].round(decimals=1)
    target = torch.randint(0, 10, (40,), generator=g)
    rank, near = topk_rows(scores, target, k)
    brute = _brute(scores, target, k)
    assert rank.tolist() == [b[0] for b in brute] and near.tolist() == [b[2] for b in brute]
    diag = TopkDiagnostics(k)
    diag.update(scores[:17], target[:17])
    diag.update(scores[17:], target[17:])
    m = diag.metrics("test/")
    assert m["test/target_in_topk"] == pytest.approx(sum(b[1] for b in brute) / 40)
    assert m["test/median_target_rank"] == pytest.approx(statistics.median(b[0] for b in brute))
    assert m["test/logits_near_kth"] == pytest.approx(sum(b[2] for b in brute) / 40)
    assert m["test/diagnostics_k"] == k and m["test/diagnostic_targets"] == 40


def test_topk_rows_names_bad_inputs():
    with pytest.raises(ValueError, match="k must be in \\[1, 4\\], got 5"):
        topk_rows(torch.zeros(2, 4), torch.zeros(2, dtype=torch.long), 5)
    with pytest.raises(ValueError, match="scores must be \\(N, C\\)"):
        topk_rows(torch.zeros(4), torch.zeros(4, dtype=torch.long), 1)


def test_diagnostics_k_and_scores_per_head():
    hidden = torch.randn(3, 8)
    sparse, soft = SparseSoftmaxHead(8, 30, k=5), SoftmaxHead(8, 30)
    assert diagnostics_k(sparse, 20) == 5 and diagnostics_k(soft, 20) == 20
    torch.testing.assert_close(head_scores(sparse, hidden), sparse.logits(hidden))  # not the −inf of log_probs
    adaptive = AdaptiveSoftmaxHead(8, 30, cutoffs=[10])
    scores = head_scores(adaptive, hidden)  # full log-probabilities: the same ranks and gaps as logits
    assert scores.shape == (3, 30) and torch.isfinite(scores).all()


@torch.no_grad()
def test_decoding_view_gives_each_step_of_decoding_in_one_pass():
    model = tiny_unilm(seed=6)
    sources, targets = [[4, 5, 6], [7]], [[5, 4, 7, SEP], [6, SEP]]
    view = decoding_view([[CLS, *s, SEP] for s in sources], targets, mask_id=MASK, pad_id=PAD)
    hidden, target = teacher_forced_states(model, view)  # (N, d), (N,)
    assert target.tolist() == [t for tgt in targets for t in tgt]
    expected = torch.stack([step_log_probs(model, s, tgt[:t]) for s, tgt in zip(sources, targets) for t in range(len(tgt))])
    torch.testing.assert_close(model.head.log_probs(hidden), expected, atol=1e-5, rtol=1e-5)
