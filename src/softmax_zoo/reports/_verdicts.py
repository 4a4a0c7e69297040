"""The claims ledger's verdicts, decided once: what a delta over seeds lets a row say.

A :class:`Verdict` is data: its :class:`VerdictKind`, the :class:`Form` of the test that decided it, and the numbers
behind it. It has no text: templates/_verdicts.j2's ``said(verdict)`` words it, by the macro its form names, and states
the rules they follow (``VERDICT_RULES``, ``NON_SEED_RULES``). A new form is a :class:`Form` member, the function here
that decides its kind, and the macro of that name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ._stats import DeltaInterval, LinearTrend, tost

MIN_SEEDS = 3  # seeds a verdict of supported / contradicts / inconclusive needs


class VerdictKind(Enum):
    SUPPORTED = "supported"
    CONTRADICTS = "contradicts"
    INCONCLUSIVE = "inconclusive"
    TOO_FEW_SEEDS = "too few seeds"
    SINGLE_RUN = "single run"
    NOT_TESTED = "not tested"
    NOT_COMPARABLE = "not comparable (regime)"  # the setting failed a regime gate (_regime.py): the test decides nothing
    DETERMINISTIC = "deterministic"
    BY_CONSTRUCTION = "by construction"


class Form(Enum):
    """The test a verdict was decided by; its value names the macro of templates/_verdicts.j2 that words it."""

    SIGN = "sign"  # Δ has the claimed sign: its interval over seeds excludes 0 on the claim's side
    EQUIVALENCE = "equivalence"  # |Δ| < a stated margin: TOST
    NON_INFERIORITY = "non_inferiority"  # Δ no worse than a stated margin: one one-sided test
    GRID = "grid"  # every member of a grid: Holm-adjusted intervals, or each member's TOST
    TREND = "trend"  # a slope has the claimed sign
    NO_INTERVAL = "no_interval"  # a rule with no interval over seeds, which decides nothing
    NOT_TESTED = "not_tested"
    DETERMINISTIC = "deterministic"  # a computation without training or seeds
    BY_CONSTRUCTION = "by_construction"  # a design property and the test that checks it


@dataclass(frozen=True)
class Verdict:
    """A row's verdict as data: ``kind``, the ``form`` that decided it and ``data``, the keyword arguments of its macro."""

    kind: VerdictKind
    form: Form
    data: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        raise TypeError(f"a verdict has no text of its own: templates/_verdicts.j2's said() words it ({self.kind}, {self.form})")


def too_few(n: int) -> VerdictKind | None:
    """SINGLE_RUN (n = 1) or TOO_FEW_SEEDS (n < :data:`MIN_SEEDS`): fewer seeds than a verdict needs; else None."""
    return VerdictKind.SINGLE_RUN if n == 1 else VerdictKind.TOO_FEW_SEEDS if n < MIN_SEEDS else None


def decide(interval: tuple[float, float], direction: int, n: int) -> VerdictKind:
    """The kind of verdict on a claim that Δ has sign ``direction`` (+1 or −1), from Δ's interval over ``n`` seeds."""
    low, high = interval
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    if (gate := too_few(n)) is not None:
        return gate
    if math.isnan(low) or math.isnan(high):
        raise ValueError(f"a verdict needs a finite interval, got ({low}, {high}) from {n} seeds")
    if low <= 0 <= high:
        return VerdictKind.INCONCLUSIVE
    return VerdictKind.SUPPORTED if (low > 0) == (direction > 0) else VerdictKind.CONTRADICTS


def claimed_direction(paper_delta: float) -> int:
    """+1 when the claim is Δ > 0 (B beats A on a higher-is-better metric), -1 when it is Δ < 0."""
    if paper_delta == 0 or math.isnan(paper_delta):
        raise ValueError(f"a claimed delta needs a sign, got {paper_delta}")
    return 1 if paper_delta > 0 else -1


def not_tested(reason: str) -> Verdict:
    """"not tested: <reason>", e.g. reason "needs scale=paper"."""
    return Verdict(VerdictKind.NOT_TESTED, Form.NOT_TESTED, {"reason": reason})


def deterministic(result: str, matches: bool, *, where: str) -> Verdict:
    """A computation without training or seeds, and ``where`` it ran (e.g. "torch 2.13.0, CPU, float32")."""
    return Verdict(VerdictKind.DETERMINISTIC, Form.DETERMINISTIC, {"result": result, "matches": matches, "where": where})


def by_construction(how: str, test: str) -> Verdict:
    """A design property, ``how``, and ``test``, the pytest node id that checks it."""
    if "::test_" not in test:
        raise ValueError(f"test must be a pytest node id (path::test_name), got {test!r}")
    return Verdict(VerdictKind.BY_CONSTRUCTION, Form.BY_CONSTRUCTION, {"how": how, "test": test})


