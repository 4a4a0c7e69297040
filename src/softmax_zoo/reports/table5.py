"""Sparse-softmax Table 5: Gigaword-10k ROUGE of UniLM fine-tuned with softmax vs sparse-softmax.

``python -m softmax_zoo.reports table5`` (the last step of ``make reproduce-table5``) reads the
records of experiment ``table5`` and their test predictions
(``<run>.test.predictions.jsonl``), and writes ``results/table5.md``: for each scale and beam,
our ROUGE-1/2/L of both losses (mean over seeds), the delta sparse − softmax with a paired
bootstrap 95% CI over test examples (examples of every seed pooled, each paired with the same
example and seed of the other loss), the paper's delta, and a verdict; plus rows of the claims
ledger (results/claims.md). The paper's absolute ROUGE values are not in our sources; the table
gives its deltas and UniLM's published Gigaword-10k result (beam 5) for scale.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..records import runs_dir
from ._pages import markdown_table, page_command, shown_path, write_page
from ._seq2seq import BOOTSTRAP_SAMPLES, delta_cells, delta_claim, load_pairs, paper_setting_claims, pooled, section
from ._stats import paired_bootstrap

EXPERIMENT = "table5"
# Sun et al. 2021, Table 5: sparse − softmax on Gigaword-10k, UniLM.
PAPER_DELTAS = {1: {"rouge1": 0.67, "rouge2": 0.79}, 5: {"rouge1": 0.28, "rouge2": 0.55}}
# UniLM v1 (Dong et al. 2019) Gigaword-10k test, beam 5: unilm-v1 README.
UNILM_BEAM5 = {"rouge1": 34.21, "rouge2": 15.28, "rougeL": 31.54}
METRICS = ("rouge1", "rouge2", "rougeL")


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/table5.md`` and the table5 rows of ``<out>/claims.md`` (``out`` defaults to ``results_dir``)."""
    runs = runs_dir(results_dir)
    sections, claims = [], []
    by_setting = load_pairs(runs, EXPERIMENT)
    for scale, pairs in by_setting.items():
        rows = []
        beams = sorted(int(b) for b in pairs[0][0]["config"]["task"]["decode"]["beams"])
        for beam in beams:
            for metric in METRICS:
                a, b = pooled(pairs, runs, lambda r: r[f"beam{beam}"][metric])
                d = paired_bootstrap(a, b, num_samples=BOOTSTRAP_SAMPLES)
                paper = PAPER_DELTAS.get(beam, {}).get(metric)
                rows.append([beam, metric, UNILM_BEAM5[metric] if beam == 5 else "",
                             *delta_cells(pairs, f"test/{metric}_beam{beam}", d, paper)])
                if paper is not None:
                    claims.append(delta_claim(
                        f"table5_{scale}_beam{beam}_{metric}",
                        f"Gigaword-10k, UniLM: sparse-softmax beats softmax on {metric} at beam {beam}", paper, d, scale, pairs, len(a),
                        source=EXPERIMENT,
                    ))
        throughput = "Decoding throughput (test examples/s, beam 1 / beam 5): " + "; ".join(
            f"{name} " + " / ".join(f"{np.mean([r['metrics'][f'test/examples_per_s_beam{b}'] for r in recs]):.2f}" for b in beams)
            for name, recs in (("softmax", [p[0] for p in pairs]), ("sparse", [p[1] for p in pairs]))
        )
        table = markdown_table(
            ["beam", "metric", "UniLM paper (beam 5)", "softmax (ours)", "sparse-softmax (ours)", "Δ ours [95% CI]", "Δ paper", "verdict"],
            rows,
        )
        sections.append(section(scale, pairs, runs, unit="pair", table=table, throughput=throughput, beams=beams, rows=rows))
    text = (
        "# Table 5: Gigaword-10k, UniLM fine-tuned with softmax vs sparse-softmax\n\n"
        f"Built by `{page_command(EXPERIMENT, results_dir)}` from `{shown_path(runs / EXPERIMENT)}/` (`make reproduce-table5`).\n"
        "ROUGE F1 x 100 (rouge-score, stemmed; UniLM used ROUGE-1.5.5). Δ = sparse − softmax; the 95% CI is a "
        f"paired bootstrap ({BOOTSTRAP_SAMPLES} resamples) over test examples, seeds pooled. The paper reports "
        "deltas only in our sources; UniLM's own result is BERT-large-sized, ours is what the scale names.\n\n"
        + "\n".join(sections)
    )
    write_page(out or results_dir, EXPERIMENT, text, claims + paper_setting_claims(by_setting, claims, EXPERIMENT))
