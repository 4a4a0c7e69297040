"""Sparse-softmax Table 5: Gigaword-10k ROUGE of UniLM fine-tuned with softmax vs sparse-softmax (``make reproduce-table5``).

Per scale, beam and ROUGE metric: both arms over seeds and Δ = sparse − softmax compared paired by test item
within each seed (:mod:`._seq2seq`). The paper's absolute ROUGE values are not in our sources; the page gives its
deltas, and UniLM's published Gigaword-10k result (beam 5) for scale. The setting with a trained LM head (``+init``)
heads the page and the cold-start one (a fresh LM head) is its ablation (:func:`._seq2seq.cold_start`). Words: templates/table5.md.j2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import _seq2seq as s2s
from ._compare import Comparison, Design, compare
from ._render import publish

EXPERIMENT = "table5"
# Sun et al. 2021, Table 5: sparse − softmax on Gigaword-10k, UniLM.
PAPER_DELTAS = {1: {"rouge1": 0.67, "rouge2": 0.79}, 5: {"rouge1": 0.28, "rouge2": 0.55}}
# UniLM v1 (Dong et al. 2019) Gigaword-10k test, beam 5: github.com/microsoft/unilm, unilm-v1/README.md, its Gigaword (10K) table.
UNILM_BEAM5 = {"rouge1": 34.21, "rouge2": 15.28, "rougeL": 31.54}
METRICS = ("rouge1", "rouge2", "rougeL")


def rows(pairs: list[s2s.Pair], runs: Path) -> tuple[list[int], list[dict[str, Any]]]:
    """A setting's beams, and its rows: one per (beam, metric), compared paired by test item."""
    beams = sorted(int(b) for b in pairs[0][0]["config"]["task"]["decode"]["beams"])
    out = []
    for beam in beams:
        for metric in METRICS:
            items = s2s.per_seed_scores(pairs, runs, lambda r: r[f"beam{beam}"][metric])
            compared = compare(Comparison(*s2s.ARMS, f"{metric} at beam {beam}", Design.PAIRED_BY_ITEM), items=items,
                               num_samples=s2s.BOOTSTRAP_SAMPLES)
            out.append(s2s.delta_row(pairs, f"test/{metric}_beam{beam}", compared, PAPER_DELTAS.get(beam, {}).get(metric),
                                     [beam, metric, UNILM_BEAM5[metric] if beam == 5 else ""]))
    return beams, out


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: per setting (scale) a section of rows (beam, metric), the claims rows, UniLM's result."""
    data = s2s.summarise(EXPERIMENT, results_dir, "gigaword", rows, lambda r: (f"beam{r['lead'][0]}_{r['lead'][1]}",
                         {"beam": r["lead"][0], "metric": r["lead"][1]}), "Sun et al. 2021's §4 on summarisation (Table 5)")
    return data | {"unilm": UNILM_BEAM5}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/table5.md`` and its claims rows (``out`` defaults to ``results_dir``)."""
    publish(out or results_dir, EXPERIMENT, summarise(results_dir))
