"""Blanc & Rendle 2018's bias study on Penn Treebank: results/kernel_bias.md, its figures and claims rows.

Two settings, each a set of records: ``kernel_bias`` (``make reproduce-kernel-bias``) and ``kernel_bias_paper``
(``make reproduce-kernel-bias-paper``, a paper-like setting of ours). Per setting the same LSTM is trained with the
sampled head for each sampler x m and once with the full softmax; compared is the final full-softmax validation loss
(nats/token). templates/kernel_bias.md.j2 holds the page's words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records import get, load_records, runs_dir
from ._compare import Design
from ._kernel_bias_claims import DIAGNOSTICS as DIAGNOSTICS  # where studies.sampler_bias writes what this page reads
from ._kernel_bias_claims import EXPERIMENT, KERNELS, PAPER_SETTING, cells, finding, log_time_claim, ordered, review_claims, values
from ._kernel_bias_plots import curves_plot, plot
from ._kernel_bias_review import DESIGN_IDS, FLAT_GAIN, diagnostics, review_rows
from ._kernel_bias_settings import WORDS, kernel_bias_settings
from ._pages import commits, page_command, shown_path, write_page
from ._render import render_page
from ._settings import settings_data
from ._stats import mean
from ._verdicts import no_interval_verdict

SETUP = ("model.hidden_size", "task.bptt", "train.optim", "train.lr", "loss.bias")  # the config keys a section names


def setting(results_dir: str | Path, experiment: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One setting's section: its setup, the table, the findings per kernel, the validation curves, the diagnostics."""
    folder = runs_dir(results_dir) / experiment
    if not records:
        raise FileNotFoundError(f"no records in {folder}; run `make reproduce-kernel-bias` first")
    by = cells(records)
    full, grid = values(by)
    data = {"experiment": experiment, "title": WORDS.titles[experiment], "paper_setting": experiment == PAPER_SETTING,
            "folder": shown_path(folder), "n_records": len(records), "complete": bool(full and grid)}
    if not data["complete"]:
        return data
    ms = sorted({m for per_m in grid.values() for m in per_m})
    return data | {"commits": commits(records), "seeds": sorted({r["seed"] for r in records}), "ms": ms, "full": full, "grid": grid,
                   "setup": {key.split(".")[1]: get(records[0], f"config.{key}") for key in SETUP},
                   "steps": records[0]["timing"]["global_steps"], "base": mean(full),
                   "rows": [(name, [(mean(grid[name][m]), len(grid[name][m])) if m in grid[name] else None for m in ms])
                            for name in ordered(grid)],
                   "oracle_gap": max((abs(mean(v) - mean(full)) for v in grid.get("softmax", {}).values()), default=None),
                   "findings": [finding(by, k, experiment) for k in KERNELS if k in by], "records": records,
                   "curves": any("val/curve_perplexity" in h for r in records for h in r.get("history", [])),
                   "diagnostics": (found := diagnostics(results_dir, experiment)),
                   "trained": sorted({r["meta"].get("trained_by") for r in found} - {None})}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the settings, per setting its section, the review's rows, the ledger rows."""
    found = {e: load_records(runs_dir(results_dir), e) for e in (EXPERIMENT, PAPER_SETTING)}
    found = {e: records for e, records in found.items() if records or e == EXPERIMENT}  # the paper-like setting's are optional
    sections = [setting(results_dir, e, records) for e, records in found.items()]
    findings = [f for s in sections if s["complete"] for f in s["findings"]]
    reviewed = [row for e, records in found.items() for row in review_claims(records, e)]
    more = [row for e, records in found.items() for row in review_rows(results_dir, records, e)]
    more += [{"kind": "design", "id": id_, "source": EXPERIMENT} for id_ in DESIGN_IDS]
    settings = settings_data(kernel_bias_settings(), {e: records for e, records in found.items() if records}, "the review")
    return {"command": page_command(EXPERIMENT, results_dir), "sections": sections, "findings": findings, "more": more,
            "settings": settings, "flat_gain": FLAT_GAIN, "undecided": no_interval_verdict,
            "design": Design.PAIRED_BY_SEED.value,
            "claims": findings + reviewed + more + [log_time_claim(results_dir)]}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write kernel_bias.md, its figures and the kernel-bias rows of claims.md into ``out`` (default ``results_dir``)."""
    out, data = Path(out or results_dir), summarise(results_dir)
    for s in (s for s in data["sections"] if s["complete"]):
        plot(s["full"], s["grid"], out / f"{s['experiment']}.png", s["title"])
        if s["curves"]:
            curves_plot(s["records"], out / f"{s['experiment']}_curves.png", s["title"])
    write_page(out, EXPERIMENT, *render_page(f"{EXPERIMENT}.md.j2", data))
