"""Blanc & Rendle 2018's bias study on Penn Treebank: results/kernel_bias.md, .png and claims.

Two settings, each a set of records: ``experiment_name=kernel_bias`` (``make reproduce-kernel-bias``:
Adagrad, an output bias, 400 steps) and ``kernel_bias_paper`` (``make reproduce-kernel-bias-paper``,
a paper-like setting of ours: no output bias, plain SGD, 1,200 steps with validation curves). In each, the same LSTM is trained
for the same steps and seeds with the sampled head for each sampler x m, and once with the full
softmax. The quantity compared is the final *full-softmax* validation loss (nats per
token; evaluation of a sampled head is the full softmax of its weights) and its gap to the
full-softmax run. A biased sampler trains towards a different optimum, so its gap shrinks only as m
grows; the paper's claim is that the quadratic kernel reaches a given gap with 10-100x fewer
samples than uniform sampling, and that the softmax sampler (the oracle) is unbiased.

Each setting's section, when results/diagnostics/sampler_bias/<experiment>/ holds diagnostics of
its full-softmax run's checkpoints (``python -m softmax_zoo.studies.sampler_bias``, ``make sampler-diagnostic``),
shows per checkpoint how far each sampler's q is from the model's p and the bias of the sampled
loss and output-layer gradient, measured directly at fixed weights.

:func:`summarise` gathers the page's data (the review's other findings from :mod:`._kernel_bias_claims`
and :mod:`._kernel_bias_review`); templates/kernel_bias.md.j2 holds its words. Build:
``python -m softmax_zoo.reports kernel_bias``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..records import get, load_records, runs_dir
from ._kernel_bias_claims import (
    DIAGNOSTICS,
    EXPERIMENT,
    KERNELS,
    PAPER_LIKE_ID,
    PAPER_SETTING,
    SAMPLERS,
    collect,
    fewer_samples_verdict,
    log_time_claim,
    review_claims,
    sampler_name,
)
from ._kernel_bias_plots import curves_plot, plot
from ._kernel_bias_review import DESIGN_IDS, FLAT_GAIN, review_rows
from ._kernel_bias_settings import kernel_bias_settings
from ._pages import commits, page_command, shown_path, write_page
from ._render import render_page
from ._settings import settings_data
from ._stats import mean, seeds_label
from ._verdicts import no_interval_verdict, not_tested

TITLES = {EXPERIMENT: "Our setting: Adagrad, an output bias, 400 steps",  # each setting's section and figure title
          PAPER_SETTING: "A paper-like setting (ours): no output bias, plain SGD, 1,200 steps"}
FEWER_SAMPLES = 10.0  # the paper: one to two orders of magnitude (10-100x) fewer samples than uniform
Grid = dict[str, dict[int, list[float]]]  # sampler -> m -> final validation losses over seeds


def samplers(grid: Grid) -> list[str]:
    """The page's sampler order, others after."""
    return [s for s in SAMPLERS if s in grid] + sorted(set(grid) - set(SAMPLERS))


