"""More of the review's Blanc & Rendle 2018 findings, as data for the ledger macros of templates/kernel_bias.md.j2.

* Diminishing returns ("increasing the sample size beyond a certain point does not improve
  convergence speed"): per sampler, the *gain per doubling of m*, the drop of its gap to the full
  softmax from one m of the grid to the next over log2 of their ratio. The gap is the mean over the
  validation curve's points (step > 0) of ln ppl(run) − ln ppl(full softmax) at the same step, which
  weighs the whole run's convergence, when every run of the setting has a curve; otherwise the final
  validation loss's gap. A sampler's returns are *flat from m* when every doubling from m on gains
  less than :data:`FLAT_GAIN`.
* Deviation and bias ("the bias increases the more the sampling distribution deviates from the output
  distribution"): at the last diagnosed checkpoint of the full-softmax run, per m the Spearman rank
  correlation over the samplers of KL(p̃‖q̃) against the sampled loss's |bias| and the gradient bias.
* Adapts, low bias ("Kernel based sampling adapts to the model as it is trained, thus resulting in low
  bias"): at every diagnosed checkpoint of the full-softmax run, at the smallest m, the quadratic kernel's
  KL(p̃‖q̃) and |loss bias| beside uniform's.
* Design ("relies only on the model's last hidden layer"; "the kernel only for sampling, the loss via
  full softmax"): the rows :data:`DESIGN_IDS`, whose words and tests are the template's.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from scipy import stats

from ..records import get
from ._kernel_bias_claims import DIAGNOSTICS, EXPERIMENT, PAPER_LIKE_ID, SAMPLERS, sampler_name
from ._stats import mean
from ._verdicts import no_interval_verdict

FLAT_GAIN = 0.05  # nats per doubling of m: ours, about the exact softmax sampler's spread over m in our setting (0.06)
DESIGN_IDS = ("kernel-design-last-hidden-layer", "kernel-design-sampling-only", "kernel-design-partition-function")
ADAPTS = ("quadratic", "uniform")  # the samplers the adapts-low-bias row sets side by side


def _curve(record: dict[str, Any]) -> dict[int, float]:
    """step -> ln validation curve perplexity, step 0 (the initialisation) left out."""
    return {h["step"]: math.log(h["val/curve_perplexity"]) for h in record.get("history", [])
            if "val/curve_perplexity" in h and h["step"] > 0}


def gaps_by_m(records: list[dict[str, Any]]) -> tuple[bool, dict[str, dict[int, float]]]:
    """(whether the gaps are along the validation curves, sampler -> m -> gap to the full softmax, mean over seeds)."""
    full = {r["seed"]: r for r in records if sampler_name(r) is None}
    with_curves = all(_curve(r) for r in records)
    per_run: dict[str, dict[int, list[float]]] = {}
    for r in records:
        name, base = sampler_name(r), full.get(r["seed"])
        if name is None or base is None:
            continue
        if with_curves:
            ref = _curve(base)
            gap = mean([v - ref[s] for s, v in _curve(r).items() if s in ref])
        else:
            gap = r["metrics"]["val/loss"] - base["metrics"]["val/loss"]
        per_run.setdefault(name, {}).setdefault(int(get(r, "config.loss.num_samples")), []).append(gap)
    return with_curves, {name: {m: mean(v) for m, v in sorted(per_m.items())} for name, per_m in per_run.items()}


def gains_per_doubling(gaps: dict[int, float]) -> list[tuple[int, int, float]]:
    """(m, next m, (gap(m) − gap(next m)) / log2(next m / m)) for successive m of the grid."""
    ms = sorted(gaps)
    return [(a, b, (gaps[a] - gaps[b]) / math.log2(b / a)) for a, b in zip(ms, ms[1:])]


def flat_from(gains: list[tuple[int, int, float]]) -> int | None:
    """The smallest m from which every doubling gains less than FLAT_GAIN (None if the last one does not)."""
    flat = None
    for a, _, gain in reversed(gains):
        if gain >= FLAT_GAIN:
            break
        flat = a
    return flat


def diminishing_row(records: list[dict[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """The diminishing-returns row of one setting ([] without sampled runs at two m or more)."""
    with_curves, gaps = gaps_by_m(records)
    order = sorted(gaps, key=lambda name: (SAMPLERS.index(name) if name in SAMPLERS else len(SAMPLERS), name))
    gains = {name: gains_per_doubling(gaps[name]) for name in order if len(gaps[name]) >= 2 and name != "softmax"}
    if not gains:
        return []
    seeds = sorted({r["seed"] for r in records})
    flats = {name: flat_from(g) for name, g in gains.items()}
    result = "; ".join(f"{name} flat from m={m}" if m is not None else f"{name} not flat up to m={max(gaps[name])}"
                       for name, m in flats.items())
    paper_setting = experiment != EXPERIMENT
    return [{"kind": "diminishing", "id": f"kernel-bias-diminishing-returns{PAPER_LIKE_ID if paper_setting else ''}",
             "paper_setting": paper_setting, "with_curves": with_curves, "gains": gains, "seeds": seeds, "flat_gain": FLAT_GAIN,
             "verdict": no_interval_verdict(seeds, result, single="; one run per point decides nothing",
                                            many="; the gains have no interval over seeds"), "source": EXPERIMENT}]


def spearman(x: list[float], y: list[float]) -> float:
    """Spearman's rank correlation (ties given their mean rank; nan when either is constant)."""
    return math.nan if len(set(x)) < 2 or len(set(y)) < 2 else float(stats.spearmanr(x, y).statistic)


