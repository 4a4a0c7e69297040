"""The kernel_bias records as a grid, sampler x m, and what the page reads off it.

:func:`cells` groups one setting's records by sampler and number of samples m (the full softmax is sampler None,
m 0); :func:`values` and :func:`mean_gaps` read validation losses off the grid; :func:`gaps_by_m` measures each
sampler's gap to the same seed's full softmax, along the validation curves where the records keep them, for the
diminishing-returns and simple-samplers rows. :func:`row` shapes a ledger row of either setting.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from typing import Any

from ..records import seeds_of
from ..run_record import RunRecord
from ._compare import per_seed
from ._pages import dirty_note
from ._stats import mean

EXPERIMENT = "kernel_bias"  # the page's name and our setting's experiment
PAPER_SETTING = "kernel_bias_paper"  # the paper-like setting's experiment (ours): no output bias, plain SGD, 1,200 steps
SAMPLERS = ("uniform", "unigram", "quadratic", "quadratic_centred", "softmax")  # the page's sampler order, others after
STATIC = ("uniform", "unigram")  # the "simple sampling distributions" of the abstract: q fixed while the model trains
VAL_LOSS = "val/loss"
FLAT_GAIN = 0.05  # nats per doubling of m: ours, about the exact softmax sampler's spread over m in our setting (0.06)
Cells = dict[str | None, dict[int, list[RunRecord]]]  # sampler (None: the full softmax, m 0) -> m -> its records


def sampler_name(record: RunRecord) -> str | None:
    """"uniform" / "unigram" / "quadratic" / "softmax" for a sampled run, None for the full softmax."""
    return record.choice("sampler") if record.choice("loss") == "sampled_softmax" else None


def ordered(names: Iterable[str]) -> list[str]:
    """``names`` in the page's sampler order (:data:`SAMPLERS`), others after by name."""
    return sorted(set(names), key=lambda name: (SAMPLERS.index(name) if name in SAMPLERS else len(SAMPLERS), name))


def cells(records: list[RunRecord]) -> Cells:
    out: Cells = {}
    for r in records:
        name = sampler_name(r)
        out.setdefault(name, {}).setdefault(0 if name is None else int(r.option("loss", "num_samples")), []).append(r)
    return out


def values(by: Cells) -> tuple[list[float], dict[str, dict[int, list[float]]]]:
    """(full-softmax validation losses over seeds, sampler -> m -> validation losses over seeds)."""
    found = {name: {m: list(per_seed(rs, VAL_LOSS).values()) for m, rs in per_m.items()} for name, per_m in by.items()}
    return found.pop(None, {}).get(0, []), found  # type: ignore[return-value]


def mean_gaps(by: Cells) -> dict[str, dict[int, float]]:
    """sampler -> m -> its gap: its mean validation loss over seeds minus the full softmax's."""
    full, grid = values(by)
    return {name: {m: mean(v) - mean(full) for m, v in per_m.items()} for name, per_m in grid.items()}


def row(kind: str, name: str, experiment: str, **data: Any) -> dict[str, Any]:
    """A ledger row of one setting: its kind, its id (``-paper-like`` in the paper-like setting), its data."""
    paper_setting = experiment == PAPER_SETTING
    return {"kind": kind, "id": f"kernel-bias-{name}" + ("-paper-like" if paper_setting else ""), "paper_setting": paper_setting,
            "source": EXPERIMENT, **data}


def log_curve(record: RunRecord) -> dict[int, float]:
    """step -> ln validation curve perplexity, step 0 (the initialisation) left out."""
    return {h["step"]: math.log(h["val/curve_perplexity"]) for h in record.history
            if "val/curve_perplexity" in h and h["step"] > 0}


def gaps_by_m(records: list[RunRecord]) -> tuple[bool, dict[str, dict[int, float]]]:
    """(whether the gaps are along the validation curves, sampler -> m -> gap to the same seed's full softmax, mean over seeds)."""
    by, with_curves = cells(records), all(log_curve(r) for r in records)
    full = {r.seed: r for r in by.pop(None, {}).get(0, [])}

    def gap(run: RunRecord, base: RunRecord) -> float:
        if not with_curves:
            return run.metrics[VAL_LOSS] - base.metrics[VAL_LOSS]
        ref = log_curve(base)
        return mean([v - ref[s] for s, v in log_curve(run).items() if s in ref])

    found = {name: {m: [gap(r, full[r.seed]) for r in rs if r.seed in full] for m, rs in sorted(per_m.items())}
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


def diminishing_row(records: list[RunRecord], experiment: str) -> list[dict[str, Any]]:
    """The diminishing-returns row of one setting ([] without sampled runs at two m or more)."""
    with_curves, gaps = gaps_by_m(records)
    gains = {name: gains_per_doubling(gaps[name]) for name in ordered(gaps) if len(gaps[name]) >= 2 and name != "softmax"}
    if not gains:
        return []
    return [row("diminishing", "diminishing-returns", experiment, with_curves=with_curves, gains=gains, flat_gain=FLAT_GAIN,
                seeds=seeds_of(records), flats={name: (flat_from(g), max(gaps[name])) for name, g in gains.items()},
                dirty=dirty_note([r for r in records if sampler_name(r) in (None, *gains)]))]


def simple_samplers_row(records: list[RunRecord], experiment: str) -> list[dict[str, Any]]:
    """The static samplers' (uniform, unigram) gap to the full softmax at each m of one setting ([] without them)."""
    with_curves, gaps = gaps_by_m(records)
    static = {name: gaps[name] for name in STATIC if name in gaps}
    if not static:
        return []
    falls = [name for name, g in static.items() if all(b < a for a, b in itertools.pairwise(g.values()))]
    return [row("simple-samplers", "simple-samplers-large-m", experiment, with_curves=with_curves, gaps=static, falls=falls,
                seeds=seeds_of(records), dirty=dirty_note([r for r in records if sampler_name(r) in (None, *static)]))]
