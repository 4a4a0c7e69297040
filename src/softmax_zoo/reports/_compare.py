"""One comparison engine: a study's arms, metric and design, declared once, give Δ, its interval and the method's name.

A page declares each comparison as a :class:`Comparison` (arm A, arm B, the metric, the design) and
gets a :class:`Compared` back: the Δ = B − A statistic of :mod:`softmax_zoo.reports._stats`, its
interval, and :attr:`Compared.method`, the words naming how the interval was computed, which every
row of a page prints. The designs:

* ``PAIRED_BY_ITEM``: each seed's two arms scored on the same test items; per seed a paired bootstrap
  over the items, over seeds a Student-t interval of the per-seed Δ (:class:`._stats.SeedAwareDelta`).
* ``PAIRED_BY_SEED``: one value per run, arms paired by seed; Student-t over the per-seed Δ.
* ``UNPAIRED``: one value per run, arms not paired; Welch's interval (:class:`._stats.UnpairedSeedDelta`).

:func:`per_seed` is the one extractor of a metric per seed that every page uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..records import get
from ._stats import SeedAwareDelta, UnpairedSeedDelta, paired_seed_deltas
from ._verdicts import Verdict, claimed_direction, verdict

Records = Sequence[dict[str, Any]]


class Design(Enum):
    PAIRED_BY_ITEM = "paired bootstrap over test items per seed, Student-t over seeds"
    PAIRED_BY_SEED = "paired by seed, Student-t over seeds"
    UNPAIRED = "unpaired, Welch over seeds"


@dataclass(frozen=True)
class Comparison:
    """Δ = metric(B) − metric(A): the arms (names as the page shows them), the metric, the design.

    ``metric``: a dotted record key (``metrics.test/ppl``) or a function of one record; ``log``: compare
    the logs (a ratio of geometric means, e.g. of perplexities).
    """

    a: str
    b: str
    metric: str | Callable[[dict[str, Any]], float]
    design: Design
    log: bool = False


@dataclass(frozen=True)
class Compared:
    """One comparison's result: its spec, the statistic over seeds, and the method's name."""

    spec: Comparison
    delta: SeedAwareDelta | UnpairedSeedDelta

    @property
    def method(self) -> str:
        return self.spec.design.value

    @property
    def mean(self) -> float:
        return self.delta.mean

    @property
    def interval(self) -> tuple[float, float]:
        return self.delta.interval

    def verdict(self, paper: float | None = None, *, direction: int | None = None, digits: int = 2) -> Verdict | None:
        """The vocabulary's verdict on the claim that Δ has the sign of ``paper`` (or ``direction``); None without either."""
        if direction is None:
            if paper is None:
                return None
            direction = claimed_direction(paper)
        return verdict(self.delta, direction, digits=digits)


def value(record: dict[str, Any], metric: str | Callable[[dict[str, Any]], float]) -> float:
    """A record's value of ``metric`` (a dotted key or a function of the record)."""
    found = metric(record) if callable(metric) else get(record, metric)
    if found is None:
        raise KeyError(f"record {record.get('run_name', '?')} has no {metric}")
    return float(found)


def per_seed(records: Records, metric: str | Callable[[dict[str, Any]], float], log: bool = False) -> dict[int, float]:
    """seed -> the metric of that seed's record (its log with ``log``); one record per seed."""
    out: dict[int, float] = {}
    for r in records:
        if r["seed"] in out:
            raise ValueError(f"two records of seed {r['seed']} in one arm ({r.get('run_name', '?')})")
        v = value(r, metric)
        out[r["seed"]] = math.log(v) if log else v
    return out


def compare(spec: Comparison, a: Records = (), b: Records = (), *, items: Mapping[int, tuple[Any, Any]] | None = None,
            bootstrap: Callable[[Any, Any], dict[str, float]] | None = None, num_samples: int = 10_000) -> Compared:
    """Δ = B − A by ``spec``'s design: from the arms' records, or for ``PAIRED_BY_ITEM`` from ``items``
    (seed -> (A's per-item scores, B's), as :func:`softmax_zoo.reports._stats.paired_seed_deltas` takes them)."""
    if spec.design is Design.PAIRED_BY_ITEM:
        if items is None:
            raise ValueError(f"{spec.design.name} needs the per-item scores of each seed")
        return Compared(spec, paired_seed_deltas(items, num_samples=num_samples, bootstrap=bootstrap))
    return compare_values(spec, per_seed(a, spec.metric, spec.log), per_seed(b, spec.metric, spec.log))


def compare_values(spec: Comparison, va: Mapping[int, float], vb: Mapping[int, float]) -> Compared:
    """Δ = B − A by ``spec``'s design (``PAIRED_BY_SEED`` or ``UNPAIRED``) from each arm's seed -> value."""
    if spec.design is Design.UNPAIRED:
        return Compared(spec, UnpairedSeedDelta.from_values(va, vb))
    seeds = sorted(set(va) & set(vb))
    if not seeds:
        raise ValueError(f"arms {spec.a} and {spec.b} share no seed: {sorted(va)} and {sorted(vb)}")
    nan = (math.nan, math.nan)
    return Compared(spec, SeedAwareDelta(tuple(seeds), tuple(vb[s] - va[s] for s in seeds), (nan,) * len(seeds), (0,) * len(seeds)))


def unpaired(a: Mapping[int, float], b: Mapping[int, float]) -> UnpairedSeedDelta:
    """Δ = mean(B) − mean(A) of two arms not paired by seed, from each arm's seed -> value (:data:`Design.UNPAIRED`, Welch)."""
    return compare_values(Comparison("A", "B", "", Design.UNPAIRED), a, b).delta  # type: ignore[return-value]
