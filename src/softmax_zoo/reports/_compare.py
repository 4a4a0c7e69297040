"""One comparison engine: a page declares a :class:`Comparison` (arms, metric, design, a "close" claim's margin) and
gets a :class:`ComparisonResult` back, Δ = B − A as a :class:`._stats.DeltaInterval`; a claim over a grid is a :class:`Grid`
(Holm). :func:`per_seed` is the one extractor of a metric per seed that every page uses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ..run_record import RunRecord, typed
from ._stats import DeltaInterval, holm_intervals, over_seeds, paired_seed_deltas, seeds_label, unpaired
from ._verdicts import Verdict, claimed_direction, decide, equivalence_verdict, grid_verdict, non_inferiority_verdict, verdict

Records = Sequence[RunRecord]


class Design(Enum):
    """Paired by item within a seed (a paired bootstrap over the same test items), paired by seed (paired t), or Welch."""

    PAIRED_BY_ITEM = "paired bootstrap over test items per seed, Student-t over seeds"
    PAIRED_BY_SEED = "paired by seed, Student-t over the per-seed Δ"
    UNPAIRED = "unpaired, Welch over seeds"


@dataclass(frozen=True)
class Comparison:
    """Δ = metric(B) − metric(A) by ``design`` (of logs with ``log``); with a ``margin`` and its source, the claim |Δ| <
    margin (TOST), or with ``better`` too ("higher" or "lower": the better direction of the metric) the claim that B is no
    worse than A by more than the margin (non-inferiority)."""

    a: str
    b: str
    metric: str | Callable[[RunRecord], float]  # a metric's name (a key of RunRecord.metrics) or a record's number
    design: Design
    log: bool = False
    partial: bool = False  # runs without the metric are left out, not an error
    margin: float | None = None
    margin_source: str = ""
    better: str = ""

    def __post_init__(self) -> None:
        if self.margin is not None and (not self.margin > 0 or not self.margin_source.strip()):
            raise ValueError(f"a margin needs to be > 0 and to name its source, got {self.margin} from {self.margin_source!r}")
        if self.better and (self.better not in ("higher", "lower") or self.margin is None):
            raise ValueError(f"better ({self.better!r}) must be 'higher' or 'lower', with a margin (got {self.margin})")


@dataclass(frozen=True)
class ComparisonResult:
    """One comparison's result: its spec and Δ with its interval over seeds (whose ``method`` names the test)."""

    spec: Comparison
    delta: DeltaInterval

    @property
    def method(self) -> str:
        return self.spec.design.value

    def verdict(self, paper: float | None = None, *, direction: int | None = None, digits: int = 2) -> Verdict | None:
        """The verdict on B no worse than A by the margin given ``better`` (non-inferiority), on |Δ| < margin (TOST, its
        numbers in the verdict's ``data["eq"]``) given a margin alone, else on Δ having the sign of ``paper`` or
        ``direction`` (None without): the one way a page decides a comparison."""
        if self.spec.better:
            return non_inferiority_verdict(self.delta, self.spec.margin, self.spec.margin_source,  # type: ignore[arg-type]
                                           self.spec.better, digits=digits)
        if self.spec.margin is not None:
            return equivalence_verdict(self.delta, self.spec.margin, self.spec.margin_source, digits=digits)
        if direction is None and paper is None:
            return None
        return verdict(self.delta, claimed_direction(paper) if direction is None else direction, digits=digits)


