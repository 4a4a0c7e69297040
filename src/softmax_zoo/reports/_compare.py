"""One comparison engine: a study's arms, metric and design, declared once, give Δ, its interval and the method's name.

A page declares each comparison as a :class:`Comparison` (arm A, arm B, the metric, the design) and
gets a :class:`Compared` back: the Δ = B − A statistic of :mod:`softmax_zoo.reports._stats`, its
interval, and :attr:`Compared.method`, the words naming how the interval was computed, which every
row of a page prints. The designs:

* ``PAIRED_BY_ITEM``: each seed's two arms scored on the same test items; per seed a paired bootstrap
  over the items, over seeds a Student-t interval of the per-seed Δ (:class:`._stats.SeedAwareDelta`).
* ``PAIRED_BY_SEED``: one value per run, arms paired by seed; Student-t over the per-seed Δ.
* ``UNPAIRED``: one value per run, arms not paired; Welch's interval (:class:`._stats.UnpairedSeedDelta`).
* ``INTERVALS_APART``: one value per run; each arm's 95% Student-t interval over seeds, and whether the
  two lie apart (:class:`ArmIntervals`). Stricter than an interval of Δ excluding 0.

:func:`per_seed` is the one extractor of a metric per seed that every page uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..records import get
from ._stats import SeedAwareDelta, UnpairedSeedDelta, mean, mean_ci, paired_seed_deltas, seeds_label
from ._verdicts import MIN_SEEDS, Verdict, VerdictKind, claimed_direction, verdict

Records = Sequence[dict[str, Any]]


class Design(Enum):
    PAIRED_BY_ITEM = "paired bootstrap over test items per seed, Student-t over seeds"
    PAIRED_BY_SEED = "paired by seed, Student-t over seeds"
    UNPAIRED = "unpaired, Welch over seeds"
    INTERVALS_APART = "95% Student-t intervals over seeds of each arm, apart or overlapping"


APART = "95% intervals over seeds apart"


@dataclass(frozen=True)
class ArmIntervals:
    """Two arms' values over seeds (:data:`Design.INTERVALS_APART`): does B's 95% interval lie wholly above or below A's?"""

    seeds: tuple[int, ...]  # the seeds of both arms
    values_a: tuple[float, ...]
    values_b: tuple[float, ...]

    @property
    def n_seeds(self) -> int:
        return min(len(self.values_a), len(self.values_b))

    @property
    def mean(self) -> float:
        return mean(self.values_b) - mean(self.values_a)

    @property
    def side(self) -> str:
        """"higher" / "lower" if B's interval lies wholly above / below A's (a single value is its own interval), else "overlap"."""
        (alo, ahi), (blo, bhi) = (interval(v) for v in (self.values_a, self.values_b))
        return "higher" if blo > ahi else "lower" if bhi < alo else "overlap"

    def verdict(self, direction: int) -> Verdict:
        """The claim that B lies above A (``direction`` +1) or below it (-1): decided by the intervals lying apart."""
        label = seeds_label(self.seeds)
        if self.n_seeds == 1:
            return Verdict(VerdictKind.SINGLE_RUN, f"single run ({label}): Δ {self.mean:+.1f}, no interval over seeds")
        if self.n_seeds < MIN_SEEDS:
            return Verdict(VerdictKind.TOO_FEW_SEEDS, f"too few seeds ({label}; a verdict needs {MIN_SEEDS}): Δ {self.mean:+.1f}")
        if self.side == "overlap":
            return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive ({label}): 95% intervals over seeds overlap")
        if (self.side == "higher") == (direction > 0):
            return Verdict(VerdictKind.SUPPORTED, f"supported ({label}): {APART}, on the claim's side")
        return Verdict(VerdictKind.CONTRADICTS, f"contradicts ({label}): {APART}, opposite to the claim")


def interval(values: Sequence[float]) -> tuple[float, float]:
    """(low, high) of the 95% Student-t interval of the mean; a single value is its own interval."""
    m, half, _ = mean_ci(values)
    half = 0.0 if math.isnan(half) else half
    return m - half, m + half


