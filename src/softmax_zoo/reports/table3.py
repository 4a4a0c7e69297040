"""Sparse-softmax Table 3: SQuAD 1.1 question generation (Du split), UniLM, softmax vs sparse-softmax.

``python -m softmax_zoo.reports table3`` (the last step of ``make reproduce-table3``) reads the
records of experiment ``table3`` and their test predictions and writes ``results/table3.md``
(templates/table3.md.j2) and its rows of the claims ledger: BLEU-1..4 (corpus BLEU from the
per-example n-gram counts the evaluation saves) and ROUGE-L at beam 1 for both losses, Δ = sparse −
softmax compared paired by test item within each seed (corpus BLEU recomputed on each resample).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..metrics import BLEU_ORDERS, bleu_from_stats
from ..records import runs_dir
from ._compare import Comparison, Design, compare
from ._pages import write_page
from ._render import render_page
from ._seq2seq import (
    ARMS,
    BOOTSTRAP_SAMPLES,
    claim,
    delta_row,
    load_pairs,
    page,
    paper_setting_claims,
    per_seed_scores,
    setting,
    setting_columns,
)
from ._seq2seq_settings import seq2seq_settings
from ._settings import settings_data

EXPERIMENT = "table3"
BEAM = 1
# Sun et al. 2021, Table 3: sparse − softmax, BLEU-1..4, beam 1.
PAPER_DELTAS = {"bleu1": 0.90, "bleu2": 0.62, "bleu3": 0.80, "bleu4": 0.82}
# UniLM v1 (Dong et al. 2019) on the Du split: BLEU-4 22.78, ROUGE-L 51.57 (unilm-v1 README).
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


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: per setting (scale) a section of rows (metric) and the claims rows."""
    runs = runs_dir(results_dir)
    key = f"beam{BEAM}"
    by_setting, lone = load_pairs(runs, EXPERIMENT)
    sections, claims = [], []
    for scale, pairs in by_setting.items():
        bleu_items = per_seed_scores(pairs, runs, lambda r: r[key]["bleu_stats"])
        compared = {
            f"bleu{n}": compare(Comparison(*ARMS, f"bleu{n}", Design.PAIRED_BY_ITEM), items=bleu_items,
                                bootstrap=lambda a, b, n=n: corpus_bootstrap(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64),
                                                                             n, BOOTSTRAP_SAMPLES))
            for n in BLEU_ORDERS
        }
        compared["rougeL"] = compare(Comparison(*ARMS, "rougeL", Design.PAIRED_BY_ITEM),
                                     items=per_seed_scores(pairs, runs, lambda r: r[key]["rougeL"]), num_samples=BOOTSTRAP_SAMPLES)
        rows = [delta_row(pairs, f"test/{metric}_{key}", c, PAPER_DELTAS.get(metric), [metric, UNILM.get(metric, "")])
                for metric, c in compared.items()]
        section = setting(scale, pairs, runs, [BEAM], lone.get(scale), rows)
        sections.append(section)
        claims += [claim(f"{EXPERIMENT}_{scale}_{r['lead'][0]}", r, section, EXPERIMENT, metric=r["lead"][0], beam=BEAM)
                   for r in rows if r["paper"] is not None]
    settings = settings_data(seq2seq_settings("squad_qg"), setting_columns(by_setting),
                             "Sun et al. 2021's §4 on question generation (Table 3)")
    data = page(EXPERIMENT, results_dir, sections, claims + paper_setting_claims(by_setting, claims, EXPERIMENT), settings)
    return data | {"unilm": UNILM, "beam": BEAM}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/table3.md`` and the table3 rows of ``<out>/claims.md`` (``out`` defaults to ``results_dir``)."""
    write_page(out or results_dir, EXPERIMENT, *render_page(f"{EXPERIMENT}.md.j2", summarise(results_dir)))
