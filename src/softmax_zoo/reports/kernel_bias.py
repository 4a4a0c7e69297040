"""Blanc & Rendle 2018's bias study on Penn Treebank: results/kernel_bias.md, its figures and claims rows.

Two settings, each a set of records: ``kernel_bias`` (``make reproduce-kernel-bias``) and ``kernel_bias_paper``
(``make reproduce-kernel-bias-paper``, a paper-like setting of ours). Per setting the same LSTM is trained with the
sampled head for each sampler x m and once with the full softmax; compared is the final full-softmax validation loss
(nats/token). templates/kernel_bias.md.j2 holds the page's words, templates/_lm_figures.j2 its figures'.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..records import get, load_records, runs_dir, seeds_of
from . import _kernel_bias_claims as claims
from ._compare import Design
from ._kernel_bias_claims import DIAGNOSTICS as DIAGNOSTICS  # where studies.sampler_bias writes what this page reads
from ._kernel_bias_claims import EXPERIMENT, KERNELS, PAPER_SETTING, SAMPLERS, cells, diagnostics, log_curve, ordered, sampler_name
from ._pages import commits, line_plot, page_command, pyplot, save_figure, shown_path
from ._render import publish, words
from ._settings import NOT_STATED, Records, Setting, joined, seeds, settings_data
from ._stats import mean
from ._verdicts import MIN_SEEDS, no_interval_verdict

# The full-softmax learning rates compared for the paper-like setting's plain SGD (ours; 300 steps each); no record keeps
# them. The chosen rate, 20, is the grid's largest: a larger rate was not tried.
SGD_RATE_GRID = (1, 10, 20)
WORDS = words("_kernel_bias_settings.j2", MIN_SEEDS=MIN_SEEDS, rate_grid=SGD_RATE_GRID)
SETUP = ("model.hidden_size", "task.bptt", "train.optim", "train.lr", "loss.bias")  # the config keys a section names
FIGURE = words("_lm_figures.j2")
# One look per sampler (marker, line style, colour map), so that two samplers with the same losses stay apart.
STYLES = {"uniform": ("o", ":", "Blues"), "unigram": ("s", "-.", "Purples"), "quadratic": ("^", "--", "Oranges"),
          "quadratic_centred": ("v", "-", "Greens"), "softmax": ("D", (0, (5, 1, 1, 1)), "Greys")}
SHIFT = 0.1  # octaves between neighbouring samplers' points along the log-m axis, centred on the true m


def ours(records: Records) -> dict[str, object]:
    """The values a setting's column shows: model, the grid of m per sampler, α, schedule, optimiser."""
    first, grid = records[0], {name: sorted(per_m) for name, per_m in cells(records).items() if name is not None}
    return {"hidden": get(first, "config.model.hidden_size"), "bptt": get(first, "config.task.bptt"),
            "batch": get(first, "config.train.batch_size"), "grid": grid,
            "alpha": joined([r for r in records if sampler_name(r) in KERNELS], "config.loss.sampler.alpha"),
            "clip": get(first, "config.train.max_grad_norm"), "steps": first["timing"]["global_steps"], "seeds": seeds(records),
            "optim": get(first, "config.train.optim"), "lr": joined(records, "config.train.lr"),
            "paper": first["experiment"] == PAPER_SETTING}


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
    more = [row for e, records in found.items()
            for row in claims.diminishing_row(records, e) + claims.deviation_row(results_dir, e) + claims.adapts_row(results_dir, e)]
    more += [{"kind": "design", "id": id_, "source": EXPERIMENT} for id_ in claims.DESIGN_IDS]
    # the page's choices beside the review's (it states none): ours per setting, None where a row is not that setting's
    chosen = [Setting(name, NOT_STATED, lambda rs, name=name: str(WORDS.ours(name, ours(rs))) or None, why)
              for name, why in WORDS.why.items()]
    settings = settings_data(chosen, found, "the review")  # every setting kept has records: setting() raises otherwise
    return {"command": page_command(EXPERIMENT, results_dir), "sections": sections, "findings": findings, "more": more,
            "settings": settings, "flat_gain": claims.FLAT_GAIN, "undecided": no_interval_verdict, "design": Design.PAIRED_BY_SEED.value,
            "claims": findings + reviewed + more + [claims.log_time_claim(results_dir)]}