def all_apart(parts: Mapping[int, Verdict], seeds: Sequence[int], reference: str, against: str) -> Verdict:
    """One verdict over :data:`Design.INTERVALS_APART` comparisons of several k: supported when all are, contradicts
    when one does, else inconclusive. ``reference`` names what each k is compared with ("k=20's"), ``against``
    where a contradicting k's interval lies ("above"); fewer seeds than a verdict needs give that kind."""
    kinds = {v.kind for v in parts.values()}
    label = seeds_label(seeds)
    if few := kinds & {VerdictKind.SINGLE_RUN, VerdictKind.TOO_FEW_SEEDS}:
        kind = VerdictKind.SINGLE_RUN if VerdictKind.SINGLE_RUN in few else VerdictKind.TOO_FEW_SEEDS
        return Verdict(kind, f"{kind.value} ({label}): no interval over seeds decides")
    if opposed := [k for k, v in parts.items() if v.kind is VerdictKind.CONTRADICTS]:
        return Verdict(VerdictKind.CONTRADICTS, f"contradicts ({label}): the 95% interval over seeds of k={opposed} lies "
                                                f"wholly {against} {reference}")
    if kinds == {VerdictKind.SUPPORTED}:
        return Verdict(VerdictKind.SUPPORTED, f"supported ({label}): {APART} from {reference} for every k, on the claim's side")
    open_ = [k for k, v in parts.items() if v.kind is VerdictKind.INCONCLUSIVE]
    return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive ({label}): the 95% intervals over seeds of k={open_} overlap {reference}")


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
    partial: bool = False  # runs without the metric are left out, not an error


@dataclass(frozen=True)
class Compared:
    """One comparison's result: its spec, the statistic over seeds, and the method's name."""

    spec: Comparison
    delta: SeedAwareDelta | UnpairedSeedDelta | ArmIntervals

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
        if isinstance(self.delta, ArmIntervals):
            return self.delta.verdict(direction)
        return verdict(self.delta, direction, digits=digits)


def per_seed(records: Records, metric: str | Callable[[dict[str, Any]], float | None], log: bool = False,
             partial: bool = False) -> dict[int, float]:
    """seed -> the metric of that seed's record (its log with ``log``), in record order; one record per seed.

    ``metric``: a dotted record key or a function of one record. A record without it is an error, or
    with ``partial`` left out.
    """
    out: dict[int, float] = {}
    for r in records:
        if r["seed"] in out:
            raise ValueError(f"two records of seed {r['seed']} in one arm ({r.get('run_name', '?')})")
        found = metric(r) if callable(metric) else get(r, metric)
        if found is None and not partial:
            raise KeyError(f"record {r.get('run_name', '?')} has no {metric}")
        if found is not None:
            out[r["seed"]] = math.log(found) if log else float(found)
    return out


def compare(spec: Comparison, a: Records = (), b: Records = (), *, items: Mapping[int, tuple[Any, Any]] | None = None,
            bootstrap: Callable[[Any, Any], dict[str, float]] | None = None, num_samples: int = 10_000) -> Compared:
    """Δ = B − A by ``spec``'s design: from the arms' records, or for ``PAIRED_BY_ITEM`` from ``items``
    (seed -> (A's per-item scores, B's), as :func:`softmax_zoo.reports._stats.paired_seed_deltas` takes them)."""
    if spec.design is Design.PAIRED_BY_ITEM:
        if items is None:
            raise ValueError(f"{spec.design.name} needs the per-item scores of each seed")
        return Compared(spec, paired_seed_deltas(items, num_samples=num_samples, bootstrap=bootstrap))
    return compare_values(spec, *(per_seed(arm, spec.metric, spec.log, spec.partial) for arm in (a, b)))


def compare_values(spec: Comparison, va: Mapping[int, float], vb: Mapping[int, float]) -> Compared:
    """Δ = B − A by ``spec``'s design (``PAIRED_BY_SEED``, ``UNPAIRED`` or ``INTERVALS_APART``) from each arm's seed -> value."""
    if spec.design is Design.INTERVALS_APART:
        return Compared(spec, ArmIntervals(tuple(sorted({*va, *vb})), tuple(va.values()), tuple(vb.values())))
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
