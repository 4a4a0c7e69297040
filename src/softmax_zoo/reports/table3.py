"""Sparse-softmax Table 3: SQuAD 1.1 question generation, UniLM, softmax vs sparse-softmax (``make reproduce-table3``).

The paper names no split; our data is Du et al. 2017's. BLEU-1..4 (unsmoothed corpus BLEU from the per-example
n-gram counts the evaluation saves) and ROUGE-L at beam 1 for both losses, Δ = sparse − softmax compared paired by
test item within each seed (corpus BLEU recomputed on each resample; :mod:`._seq2seq`). Words: templates/table3.md.j2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..metrics import BLEU_ORDERS, bleu_from_stats
from . import _seq2seq as s2s
from ._compare import Comparison, Design, compare
from ._render import publish

EXPERIMENT = "table3"
BEAM = 1
# Sun et al. 2021, Table 3: sparse − softmax, BLEU-1..4, beam 1.
PAPER_DELTAS = {"bleu1": 0.90, "bleu2": 0.62, "bleu3": 0.80, "bleu4": 0.82}
# UniLM v1 (Dong et al. 2019) on Du et al.'s split: github.com/microsoft/unilm, unilm-v1/README.md, its SQuAD question-generation table.
UNILM = {"bleu4": 22.78, "rougeL": 51.57}
CHUNK = 200  # bootstrap resamples per matrix product


def corpus_bootstrap(stats_a: np.ndarray, stats_b: np.ndarray, order: int, num_samples: int, seed: int = 0) -> dict[str, float]:
    """Paired bootstrap of corpus BLEU-``order`` (b − a) over examples.

    Args:
        stats_a, stats_b: (E, 2 + 2 * max_order) per-example BLEU counts of the two systems,
            row e of both for the same example.

    Returns:
        ``{"delta", "low", "high", "p_le_0"}`` as :func:`softmax_zoo.reports._stats.paired_bootstrap`.
    """
    n = stats_a.shape[0]
    rng = np.random.default_rng(seed)
    deltas = []
    for start in range(0, num_samples, CHUNK):
        w = rng.multinomial(n, np.full(n, 1.0 / n), size=min(CHUNK, num_samples - start))  # (m, E) resample counts
        sa, sb = w @ stats_a, w @ stats_b  # (m, 2 + 2 * max_order) summed counts
        deltas += [bleu_from_stats(y[None], order) - bleu_from_stats(x[None], order) for x, y in zip(sa, sb)]
    boot = np.asarray(deltas)
    return {
        "delta": bleu_from_stats(stats_b, order) - bleu_from_stats(stats_a, order),
        "low": float(np.quantile(boot, 0.025)),
        "high": float(np.quantile(boot, 0.975)),
        "p_le_0": float((boot <= 0).mean()),
    }


def rows(pairs: list[s2s.Pair], runs: Path) -> tuple[list[int], list[dict[str, Any]]]:
    """A setting's beam, and its rows: corpus BLEU-1..4 and ROUGE-L at :data:`BEAM`, compared paired by test item."""
    key = f"beam{BEAM}"
    bleu_items = s2s.per_seed_scores(pairs, runs, lambda r: r[key]["bleu_stats"])
    compared = {
        f"bleu{n}": compare(Comparison(*s2s.ARMS, f"bleu{n}", Design.PAIRED_BY_ITEM), items=bleu_items,
                            bootstrap=lambda a, b, n=n: corpus_bootstrap(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
                                                                         n, s2s.BOOTSTRAP_SAMPLES))
        for n in BLEU_ORDERS
    }
    compared["rougeL"] = compare(Comparison(*s2s.ARMS, "rougeL", Design.PAIRED_BY_ITEM),
                                 items=s2s.per_seed_scores(pairs, runs, lambda r: r[key]["rougeL"]), num_samples=s2s.BOOTSTRAP_SAMPLES)
    return [BEAM], [s2s.delta_row(pairs, f"test/{metric}_{key}", c, PAPER_DELTAS.get(metric), [metric, UNILM.get(metric, "")])
                    for metric, c in compared.items()]


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: per setting (scale) a section of rows (metric), the claims rows, UniLM's result."""
    data = s2s.summarise(EXPERIMENT, results_dir, "squad_qg", rows, lambda r: (r["lead"][0], {"metric": r["lead"][0], "beam": BEAM}),
                         "Sun et al. 2021's §4 on question generation (Table 3)")
    return data | {"unilm": UNILM, "beam": BEAM}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/table3.md`` and its claims rows (``out`` defaults to ``results_dir``)."""
    publish(out or results_dir, EXPERIMENT, summarise(results_dir))
