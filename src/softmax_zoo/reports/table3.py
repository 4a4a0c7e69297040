"""Sparse-softmax Table 3: SQuAD 1.1 question generation (Du split), UniLM, softmax vs sparse-softmax.

``python -m softmax_zoo.reports table3`` (the last step of ``make reproduce-table3``) reads the
records of experiment ``table3`` and their test predictions and writes ``results/table3.md``:
BLEU-1..4 (corpus BLEU; per-example n-gram counts saved by the evaluation) and ROUGE-L at beam 1
for both losses, the delta sparse − softmax per training seed with its paired bootstrap 95%
interval over test examples (corpus BLEU recomputed on each resample), a Student-t interval over
seeds, the between-seed SD beside the item-bootstrap half-width, the smallest Δ one run per arm
detects at our scale, the paper's delta and a verdict of :mod:`softmax_zoo.reports._verdicts`;
plus rows of the claims ledger.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..metrics import BLEU_ORDERS, bleu_from_stats
from ..records import load_records, runs_dir
from ._pages import commits, markdown_table, page_command, shown_path, write_page
from ._seq2seq import (
    BOOTSTRAP_SAMPLES, DELTA_HEADER, delta_cells, delta_claim, load_pairs, paper_setting_claims, paper_verdict, per_seed_scores,
    section, setting_columns,
)
from ._seq2seq_settings import seq2seq_settings
from ._settings import settings_part
from ._stats import SEED_INTERVAL_NOTE, paired_seed_deltas
from ._verdicts import VERDICT_RULES

EXPERIMENT = "table3"
BEAM = 1
# Sun et al. 2021, Table 3: sparse − softmax, BLEU-1..4, beam 1.
PAPER_DELTAS = {"bleu1": 0.90, "bleu2": 0.62, "bleu3": 0.80, "bleu4": 0.82}
# UniLM v1 (Dong et al. 2019) on the Du split: BLEU-4 22.78, ROUGE-L 51.57 (unilm-v1 README).
UNILM = {"bleu4": 22.78, "rougeL": 51.57}
PAPER_MODEL = f"a pre-trained UniLM; UniLM's own result on this split is BLEU-4 {UNILM['bleu4']}"
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


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/table3.md`` and the table3 rows of ``<out>/claims.md`` (``out`` defaults to ``results_dir``)."""
    runs = runs_dir(results_dir)
    sections, claims = [], []
    key = f"beam{BEAM}"
    by_setting, lone = load_pairs(runs, EXPERIMENT)
    for scale, pairs in by_setting.items():
        rows: list[list[Any]] = []
        verdicts = []
        bleu_scores = per_seed_scores(pairs, runs, lambda r: r[key]["bleu_stats"])
        deltas = {
            f"bleu{n}": paired_seed_deltas(bleu_scores, bootstrap=lambda a, b, n=n: corpus_bootstrap(
                np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64), n, BOOTSTRAP_SAMPLES))
            for n in BLEU_ORDERS
        }
        deltas["rougeL"] = paired_seed_deltas(per_seed_scores(pairs, runs, lambda r: r[key]["rougeL"]), num_samples=BOOTSTRAP_SAMPLES)
        for metric, d in deltas.items():
            paper = PAPER_DELTAS.get(metric)
            rows.append([metric, UNILM.get(metric, ""), *delta_cells(pairs, f"test/{metric}_{key}", d, paper)])
            if paper is not None:
                verdicts.append(paper_verdict(d, paper))
                claims.append(delta_claim(
                    f"table3_{scale}_{metric}",
                    f"SQuAD QG (Du split), UniLM: sparse-softmax beats softmax on {metric.upper()} at beam {BEAM}", paper, d, scale, pairs,
                    source=EXPERIMENT,
                ))
        rate = [np.mean([r["metrics"][f"test/examples_per_s_{key}"] for r in (p[i] for p in pairs)]) for i in (0, 1)]
        table = markdown_table(["metric", "UniLM paper", *DELTA_HEADER], rows)
        throughput = f"Decoding throughput (test examples/s, beam {BEAM}): softmax {rate[0]:.2f}, sparse {rate[1]:.2f}"
        sections.append(section(scale, pairs, runs, unit="question", head_suffix=f", beam {BEAM}", table=table,
                                throughput=throughput, beams=[BEAM], verdicts=verdicts, paper_model=PAPER_MODEL,
                                lone=lone.get(scale)))
    text = (
        "# Table 3: SQuAD 1.1 question generation (Du split), UniLM fine-tuned with softmax vs sparse-softmax\n\n"
        f"Built by `{page_command(EXPERIMENT, results_dir)}` from `{shown_path(runs / EXPERIMENT)}/` (`make reproduce-table3`); "
        f"records from {commits(load_records(runs, EXPERIMENT))}.\n"
        "Corpus BLEU-n (cumulative, sacrebleu's computation, lower-cased BERT-basic-tokenised text, one reference "
        "per question) and ROUGE-L F1, x 100; softmax and sparse-softmax cells are mean ± 95% Student-t half-width over "
        "seeds (n = seeds). Δ = sparse − softmax; each seed's item interval is a paired bootstrap "
        f"({BOOTSTRAP_SAMPLES} resamples) over its test questions, corpus BLEU recomputed on each resample. "
        f"{SEED_INTERVAL_NOTE} {VERDICT_RULES} "
        "Du et al.'s script groups questions on the same sentence as multiple references, so absolute BLEU is "
        "not directly comparable with UniLM's.\n\n"
        + settings_part(seq2seq_settings("squad_qg"), setting_columns(by_setting),
                        "Sun et al. 2021's §4 on question generation (Table 3)") + "\n"
        + "\n".join(sections)
    )
    write_page(out or results_dir, EXPERIMENT, text, claims + paper_setting_claims(by_setting, claims, EXPERIMENT))
