"""Sparse-softmax Table 5: Gigaword-10k ROUGE of UniLM fine-tuned with softmax vs sparse-softmax.

``python -m softmax_zoo.reports table5`` (the last step of ``make reproduce-table5``) reads the
records of experiment ``table5`` and their test predictions
(``<run>.test.predictions.jsonl``), and writes ``results/table5.md``: for each scale and beam,
our ROUGE-1/2/L of both losses (mean over seeds), the delta sparse − softmax per training seed
(paired over the same test examples, with its bootstrap 95% interval over them), a Student-t
interval over seeds, the between-seed SD of Δ beside the item-bootstrap half-width, the smallest
Δ one run per arm detects at our scale, the paper's delta and a verdict of
:mod:`softmax_zoo.reports._verdicts`; plus rows of the claims ledger (results/claims.md). The paper's absolute ROUGE values are not in our sources; the table
gives its deltas and UniLM's published Gigaword-10k result (beam 5) for scale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

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

EXPERIMENT = "table5"
# Sun et al. 2021, Table 5: sparse − softmax on Gigaword-10k, UniLM.
PAPER_DELTAS = {1: {"rouge1": 0.67, "rouge2": 0.79}, 5: {"rouge1": 0.28, "rouge2": 0.55}}
# UniLM v1 (Dong et al. 2019) Gigaword-10k test, beam 5: unilm-v1 README.
UNILM_BEAM5 = {"rouge1": 34.21, "rouge2": 15.28, "rougeL": 31.54}
PAPER_MODEL = f"a pre-trained UniLM; UniLM's own Gigaword-10k result is ROUGE-1 {UNILM_BEAM5['rouge1']} at beam 5"
METRICS = ("rouge1", "rouge2", "rougeL")


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/table5.md`` and the table5 rows of ``<out>/claims.md`` (``out`` defaults to ``results_dir``)."""
    runs = runs_dir(results_dir)
    sections, claims = [], []
    by_setting, lone = load_pairs(runs, EXPERIMENT)
    for scale, pairs in by_setting.items():
        rows, verdicts = [], []
        beams = sorted(int(b) for b in pairs[0][0]["config"]["task"]["decode"]["beams"])
        for beam in beams:
            for metric in METRICS:
                scores = per_seed_scores(pairs, runs, lambda r: r[f"beam{beam}"][metric])
                d = paired_seed_deltas(scores, num_samples=BOOTSTRAP_SAMPLES)
                paper = PAPER_DELTAS.get(beam, {}).get(metric)
                rows.append([beam, metric, UNILM_BEAM5[metric] if beam == 5 else "",
                             *delta_cells(pairs, f"test/{metric}_beam{beam}", d, paper)])
                if paper is not None:
                    verdicts.append(paper_verdict(d, paper))
                    claims.append(delta_claim(
                        f"table5_{scale}_beam{beam}_{metric}",
                        f"Gigaword-10k, UniLM: sparse-softmax beats softmax on {metric} at beam {beam}", paper, d, scale, pairs,
                        source=EXPERIMENT,
                    ))
        throughput = f"Decoding throughput (test examples/s, beam {' / beam '.join(map(str, beams))}): " + "; ".join(
            f"{name} " + " / ".join(f"{np.mean([r['metrics'][f'test/examples_per_s_beam{b}'] for r in recs]):.2f}" for b in beams)
            for name, recs in (("softmax", [p[0] for p in pairs]), ("sparse", [p[1] for p in pairs]))
        )
        table = markdown_table(["beam", "metric", "UniLM paper (beam 5)", *DELTA_HEADER], rows)
        sections.append(section(scale, pairs, runs, unit="pair", table=table, throughput=throughput, beams=beams,
                                verdicts=verdicts, paper_model=PAPER_MODEL, lone=lone.get(scale)))
    text = (
        "# Table 5: Gigaword-10k, UniLM fine-tuned with softmax vs sparse-softmax\n\n"
        f"Built by `{page_command(EXPERIMENT, results_dir)}` from `{shown_path(runs / EXPERIMENT)}/` (`make reproduce-table5`); "
        f"records from {commits(load_records(runs, EXPERIMENT))}.\n"
        "ROUGE F1 x 100 (rouge-score, stemmed; UniLM used ROUGE-1.5.5); softmax and sparse-softmax cells are mean ± 95% "
        "Student-t half-width over seeds (n = seeds). Δ = sparse − softmax; each seed's item interval is a paired "
        f"bootstrap ({BOOTSTRAP_SAMPLES} resamples) over its test examples. {SEED_INTERVAL_NOTE} {VERDICT_RULES} "
        "The paper reports deltas only in our sources; UniLM's own result is BERT-large-sized, ours is what the scale names.\n\n"
        + settings_part(seq2seq_settings("gigaword"), setting_columns(by_setting),
                        "Sun et al. 2021's §4 on summarisation (Table 5)") + "\n"
        + "\n".join(sections)
    )
    write_page(out or results_dir, EXPERIMENT, text, claims + paper_setting_claims(by_setting, claims, EXPERIMENT))