def finding(full: list[float], grid: Grid, kernel: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """The 10-100x claim for ``kernel``: per uniform point (m_u, gap_u) the ratio m_u / m_k, m_k the smallest ``kernel`` m
    reaching gap_u; the uniform m it never reaches; the m where another sampler beat the quadratic kernel; the verdict.

    The verdict is seed-aware where ``records`` have :data:`~._verdicts.MIN_SEEDS` seeds in a kernel cell and in a uniform
    cell with 10x its samples (:func:`~._kernel_bias_claims.fewer_samples_verdict`); otherwise the largest ratio, which
    has no interval over seeds, decides nothing.
    """
    seeds = sorted({r["seed"] for r in records if sampler_name(r) == kernel})
    gaps = {name: {m: mean(v) - mean(full) for m, v in per_m.items()} for name, per_m in grid.items()}
    reached = {m_u: min((m for m, g in gaps[kernel].items() if g <= gap_u), default=None)
               for m_u, gap_u in sorted(gaps.get("uniform", {}).items())}
    ratios = {m_u: m_u / m_k for m_u, m_k in reached.items() if m_k is not None}
    m_best = max(ratios, key=ratios.get, default=None)
    best = ratios.get(m_best, 0.0)
    reach = f"largest ratio {best:.1f}x, {'at or above' if best >= FEWER_SAMPLES else 'below'} the paper's {FEWER_SAMPLES:g}x"
    verdict = fewer_samples_verdict(records, kernel, FEWER_SAMPLES) or no_interval_verdict(
        seeds, reach, single="; one run per arm decides nothing", many=" on the seeds' mean gaps, which give no interval over seeds")
    winners = {m: min((s for s in gaps if s not in ("softmax", "quadratic_centred") and m in gaps[s]), key=lambda s: gaps[s][m])
               for m in gaps.get("quadratic", {})}
    rivals = {rival: [m for m in sorted(winners) if winners[m] == rival] for rival in gaps if rival not in ("softmax", *KERNELS)}
    if not reached:
        verdict = not_tested(f"the uniform or {kernel} runs are missing ({seeds_label(seeds)})")
    return {"kind": "fewer", "kernel": kernel, "missing": not reached, "ratios": ratios,
            "unreached": [m for m, m_k in reached.items() if m_k is None],
            "best": best, "m_best": m_best, "seeds": seeds, "verdict": verdict, "points": len(winners),
            "rivals": {r: ms for r, ms in rivals.items() if ms and kernel == "quadratic"}}


def setting(results_dir: str | Path, experiment: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """One setting's section: its setup, the table, the findings per kernel, the validation curves, the diagnostics."""
    folder = runs_dir(results_dir) / experiment
    if not records:
        raise FileNotFoundError(f"no records in {folder}; run `make reproduce-kernel-bias` first")
    full, grid = collect(records)
    data = {"experiment": experiment, "title": TITLES[experiment], "paper_setting": experiment == PAPER_SETTING,
            "folder": shown_path(folder), "n_records": len(records), "complete": bool(full and grid)}
    if not data["complete"]:
        return data
    suffix = PAPER_LIKE_ID if data["paper_setting"] else ""
    findings = [finding(full, grid, k, records) | {"id": f"kernel-bias-{'10-100x' if k == 'quadratic' else 'centred'}{suffix}",
                                                   "paper_setting": data["paper_setting"], "source": EXPERIMENT}
                for k in KERNELS if k in grid]
    ms = sorted({m for per_m in grid.values() for m in per_m})
    keys = ("model.hidden_size", "task.bptt", "train.optim", "train.lr", "loss.bias")
    setup = {key.split(".")[1]: get(records[0], f"config.{key}") for key in keys} | {"steps": records[0]["timing"]["global_steps"]}
    return data | {"commits": commits(records), "setup": setup, "seeds": sorted({r["seed"] for r in records}), "ms": ms,
                   "full": full, "grid": grid, "base": mean(full),
                   "rows": [(name, [(mean(grid[name][m]), len(grid[name][m])) if m in grid[name] else None for m in ms])
                            for name in samplers(grid)],
                   "oracle_gap": max((abs(mean(v) - mean(full)) for v in grid.get("softmax", {}).values()), default=None),
                   "findings": findings, **curves(records),
                   "diagnostics": (found := diagnostics(results_dir, experiment)),
                   "trained": sorted({r["meta"].get("trained_by") for r in found} - {None})}


def diagnostics(results_dir: str | Path, experiment: str = EXPERIMENT) -> list[dict[str, Any]]:
    """The fixed-checkpoint diagnostics of ``experiment``'s full-softmax run, by step: per result its ms and per sampler its
    KL (>= 0; a negative value is rounding) and loss and gradient bias per m (None where not measured)."""
    results = sorted((json.loads(f.read_text()) for f in Path(results_dir, DIAGNOSTICS, experiment).glob("*.json")),
                     key=lambda r: r["meta"]["step"])
    for result in results:
        result["ms"] = sorted({r["m"] for r in result["rows"]})
        per: dict[str, dict[int, dict[str, Any]]] = {}
        for r in result["rows"]:
            per.setdefault(r["sampler"], {})[r["m"]] = r
        result["samplers"] = [{"name": name, "kl": max(next(iter(cells.values()))["kl"], 0.0),
                               **{key: [cells[m][f"{key}_bias"] if m in cells else None for m in result["ms"]] for key in ("loss", "grad")}}
                              for name, cells in per.items()]
    return results


def curves(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per run with a validation curve: (its sampler, None for the full softmax; its m; its (step, perplexity) points),
    and the curves' validation-prefix sizes in tokens."""
    found = [(sampler_name(r), get(r, "config.loss.num_samples") or 0,
              [(h["step"], h["val/curve_perplexity"]) for h in r.get("history", []) if "val/curve_perplexity" in h]) for r in records]
    return {"curves": [c for c in found if c[2]],
            "curve_tokens": sorted({h["val/curve_tokens"] for r in records for h in r.get("history", []) if "val/curve_tokens" in h})}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the settings, per setting its section, the review's rows, the ledger rows."""
    runs = runs_dir(results_dir)
    found = {e: load_records(runs, e) for e in TITLES}
    found = {e: records for e, records in found.items() if records or e == EXPERIMENT}  # the paper-like setting's are optional
    sections = [setting(results_dir, e, records) for e, records in found.items()]
    findings = [f for s in sections if s["complete"] for f in s["findings"]]
    reviewed = [row for e, records in found.items() for row in review_claims(records, e)]
    more = [row for e, records in found.items() for row in review_rows(results_dir, records, e)]
    more += [{"kind": "design", "id": id_, "source": EXPERIMENT} for id_ in DESIGN_IDS]
    settings = settings_data(kernel_bias_settings(), {e: records for e, records in found.items() if records}, "the review")
    return {"command": page_command(EXPERIMENT, results_dir), "sections": sections, "findings": findings, "more": more,
            "settings": settings, "flat_gain": FLAT_GAIN, "claims": findings + reviewed + more + [log_time_claim(results_dir)]}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write kernel_bias.md, its figures and the kernel-bias rows of claims.md into ``out`` (default ``results_dir``)."""
    out, data = Path(out or results_dir), summarise(results_dir)
    for s in (s for s in data["sections"] if s["complete"]):
        plot(s["full"], s["grid"], out / f"{s['experiment']}.png", s["title"])
        if s["curves"]:
            curves_plot(s["curves"], s["curve_tokens"], out / f"{s['experiment']}_curves.png", s["title"])
    write_page(out, EXPERIMENT, *render_page(f"{EXPERIMENT}.md.j2", data))