def no_interval_verdict(seeds: Sequence[int]) -> Verdict:
    """The verdict of a rule with no interval over ``seeds`` (a ratio of mean gaps, a reach), which decides nothing;
    the template words its result."""
    return Verdict(too_few(len(seeds)) or VerdictKind.INCONCLUSIVE, Form.NO_INTERVAL, {"seeds": list(seeds)})


def verdict(delta: DeltaInterval, direction: int, *, digits: int = 2) -> Verdict:
    """The verdict on a claim that Δ has sign ``direction`` (:func:`claimed_direction` of the paper's Δ)."""
    return Verdict(decide(delta.interval, direction, delta.n), Form.SIGN, {"d": delta, "digits": digits})


def trend_verdict(trend: LinearTrend, seeds_per_point: Sequence[int], direction: int, *, unit: str, digits: int = 3,
                  label: str = "") -> Verdict:
    """The verdict on a claim that a trend's slope has sign ``direction``: it needs :data:`MIN_SEEDS` points and seeds per point;
    ``label`` (e.g. "seeds 0, 1, 2") names the seeds behind each point after the kind."""
    fewest = min(seeds_per_point)
    kind = decide(trend.interval, direction, fewest if trend.n_points >= MIN_SEEDS else MIN_SEEDS - 1)
    return Verdict(kind, Form.TREND, {"t": trend, "unit": unit, "digits": digits, "fewest": fewest, "label": label})


def equivalence_verdict(delta: DeltaInterval, margin: float, source: str, alpha: float = 0.05, *, digits: int = 2) -> Verdict:
    """The verdict on a "close" claim, |Δ| < ``margin`` (from ``source``), by TOST at ``alpha``: supported when the 1 − 2α
    interval lies inside ±margin, contradicts when the 1 − α interval lies outside it, else inconclusive."""
    test = tost(delta, margin, alpha)
    kind = too_few(delta.n) or (
        VerdictKind.SUPPORTED if -margin < test.tost_interval[0] and test.tost_interval[1] < margin
        else VerdictKind.CONTRADICTS if test.interval[0] >= margin or test.interval[1] <= -margin
        else VerdictKind.INCONCLUSIVE)
    return Verdict(kind, Form.EQUIVALENCE, {"label": delta.label, "eq": test, "source": source, "digits": digits})


def non_inferiority_verdict(delta: DeltaInterval, margin: float, source: str, better: str, alpha: float = 0.05, *,
                            digits: int = 2) -> Verdict:
    """The verdict on a "no worse than" claim: Δ is not worse than ``margin`` (from ``source``) in the direction that is
    not ``better`` ("higher" or "lower"), by a one-sided test at ``alpha``: supported when the worse bound of the 1 − 2α
    interval lies inside the margin, contradicts when its better bound lies beyond it, else inconclusive. Being better
    supports it; the data say whether Δ is better beyond the margin too (``beyond``), a sign to look at the baseline."""
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")
    if not margin > 0:
        raise ValueError(f"a non-inferiority margin must be > 0, got {margin}")
    interval = delta.at(1 - 2 * alpha)
    worse = (lambda x: x) if better == "lower" else (lambda x: -x)  # Δ as "how much worse"
    worst, best = sorted(map(worse, interval), reverse=True)
    kind = too_few(delta.n) or (
        VerdictKind.SUPPORTED if worst < margin else VerdictKind.CONTRADICTS if best > margin else VerdictKind.INCONCLUSIVE)
    return Verdict(kind, Form.NON_INFERIORITY, {"d": delta, "interval": interval, "alpha": alpha, "margin": margin,
                                                "better": better, "source": source, "digits": digits,
                                                "superior": worst < 0, "beyond": worst < -margin})


def grid_verdict(kinds: Mapping[Any, VerdictKind], label: str, *, name: str = "k", **about: Any) -> Verdict:
    """One verdict over a grid's kinds (key -> kind): the first of too few seeds, contradicts, inconclusive that one has,
    else supported; ``about``: the ``method`` (with ``margin`` and its ``source``: TOST) templates/_verdicts.j2's grid names."""
    found = set(kinds.values())
    order = (VerdictKind.SINGLE_RUN, VerdictKind.TOO_FEW_SEEDS, VerdictKind.CONTRADICTS, VerdictKind.INCONCLUSIVE)
    kind = next((k for k in order if k in found), VerdictKind.SUPPORTED)
    keys = [key for key, k in kinds.items() if k is kind]
    return Verdict(kind, Form.GRID, {"label": label, "name": name, "keys": keys, "m": len(kinds), **about})