def plot(full: list[float], grid: dict[str, dict[int, list[float]]], path: Path, title: str) -> None:
    """Each sampler's final full-softmax validation loss (mean over seeds) against m, the full softmax's as a line."""
    names = [s for s in SAMPLERS if s in grid]
    with line_plot(path, **FIGURE.loss_vs_m, title=str(FIGURE.loss_vs_m_title(title))) as ax:
        for i, name in enumerate(names):
            ms = sorted(grid[name])
            shift = 2 ** (SHIFT * (i - (len(names) - 1) / 2))
            marker, style, _ = STYLES.get(name, ("o", "-", "Greys"))
            ax.plot([m * shift for m in ms], [mean(grid[name][m]) for m in ms], marker=marker, linestyle=style, markersize=7,
                    markerfacecolor="none" if name == "quadratic_centred" else None, label=str(FIGURE.sampled(name)),
                    linewidth=2.2 if name == "quadratic" else 1.2, zorder=4 if name == "quadratic" else 3)
        ax.axhline(mean(full), color="black", linestyle="--", label="full softmax")
        ax.set_xscale("log", base=2)


def curves_plot(records: list[dict[str, Any]], path: Path, title: str) -> None:
    """Validation perplexity against step, one panel per sampler: per m the geometric mean over seeds (thin: each seed),
    darker for larger m, and the full softmax's, from the runs of ``records`` with a validation curve."""
    def mean_curve(curves: list[dict[int, float]]) -> tuple[list[int], list[float]]:  # at the steps every seed logged
        steps = sorted(set.intersection(*(set(c) for c in curves)))
        return steps, [math.exp(mean([c[s] for c in curves])) for s in steps]  # geometric mean over seeds

    by = {(name, m): curves for name, per_m in cells(records).items() for m, rs in per_m.items()  # (sampler, m) -> per seed
          if (curves := [c for r in rs if (c := log_curve(r))])}
    sizes = sorted({h["val/curve_tokens"] for r in records for h in r.get("history", []) if "val/curve_tokens" in h})
    names = ordered({n for n, _ in by} - {None})
    full = [c for (n, _), cs in by.items() if n is None for c in cs]
    fig, axes = pyplot().subplots(1, len(names), figsize=(3.4 * len(names), 4.8), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        ms = sorted(m for n, m in by if n == name)
        cmap = pyplot().get_cmap(STYLES.get(name, ("", "", "Greys"))[2])
        for m in ms:
            colour = cmap(0.45 + 0.5 * ms.index(m) / max(1, len(ms) - 1))  # darker = larger m
            for curve in by[name, m]:
                ax.plot(list(curve), [math.exp(v) for v in curve.values()], color=colour, linewidth=0.6, alpha=0.45)
            ax.plot(*mean_curve(by[name, m]), color=colour, linewidth=1.8, label=f"m={m} (n={len(by[name, m])})")
        if full:
            ax.plot(*mean_curve(full), color="black", linestyle="--", linewidth=1.8, label="full softmax")
        ax.set(title=str(FIGURE.sampler(name)), xlabel=FIGURE.step, yscale="log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, title=FIGURE.seeds_legend, title_fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    axes[0][0].set_ylabel(str(FIGURE.curves_ylabel(sizes)))
    fig.suptitle(str(FIGURE.curves_title(title)))
    save_figure(fig, path)


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write kernel_bias.md, its figures and the kernel-bias rows of claims.md into ``out`` (default ``results_dir``)."""
    out, data = Path(out or results_dir), summarise(results_dir)
    for s in (s for s in data["sections"] if s["complete"]):
        plot(s["full"], s["grid"], out / f"{s['experiment']}.png", s["title"])
        if s["curves"]:
            curves_plot(s["records"], out / f"{s['experiment']}_curves.png", s["title"])
    publish(out, EXPERIMENT, data)
