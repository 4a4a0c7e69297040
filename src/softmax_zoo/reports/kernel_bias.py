"""Blanc & Rendle 2018's bias study on Penn Treebank: results/kernel_bias.md, its figures and claims rows.

Two settings, each a set of records: ``kernel_bias`` (``make reproduce-kernel-bias``) and ``kernel_bias_paper``
(``make reproduce-kernel-bias-paper``, a paper-like setting of ours). Per setting the same LSTM is trained with the
sampled head for each sampler x m and once with the full softmax; compared is the final full-softmax validation loss
(nats/token). templates/kernel_bias.md.j2 holds the page's words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records import get, load_records, runs_dir, seeds_of
from . import _kernel_bias_claims as claims
from ._compare import Design
from ._kernel_bias_claims import DIAGNOSTICS as DIAGNOSTICS  # where studies.sampler_bias writes what this page reads
from ._kernel_bias_claims import EXPERIMENT, KERNELS, PAPER_SETTING, cells, diagnostics, sampler_name
from ._kernel_bias_plots import curves_plot, plot
from ._pages import commits, page_command, shown_path
from ._render import publish, words
from ._settings import NOT_STATED, Records, Setting, joined, seeds, settings_data
from ._stats import mean
from ._verdicts import MIN_SEEDS, no_interval_verdict

# The full-softmax learning rates compared for the paper-like setting's plain SGD (ours; 300 steps each); no record keeps
# them. The chosen rate, 20, is the grid's largest: a larger rate was not tried.
SGD_RATE_GRID = (1, 10, 20)
WORDS = words("_kernel_bias_settings.j2", MIN_SEEDS=MIN_SEEDS, rate_grid=SGD_RATE_GRID)
SETUP = ("model.hidden_size", "task.bptt", "train.optim", "train.lr", "loss.bias")  # the config keys a section names


def ours(records: Records) -> dict[str, object]:
    """The values a setting's column shows: model, the grid of m per sampler, α, schedule, optimiser."""
    first, grid = records[0], {name: sorted(per_m) for name, per_m in cells(records).items() if name is not None}
    return {"hidden": get(first, "config.model.hidden_size"), "bptt": get(first, "config.task.bptt"),
            "batch": get(first, "config.train.batch_size"), "grid": grid,
            "alpha": joined([r for r in records if sampler_name(r) in KERNELS], "config.loss.sampler.alpha"),
            "clip": get(first, "config.train.max_grad_norm"), "steps": first["timing"]["global_steps"], "seeds": seeds(records),
            "optim": get(first, "config.train.optim"), "lr": joined(records, "config.train.lr"),
            "paper": first["experiment"] == PAPER_SETTING}


def kernel_bias_settings() -> list[Setting]:
    """The rows of the page's choices beside the review's (it states none): ours per setting (None where a row is not
    that setting's), worded with the reasons by templates/_kernel_bias_settings.j2."""
    return [Setting(name, NOT_STATED, lambda rs, name=name: str(WORDS.ours(name, ours(rs))) or None, why)
            for name, why in WORDS.why.items()]


def setting(results_dir: str | Path, experiment: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One setting's section: its setup, the table, the findings per kernel, the validation curves, the diagnostics."""
    folder = runs_dir(results_dir) / experiment
    if not records:
        raise FileNotFoundError(f"no records in {folder}; run `make reproduce-kernel-bias` first")
    by = cells(records)
    full, grid = claims.values(by)
    data = {"experiment": experiment, "title": WORDS.titles[experiment], "paper_setting": experiment == PAPER_SETTING,
            "folder": shown_path(folder), "n_records": len(records), "complete": bool(full and grid)}
    if not data["complete"]:
        return data
    ms = sorted({m for per_m in grid.values() for m in per_m})
    return data | {"commits": commits(records), "seeds": seeds_of(records), "ms": ms, "full": full, "grid": grid,
                   "setup": {key.split(".")[1]: get(records[0], f"config.{key}") for key in SETUP},
                   "steps": records[0]["timing"]["global_steps"], "base": mean(full),
                   "rows": [(name, [(mean(grid[name][m]), len(grid[name][m])) if m in grid[name] else None for m in ms])
                            for name in claims.ordered(grid)],
                   "oracle_gap": max((abs(mean(v) - mean(full)) for v in grid.get("softmax", {}).values()), default=None),
                   "findings": [claims.finding(by, k, experiment) for k in KERNELS if k in by], "records": records,
                   "curves": any("val/curve_perplexity" in h for r in records for h in r.get("history", [])),
                   "diagnostics": (found := diagnostics(results_dir, experiment)),
                   "trained": sorted({r["meta"].get("trained_by") for r in found} - {None})}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the settings, per setting its section, the review's rows, the ledger rows."""
    found = {e: load_records(runs_dir(results_dir), e) for e in (EXPERIMENT, PAPER_SETTING)}
    found = {e: records for e, records in found.items() if records or e == EXPERIMENT}  # the paper-like setting's are optional
    sections = [setting(results_dir, e, records) for e, records in found.items()]
    findings = [f for s in sections if s["complete"] for f in s["findings"]]
    reviewed = [row for e, records in found.items() for row in claims.review_claims(records, e)]
    more = [row for e, records in found.items() for row in claims.review_rows(results_dir, records, e)]
    more += [{"kind": "design", "id": id_, "source": EXPERIMENT} for id_ in claims.DESIGN_IDS]
    settings = settings_data(kernel_bias_settings(), {e: records for e, records in found.items() if records}, "the review")
    return {"command": page_command(EXPERIMENT, results_dir), "sections": sections, "findings": findings, "more": more,
            "settings": settings, "flat_gain": claims.FLAT_GAIN, "undecided": no_interval_verdict, "design": Design.PAIRED_BY_SEED.value,
            "claims": findings + reviewed + more + [claims.log_time_claim(results_dir)]}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write kernel_bias.md, its figures and the kernel-bias rows of claims.md into ``out`` (default ``results_dir``)."""
    out, data = Path(out or results_dir), summarise(results_dir)
    for s in (s for s in data["sections"] if s["complete"]):
        plot(s["full"], s["grid"], out / f"{s['experiment']}.png", s["title"])
        if s["curves"]:
            curves_plot(s["records"], out / f"{s['experiment']}_curves.png", s["title"])
    publish(out, EXPERIMENT, data)
