"""More of the review's Blanc & Rendle 2018 findings, as data for templates/kernel_bias.md.j2, which states their rules:
diminishing returns (the gain per doubling of m), deviation and bias (Spearman ρ of KL(p̃‖q̃) against the bias at the last
diagnosed checkpoint), adapts with low bias (KL and |loss bias| of :data:`ADAPTS` at each checkpoint).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from scipy import stats

from ._kernel_bias_claims import DIAGNOSTICS, EXPERIMENT, cells, ordered, row, sampler_name
from ._pages import dirty_note
from ._stats import mean

FLAT_GAIN = 0.05  # nats per doubling of m: ours, about the exact softmax sampler's spread over m in our setting (0.06)
DESIGN_IDS = ("kernel-design-last-hidden-layer", "kernel-design-sampling-only", "kernel-design-partition-function")
ADAPTS = ("quadratic", "uniform")  # the samplers the adapts-low-bias row sets side by side


def diagnostics(results_dir: str | Path, experiment: str = EXPERIMENT) -> list[dict[str, Any]]:
    """The fixed-checkpoint diagnostics of ``experiment``'s full-softmax run, by step, each with its ms and per sampler
    its KL (>= 0; a negative value is rounding) and loss and gradient bias per m (None where not measured)."""
    results = sorted((json.loads(f.read_text()) for f in Path(results_dir, DIAGNOSTICS, experiment).glob("*.json")),
                     key=lambda r: r["meta"]["step"])
    for result in results:
        result["ms"] = ms = sorted({r["m"] for r in result["rows"]})
        at = {(r["sampler"], r["m"]): r for r in result["rows"]}
        result["samplers"] = [{"name": name, "kl": max(next(r for (n, _), r in at.items() if n == name)["kl"], 0.0),
                               **{key: [at[name, m][f"{key}_bias"] if (name, m) in at else None for m in ms] for key in ("loss", "grad")}}
                              for name in dict.fromkeys(r["sampler"] for r in result["rows"])]
    return results


def _curve(record: dict[str, Any]) -> dict[int, float]:
    """step -> ln validation curve perplexity, step 0 (the initialisation) left out."""
    return {h["step"]: math.log(h["val/curve_perplexity"]) for h in record.get("history", [])
            if "val/curve_perplexity" in h and h["step"] > 0}


def gaps_by_m(records: list[dict[str, Any]]) -> tuple[bool, dict[str, dict[int, float]]]:
    """(whether the gaps are along the validation curves, sampler -> m -> gap to the same seed's full softmax, mean over seeds)."""
    by, with_curves = cells(records), all(_curve(r) for r in records)
    full = {r["seed"]: r for r in by.pop(None, {}).get(0, [])}

    def gap(run: dict[str, Any], base: dict[str, Any]) -> float:
        if not with_curves:
            return run["metrics"]["val/loss"] - base["metrics"]["val/loss"]
        ref = _curve(base)
        return mean([v - ref[s] for s, v in _curve(run).items() if s in ref])

    found = {name: {m: [gap(r, full[r["seed"]]) for r in rs if r["seed"] in full] for m, rs in sorted(per_m.items())}
             for name, per_m in by.items()}
    return with_curves, {name: {m: mean(g) for m, g in per_m.items() if g} for name, per_m in found.items() if any(per_m.values())}


def gains_per_doubling(gaps: dict[int, float]) -> list[tuple[int, int, float]]:
    """(m, next m, (gap(m) − gap(next m)) / log2(next m / m)) for successive m of the grid."""
    ms = sorted(gaps)
    return [(a, b, (gaps[a] - gaps[b]) / math.log2(b / a)) for a, b in zip(ms, ms[1:])]


def flat_from(gains: list[tuple[int, int, float]]) -> int | None:
    """The smallest m from which every doubling gains less than FLAT_GAIN (None if the last one does not)."""
    last = max((i for i, (*_, gain) in enumerate(gains) if gain >= FLAT_GAIN), default=-1)
    return gains[last + 1][0] if last + 1 < len(gains) else None


def diminishing_row(records: list[dict[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """The diminishing-returns row of one setting ([] without sampled runs at two m or more)."""
    with_curves, gaps = gaps_by_m(records)
    gains = {name: gains_per_doubling(gaps[name]) for name in ordered(gaps) if len(gaps[name]) >= 2 and name != "softmax"}
    if not gains:
        return []
    return [row("diminishing", "diminishing-returns", experiment, with_curves=with_curves, gains=gains, flat_gain=FLAT_GAIN,
                seeds=sorted({r["seed"] for r in records}), flats={name: (flat_from(g), max(gaps[name])) for name, g in gains.items()},
                dirty=dirty_note([r for r in records if sampler_name(r) in (None, *gains)]))]


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (ties given their mean rank; nan when either is constant)."""
    return math.nan if len(set(x)) < 2 or len(set(y)) < 2 else float(stats.spearmanr(x, y).statistic)


def trained_seed(meta: dict[str, Any]) -> int:
    """The seed of the run whose checkpoints a diagnostic measured (its run name's ``seed<N>``, else the diagnostic's)."""
    trained = re.search(r"seed(\d+)", meta.get("run_name", ""))
    return int(trained.group(1)) if trained else meta.get("seed", 0)


def deviation_row(results_dir: str | Path, experiment: str) -> list[dict[str, Any]]:
    """The deviation-and-bias row of one setting, from its last checkpoint's diagnostic ([] without one)."""
    if not (results := diagnostics(results_dir, experiment)):
        return []
    meta, rows = results[-1]["meta"], results[-1]["rows"]
    at = {m: [r for r in rows if r["m"] == m] for m in sorted({r["m"] for r in rows})}
    rho = {m: (spearman(kl := [max(r["kl"], 0.0) for r in rs], [abs(r["loss_bias"]) for r in rs]),  # KL < 0 is rounding
               spearman(kl, [r["grad_bias"] for r in rs])) for m, rs in at.items()}
    return [row("deviation", "deviation", experiment, meta=meta, samplers=list(dict.fromkeys(r["sampler"] for r in rows)), rho=rho,
                seed=trained_seed(meta), low=min(min(v) for v in rho.values()))]


def adapts_row(results_dir: str | Path, experiment: str) -> list[dict[str, Any]]:
    """The adapts-low-bias row of one setting ([] without diagnostics holding both samplers of :data:`ADAPTS`)."""
    results, steps = diagnostics(results_dir, experiment), []
    for result in results:
        m = min(r["m"] for r in result["rows"])
        at = {r["sampler"]: (max(r["kl"], 0.0), abs(r["loss_bias"])) for r in result["rows"] if r["m"] == m and r["sampler"] in ADAPTS}
        if len(at) == len(ADAPTS):
            steps.append({"step": result["meta"]["step"], "m": m, "samplers": at})
    if not steps:
        return []
    return [row("adapts", "adapts-low-bias", experiment, steps=steps, seed=trained_seed(results[-1]["meta"]),
                below=sum(s["samplers"]["quadratic"][0] < s["samplers"]["uniform"][0] for s in steps))]


def review_rows(results_dir: str | Path, records: list[dict[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """This module's rows for one setting (the design rows are added once, :data:`DESIGN_IDS`)."""
    if not records:
        return []
    return diminishing_row(records, experiment) + deviation_row(results_dir, experiment) + adapts_row(results_dir, experiment)
