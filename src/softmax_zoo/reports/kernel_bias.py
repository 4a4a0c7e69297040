"""Blanc & Rendle 2018's bias study on Penn Treebank: results/kernel_bias.md, its figures and claims rows.

Two settings, each a set of records: ``kernel_bias`` (``make reproduce-kernel-bias``: Adagrad, an output bias, 400 steps)
and ``kernel_bias_paper`` (``make reproduce-kernel-bias-paper``, a paper-like setting of ours). Per setting the same
LSTM is trained with the sampled head for each sampler x m and once with the full softmax; the quantity compared is
the final full-softmax validation loss (nats/token) and its gap to the full-softmax run. The fixed-checkpoint
diagnostics (``python -m softmax_zoo.studies.sampler_bias``) are read from results/diagnostics/sampler_bias/<experiment>/.
templates/kernel_bias.md.j2 holds the page's words.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records import get, load_records, runs_dir
from ._compare import Design
from ._kernel_bias_claims import DIAGNOSTICS as DIAGNOSTICS  # where studies.sampler_bias writes what this page reads
from ._kernel_bias_claims import (
    EXPERIMENT,
    KERNELS,
    PAPER_SETTING,
    SAMPLERS,
    cells,
    fewer_samples,
    log_time_claim,
    review_claims,
    row_id,
    sampler_name,
    values,
)
from ._kernel_bias_plots import curves_plot, plot
from ._kernel_bias_review import DESIGN_IDS, FLAT_GAIN, diagnosed, review_rows
from ._kernel_bias_settings import WORDS, kernel_bias_settings
from ._pages import commits, dirty_note, page_command, shown_path, write_page
from ._render import render_page
from ._settings import settings_data
from ._stats import mean
from ._verdicts import no_interval_verdict

FEWER_SAMPLES = 10.0  # the paper: one to two orders of magnitude (10-100x) fewer samples than uniform
SETUP = ("model.hidden_size", "task.bptt", "train.optim", "train.lr", "loss.bias")  # the config keys a section names


def finding(by: dict, kernel: str, experiment: str) -> dict[str, Any]:
    """The 10-100x claim for ``kernel``: per uniform point (m_u, gap_u) the ratio m_u / m_k, m_k the smallest ``kernel``
    m reaching gap_u; the uniform m it never reaches; the m where another sampler beat the quadratic kernel; the
    seed-aware verdict (:func:`~._kernel_bias_claims.fewer_samples`), or None: the largest ratio decides nothing."""
    full, grid = values(by)
    gaps = {name: {m: mean(v) - mean(full) for m, v in per_m.items()} for name, per_m in grid.items()}
    reached = {m_u: min((m for m, g in gaps[kernel].items() if g <= gap_u), default=None)
               for m_u, gap_u in sorted(gaps.get("uniform", {}).items())}
    ratios = {m_u: m_u / m_k for m_u, m_k in reached.items() if m_k is not None}
    m_best = max(ratios, key=ratios.get, default=None)
    winners = {m: min((s for s in gaps if s not in ("softmax", "quadratic_centred") and m in gaps[s]), key=lambda s: gaps[s][m])
               for m in gaps.get("quadratic", {})}
    rivals = {rival: [m for m in sorted(winners) if winners[m] == rival] for rival in gaps if rival not in ("softmax", *KERNELS)}
    return {"kind": "fewer", "kernel": kernel, "id": row_id("10-100x" if kernel == "quadratic" else "centred", experiment),
            "paper_setting": experiment == PAPER_SETTING, "source": EXPERIMENT, "missing": not reached, "ratios": ratios,
            "unreached": [m for m, m_k in reached.items() if m_k is None], "best": ratios.get(m_best, 0.0), "m_best": m_best,
            "ratio": FEWER_SAMPLES, "seeds": sorted({r["seed"] for rs in by[kernel].values() for r in rs}), "points": len(winners),
            "decided": fewer_samples(by, kernel, FEWER_SAMPLES),
            "rivals": {r: ms for r, ms in rivals.items() if ms and kernel == "quadratic"},
            "dirty": dirty_note([r for name in (None, kernel, "uniform") for rs in by.get(name, {}).values() for r in rs])}


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
    names = [s for s in SAMPLERS if s in grid] + sorted(set(grid) - set(SAMPLERS))
    return data | {"commits": commits(records), "seeds": sorted({r["seed"] for r in records}), "ms": ms, "full": full, "grid": grid,
                   "setup": {key.split(".")[1]: get(records[0], f"config.{key}") for key in SETUP},
                   "steps": records[0]["timing"]["global_steps"], "base": mean(full),
                   "rows": [(name, [(mean(grid[name][m]), len(grid[name][m])) if m in grid[name] else None for m in ms]) for name in names],
                   "oracle_gap": max((abs(mean(v) - mean(full)) for v in grid.get("softmax", {}).values()), default=None),
                   "findings": [finding(by, k, experiment) for k in KERNELS if k in grid], **curves(records),
                   "diagnostics": (found := diagnostics(results_dir, experiment)),
                   "trained": sorted({r["meta"].get("trained_by") for r in found} - {None})}


def diagnostics(results_dir: str | Path, experiment: str = EXPERIMENT) -> list[dict[str, Any]]:
    """The fixed-checkpoint diagnostics of ``experiment``'s full-softmax run, by step, each with its ms and per sampler its
    KL (>= 0; a negative value is rounding) and loss and gradient bias per m (None where not measured)."""
    results = diagnosed(results_dir, experiment)
    for result in results:
        result["ms"] = sorted({r["m"] for r in result["rows"]})
        per: dict[str, dict[int, dict[str, Any]]] = {}
        for r in result["rows"]:
            per.setdefault(r["sampler"], {})[r["m"]] = r
        result["samplers"] = [{"name": name, "kl": max(next(iter(at.values()))["kl"], 0.0),
                               **{key: [at[m][f"{key}_bias"] if m in at else None for m in result["ms"]] for key in ("loss", "grad")}}
                              for name, at in per.items()]
    return results


def curves(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per run with a validation curve (its sampler, None for the full softmax; its m; its (step, perplexity) points),
    and the curves' validation-prefix sizes in tokens."""
    found = [(sampler_name(r), get(r, "config.loss.num_samples") or 0,
              [(h["step"], h["val/curve_perplexity"]) for h in r.get("history", []) if "val/curve_perplexity" in h]) for r in records]
    return {"curves": [c for c in found if c[2]],
            "curve_tokens": sorted({h["val/curve_tokens"] for r in records for h in r.get("history", []) if "val/curve_tokens" in h})}


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
            curves_plot(s["curves"], s["curve_tokens"], out / f"{s['experiment']}_curves.png", s["title"])
    write_page(out, EXPERIMENT, *render_page(f"{EXPERIMENT}.md.j2", data))
