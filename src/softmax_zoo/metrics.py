"""Evaluation metrics, each named as the papers report it.

Classification (sparse-softmax paper, Fig. 2): micro-F1 (= accuracy for single-label data) and
macro-F1. Language modelling: perplexity from a summed negative log-likelihood. Text generation:

- ROUGE-1/2/L F1 (Gigaword, UniLM Table 5 / Sparse-softmax Table 5) with ``rouge-score``, Porter
  stemming on, averaged over examples x 100. UniLM scored with ROUGE-1.5.5 (files2rouge, ``-m``
  stemming); rouge-score reimplements it without ROUGE-1.5.5's WordNet exceptions and resampling
  (results/rouge_perl.md: at most 0.05 points apart on our outputs). Its tokeniser lower-cases and keeps only [a-z0-9]
  runs, so the release's ``#`` digit masks and punctuation do not count.
- BLEU-1..4 (question generation, Du et al. 2017 / UniLM Table 3): corpus BLEU, cumulative up to
  n (geometric mean of the 1..n-gram precisions x brevity penalty), computed with sacrebleu's
  ``BLEU.compute_bleu`` from per-example n-gram counts on text the caller has already
  lower-cased and tokenised (whitespace-split here), one reference per example, no smoothing.
  Du et al.'s script (coco-caption's BLEU via nlg-eval) adds a 1e-9 floor to each precision and
  groups the questions asked about the same sentence as multiple references; with answer-aware
  inputs (passage + answer) examples rarely share an input, so we keep one reference each. The
  per-example counts are returned so that a paired bootstrap can resample examples.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import torch


def micro_f1(pred: torch.Tensor, gold: torch.Tensor) -> float:
    """Micro-averaged F1 of single-label predictions (N,) vs gold (N,): equals accuracy."""
    if pred.shape != gold.shape or pred.numel() == 0:
        raise ValueError(f"pred {tuple(pred.shape)} and gold {tuple(gold.shape)} must be equal, non-empty shapes")
    return (pred == gold).float().mean().item()


def macro_f1(pred: torch.Tensor, gold: torch.Tensor, num_classes: int) -> float:
    """Unweighted mean over the classes present in ``gold`` or ``pred`` of per-class F1.

    Classes absent from both contribute nothing (scikit-learn's ``f1_score(average="macro")``
    with ``labels`` = the classes seen, ``zero_division=0``).
    """
    if pred.shape != gold.shape or pred.numel() == 0:
        raise ValueError(f"pred {tuple(pred.shape)} and gold {tuple(gold.shape)} must be equal, non-empty shapes")
    tp = torch.bincount(gold[pred == gold], minlength=num_classes).double()
    n_pred = torch.bincount(pred, minlength=num_classes).double()
    n_gold = torch.bincount(gold, minlength=num_classes).double()
    seen = (n_pred + n_gold) > 0
    f1 = 2 * tp / (n_pred + n_gold).clamp(min=1)  # F1 = 2TP / (2TP + FP + FN) = 2TP / (|pred| + |gold|)
    return f1[seen].mean().item()


def perplexity(total_nll: float, num_tokens: int) -> float:
    """exp(mean negative log-likelihood in nats) over ``num_tokens`` predicted tokens."""
    if num_tokens <= 0:
        raise ValueError(f"num_tokens must be > 0, got {num_tokens}")
    return math.exp(total_nll / num_tokens)


ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
BLEU_ORDERS = (1, 2, 3, 4)


def _check_pairs(hyps: Sequence[str], refs: Sequence[str]) -> None:
    if len(hyps) != len(refs) or not hyps:
        raise ValueError(f"need equal, non-zero numbers of hypotheses and references, got {len(hyps)} and {len(refs)}")


def rouge_per_example(hyps: Sequence[str], refs: Sequence[str]) -> dict[str, list[float]]:
    """ROUGE-1/2/L F1 x 100 of each hypothesis against its reference (rouge-score, stemmed)."""
    from rouge_score import rouge_scorer

    _check_pairs(hyps, refs)
    scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    out: dict[str, list[float]] = {t: [] for t in ROUGE_TYPES}
    for hyp, ref in zip(hyps, refs):
        scores = scorer.score(ref, hyp)  # score(target, prediction)
        for t in ROUGE_TYPES:
            out[t].append(100.0 * scores[t].fmeasure)
    return out


def bleu_stats(hyp: str, ref: str, max_order: int = 4) -> list[int]:
    """Sufficient statistics of BLEU for one whitespace-tokenised pair.

    Returns:
        ``[hyp_len, ref_len, correct_1..max_order, total_1..max_order]``: clipped n-gram matches
        and hypothesis n-gram counts, which sum over examples to corpus BLEU.
    """
    h, r = hyp.split(), ref.split()
    correct, total = [], []
    for n in range(1, max_order + 1):
        hc = Counter(tuple(h[i : i + n]) for i in range(len(h) - n + 1))
        rc = Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
        correct.append(sum(min(c, rc[g]) for g, c in hc.items()))
        total.append(max(len(h) - n + 1, 0))
    return [len(h), len(r), *correct, *total]


def bleu_from_stats(stats: np.ndarray | Sequence[Sequence[int]], order: int) -> float:
    """Corpus BLEU-``order`` x 100 from summed :func:`bleu_stats` rows (E, 2 + 2 * max_order)."""
    from sacrebleu.metrics import BLEU

    s = np.asarray(stats, dtype=np.int64).sum(0)
    max_order = (s.size - 2) // 2
    if not 1 <= order <= max_order:
        raise ValueError(f"order must be in [1, {max_order}], got {order}")
    correct, total = s[2 : 2 + max_order].tolist(), s[2 + max_order :].tolist()
    return BLEU.compute_bleu(correct, total, int(s[0]), int(s[1]), smooth_method="none", max_ngram_order=order).score
