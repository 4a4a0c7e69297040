"""Sparse-softmax Table 5: Gigaword-10k ROUGE of UniLM fine-tuned with softmax vs sparse-softmax.

``python -m softmax_zoo.reports table5`` (the last step of ``make reproduce-table5``) reads the
records of experiment ``table5`` and their test predictions (``<run>.test.predictions.jsonl``) and
writes ``results/table5.md`` (templates/table5.md.j2) and its rows of the claims ledger: per scale,
beam and ROUGE metric, both arms over seeds and Δ = sparse − softmax compared paired by test item
within each seed (:data:`softmax_zoo.reports._compare.Design.PAIRED_BY_ITEM`). The paper's absolute
ROUGE values are not in our sources; the page gives its deltas and UniLM's published Gigaword-10k
result (beam 5) for scale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

EXPERIMENT = "table5"
# Sun et al. 2021, Table 5: sparse − softmax on Gigaword-10k, UniLM.
PAPER_DELTAS = {1: {"rouge1": 0.67, "rouge2": 0.79}, 5: {"rouge1": 0.28, "rouge2": 0.55}}
# UniLM v1 (Dong et al. 2019) Gigaword-10k test, beam 5: unilm-v1 README.
UNILM_BEAM5 = {"rouge1": 34.21, "rouge2": 15.28, "rougeL": 31.54}
METRICS = ("rouge1", "rouge2", "rougeL")


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: per setting (scale) a section of rows (beam, metric) and the claims rows."""
    runs = runs_dir(results_dir)
    by_setting, lone = load_pairs(runs, EXPERIMENT)
    sections, claims = [], []
    for scale, pairs in by_setting.items():
        beams = sorted(int(b) for b in pairs[0][0]["config"]["task"]["decode"]["beams"])
        rows = []
        for beam in beams:
            for metric in METRICS:
                spec = Comparison(*ARMS, f"{metric} at beam {beam}", Design.PAIRED_BY_ITEM)
                items = per_seed_scores(pairs, runs, lambda r: r[f"beam{beam}"][metric])
                paper = PAPER_DELTAS.get(beam, {}).get(metric)
                rows.append(delta_row(pairs, f"test/{metric}_beam{beam}", compare(spec, items=items, num_samples=BOOTSTRAP_SAMPLES),
                                      paper, [beam, metric, UNILM_BEAM5[metric] if beam == 5 else ""]))
        section = setting(scale, pairs, runs, beams, lone.get(scale), rows)
        sections.append(section)
        claims += [claim(f"{EXPERIMENT}_{scale}_beam{r['lead'][0]}_{r['lead'][1]}", r, section, EXPERIMENT,
                         beam=r["lead"][0], metric=r["lead"][1]) for r in rows if r["paper"] is not None]
    settings = settings_data(seq2seq_settings("gigaword"), setting_columns(by_setting), "Sun et al. 2021's §4 on summarisation (Table 5)")
    data = page(EXPERIMENT, results_dir, sections, claims + paper_setting_claims(by_setting, claims, EXPERIMENT), settings)
    return data | {"unilm": UNILM_BEAM5}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/table5.md`` and the table5 rows of ``<out>/claims.md`` (``out`` defaults to ``results_dir``)."""
    data = summarise(results_dir)
    write_page(out or results_dir, EXPERIMENT, *render_page(f"{EXPERIMENT}.md.j2", data))
