"""The kernel_bias rows measured at fixed checkpoints (``python -m softmax_zoo.studies.sampler_bias``).

Each diagnostic file holds, for one checkpoint of a setting's full-softmax run, every sampler's KL(p ‖ q) and its
sampled loss's and gradient's bias per m. :func:`deviation_row` ranks bias against KL over samplers (Spearman's ρ);
:func:`adapts_row` sets the kernel's KL beside uniform's at each checkpoint.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from scipy import stats

from ._kernel_grid import EXPERIMENT, row

DIAGNOSTICS = Path("diagnostics") / "sampler_bias"  # under results_dir: the fixed-checkpoint diagnostics' JSON files
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
