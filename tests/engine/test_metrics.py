"""ROUGE and BLEU on hand-checked examples."""

import pytest
import sacrebleu

from softmax_zoo.metrics import BLEU_ORDERS, bleu_from_stats, bleu_stats, rouge_per_example


def rouge(hyps, refs):
    """Mean ROUGE F1 x 100 over examples, as the seq2seq evaluation reports it."""
    return {t: sum(v) / len(v) for t, v in rouge_per_example(hyps, refs).items()}


def bleu(hyps, refs):
    """Corpus BLEU-1..4 from per-example statistics, as the seq2seq evaluation computes it."""
    stats = [bleu_stats(h, r) for h, r in zip(hyps, refs)]
    return {f"bleu{n}": bleu_from_stats(stats, n) for n in BLEU_ORDERS}


def test_rouge_by_hand():
    # unigrams: P = 3/3, R = 3/6 -> F = 2/3; bigrams: P = 2/2, R = 2/5 -> F = 4/7; LCS = 3 -> F = 2/3
    s = rouge(["the cat sat"], ["the cat sat on the mat"])
    assert s["rouge1"] == pytest.approx(200 / 3)
    assert s["rouge2"] == pytest.approx(400 / 7)
    assert s["rougeL"] == pytest.approx(200 / 3)


def test_rouge_stems_and_averages_examples():
    s = rouge(["police kill the gunman", "x"], ["police killed the gunman", "y"])  # kill ~ killed; 100 and 0
    assert s["rouge1"] == pytest.approx(50.0)


def test_bleu_by_hand():
    # all n-gram precisions 1, hypothesis 4 words vs reference 5: BP = exp(1 - 5/4)
    s = bleu(["a b c d"], ["a b c d e"])
    for n in (1, 2, 3, 4):
        assert s[f"bleu{n}"] == pytest.approx(100 * 0.7788007830714049)
    # "a b a b" vs "a b c": clipped unigrams 2/4, bigrams 1/3 (ab twice, clipped to 1), no trigram
    s = bleu(["a b a b"], ["a b c"])
    assert s["bleu1"] == pytest.approx(50.0)
    assert s["bleu2"] == pytest.approx(100 * (0.5 * 1 / 3) ** 0.5)
    assert s["bleu3"] == 0.0


def test_bleu_equals_sacrebleu_corpus_bleu():
    hyps = ["the cat sat on the mat .", "a quick brown fox jumps", "what is it ?"]
    refs = ["the cat is on the mat .", "the quick brown fox jumped over", "what is this ?"]
    ours = bleu(hyps, refs)["bleu4"]
    assert ours == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs], tokenize="none", smooth_method="none").score)
    assert bleu_stats("a b", "a b c", max_order=2) == [2, 3, 2, 1, 2, 1]
    with pytest.raises(ValueError, match="order must be in \\[1, 2\\], got 3"):
        bleu_from_stats([bleu_stats("a b", "a b c", max_order=2)], 3)


def test_metrics_reject_unequal_lists():
    with pytest.raises(ValueError, match="got 2 and 1"):
        rouge(["a", "b"], ["a"])