@dataclass(frozen=True)
class Grid:
    """Comparisons over a grid (k -> :class:`ComparisonResult`), one claim over all of them: Holm-adjusted intervals beside the raw."""

    compared: Mapping[Any, ComparisonResult]
    name: str = "k"  # what the grid's keys are, as the text names them

    @property
    def seeds(self) -> list[int]:
        """Every seed any of the grid's comparisons compared."""
        return sorted({s for c in self.compared.values() for s in c.delta.seeds})

    def decide(self, direction: int | None = None) -> tuple[Verdict, dict[Any, DeltaInterval] | None]:
        """(the verdict that every Δ has sign ``direction`` or is within the margin; each Holm-adjusted interval, None for one seed)."""
        tests = {key: c.delta for key, c in self.compared.items()}
        if not tests:
            raise ValueError("a grid needs at least one comparison")
        holm = dict(zip(tests, holm_intervals(list(tests.values())))) if min(t.n for t in tests.values()) > 1 else None
        first = next(iter(self.compared.values()))
        if all(c.spec.margin is not None for c in self.compared.values()):
            verdicts = {key: c.verdict() for key, c in self.compared.items()}  # each TOST or one-sided test, by the one path
            kinds = {key: v.kind for key, v in verdicts.items()}  # type: ignore[union-attr]  (a margin: never None)
            method = (f"one-sided at α={first.verdict().data['alpha']:g} on {first.delta.method}"  # type: ignore[union-attr]
                      if first.spec.better else first.verdict().data["eq"].method)  # type: ignore[union-attr]
            about = {"method": method, "margin": first.spec.margin, "source": first.spec.margin_source,
                     **({"better": first.spec.better} if first.spec.better else {})}
        elif direction is None:
            raise ValueError("a grid claim without a margin needs the claimed direction")
        else:
            kinds = {key: decide(holm[key].interval if holm else t.interval, direction, t.n) for key, t in tests.items()}
            about = {"method": first.delta.method}
        return grid_verdict(kinds, seeds_label(self.seeds), name=self.name, **about), holm  # type: ignore[arg-type]


    def every(self, members: Sequence[Any], direction: int) -> Verdict:
        """The verdict that Δ has sign ``direction`` at every key of ``members``, a set declared before the results were
        read, each by its own 95% interval: an intersection-union test, which needs no adjustment for multiplicity."""
        if not members or any(m not in self.compared for m in members):
            raise ValueError(f"every-member claim needs members among the grid's {list(self.compared)}, got {list(members)}")
        deltas = {m: self.compared[m].delta for m in members}
        kinds = {m: decide(d.interval, direction, d.n) for m, d in deltas.items()}
        seeds = sorted({s for d in deltas.values() for s in d.seeds})
        return grid_verdict(kinds, seeds_label(seeds), name=self.name, method=next(iter(deltas.values())).method,
                            members=list(members))


def per_seed(records: Records, metric: str | Callable[[RunRecord], float | None], log: bool = False,
             partial: bool = False) -> dict[int, float]:
    """seed -> ``metric`` (a metric's name or a function of the record) of its one record, its log with ``log``; a
    missing one raises unless ``partial``."""
    out: dict[int, float] = {}
    for r in typed(records):
        if r.seed in out:
            raise ValueError(f"two records of seed {r.seed} in one arm ({r.run_name or '?'})")
        found = metric(r) if callable(metric) else r.metrics.get(metric)
        if found is None and not partial:
            raise KeyError(f"record {r.run_name or '?'} has no {'metric ' if isinstance(metric, str) else ''}{metric}")
        if found is not None:
            out[r.seed] = math.log(found) if log else float(found)
    return out


def compare(spec: Comparison, a: Records = (), b: Records = (), *, items: Mapping[int, tuple[Any, Any]] | None = None,
            bootstrap: Callable[[Any, Any], dict[str, float]] | None = None, num_samples: int = 10_000) -> ComparisonResult:
    """Δ = B − A by ``spec``'s design from the arms' records, or for ``PAIRED_BY_ITEM`` from ``items`` (seed -> (A's
    per-item scores, B's))."""
    if spec.design is Design.PAIRED_BY_ITEM:
        if items is None:
            raise ValueError(f"{spec.design.name} needs the per-item scores of each seed")
        return ComparisonResult(spec, paired_seed_deltas(items, num_samples=num_samples, bootstrap=bootstrap))
    return compare_values(spec, *(per_seed(arm, spec.metric, spec.log, spec.partial) for arm in (a, b)))


def compare_values(spec: Comparison, va: Mapping[int, float], vb: Mapping[int, float]) -> ComparisonResult:
    """Δ = B − A by ``spec``'s design (``PAIRED_BY_SEED`` on the seeds both arms have, or ``UNPAIRED``) from each arm's seed -> value."""
    if spec.design is Design.UNPAIRED:
        return ComparisonResult(spec, unpaired(va, vb))
    seeds = sorted(set(va) & set(vb))
    if not seeds:
        raise ValueError(f"arms {spec.a} and {spec.b} share no seed: {sorted(va)} and {sorted(vb)}")
    return ComparisonResult(spec, over_seeds({s: vb[s] - va[s] for s in seeds}))