def deviation_row(results_dir: str | Path, experiment: str) -> list[dict[str, Any]]:
    """The deviation-and-bias row of one setting, from its last checkpoint's diagnostic ([] without one)."""
    results = [json.loads(f.read_text()) for f in sorted(Path(results_dir, DIAGNOSTICS, experiment).glob("*.json"))]
    result = max(results, key=lambda r: r["meta"]["step"], default=None)
    if result is None:
        return []
    meta, rows = result["meta"], result["rows"]
    rho = {}
    for m in sorted({r["m"] for r in rows}):
        at = [r for r in rows if r["m"] == m]
        kl = [max(r["kl"], 0.0) for r in at]  # KL >= 0; a negative value is rounding
        rho[m] = (spearman(kl, [abs(r["loss_bias"]) for r in at]), spearman(kl, [r["grad_bias"] for r in at]))
    samplers = list(dict.fromkeys(r["sampler"] for r in rows))
    trained = re.search(r"seed(\d+)", meta.get("run_name", ""))
    seed = int(trained.group(1)) if trained else meta.get("seed", 0)
    low = min(min(v) for v in rho.values())
    paper_setting = experiment != EXPERIMENT
    return [{"kind": "deviation", "id": f"kernel-bias-deviation{PAPER_LIKE_ID if paper_setting else ''}", "paper_setting": paper_setting,
             "meta": meta, "samplers": samplers, "rho": rho, "seed": seed, "source": EXPERIMENT,
             "verdict": no_interval_verdict([seed], f"a single measurement at one checkpoint: the smallest ρ over m is {low:+.2f}",
                                            single=f"; one checkpoint of one run decides nothing, and ρ over {len(samplers)} samplers "
                                                   "has no interval")}]


def adapts_row(results_dir: str | Path, experiment: str) -> list[dict[str, Any]]:
    """The adapts-low-bias row of one setting: per diagnosed checkpoint, at its smallest m, (KL, |loss bias|) of each
    sampler of :data:`ADAPTS` ([] without diagnostics holding both)."""
    results = sorted((json.loads(f.read_text()) for f in Path(results_dir, DIAGNOSTICS, experiment).glob("*.json")),
                     key=lambda r: r["meta"]["step"])
    steps = []
    for result in results:
        m = min(r["m"] for r in result["rows"])
        at = {r["sampler"]: (max(r["kl"], 0.0), abs(r["loss_bias"])) for r in result["rows"] if r["m"] == m and r["sampler"] in ADAPTS}
        if len(at) == len(ADAPTS):
            steps.append({"step": result["meta"]["step"], "m": m, "samplers": at})
    if not steps:
        return []
    trained = re.search(r"seed(\d+)", results[-1]["meta"].get("run_name", ""))
    seed = int(trained.group(1)) if trained else results[-1]["meta"].get("seed", 0)
    below = sum(s["samplers"]["quadratic"][0] < s["samplers"]["uniform"][0] for s in steps)
    paper_setting = experiment != EXPERIMENT
    return [{"kind": "adapts", "id": f"kernel-bias-adapts-low-bias{PAPER_LIKE_ID if paper_setting else ''}", "paper_setting": paper_setting,
             "steps": steps, "seed": seed, "source": EXPERIMENT,
             "verdict": no_interval_verdict([seed], f"the quadratic kernel's KL below uniform's at {below} of {len(steps)} checkpoints",
                                            single="; the checkpoints of one run, measured once each, decide nothing")}]


def review_rows(results_dir: str | Path, records: list[dict[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """This module's rows for one setting (the design rows are added once, :data:`DESIGN_IDS`)."""
    if not records:
        return []
    return diminishing_row(records, experiment) + deviation_row(results_dir, experiment) + adapts_row(results_dir, experiment)
