"""The claims ledger's verdict vocabulary, defined once: what a delta over seeds lets a row say.

This module decides each :class:`VerdictKind`; the words, and the rules they follow (``VERDICT_RULES``,
``NON_SEED_RULES``), are templates/_verdicts.j2's. A :class:`Verdict` prints as its text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from ._stats import DeltaInterval, Equivalence, EquivalenceKind, LinearTrend, min_detectable_delta, seeds_label

MIN_SEEDS = 3  # seeds a verdict of supported / contradicts / inconclusive needs


class VerdictKind(Enum):
    SUPPORTED = "supported"
    CONTRADICTS = "contradicts"
    INCONCLUSIVE = "inconclusive"
    TOO_FEW_SEEDS = "too few seeds"
    SINGLE_RUN = "single run"
    NOT_TESTED = "not tested"
    DETERMINISTIC = "deterministic"
    BY_CONSTRUCTION = "by construction"


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    text: str  # the ledger's verdict cell; starts with kind.value

    def __str__(self) -> str:
        return self.text


def _words(macro: str, *args: Any, **data: Any) -> str:
    """templates/_verdicts.j2's ``macro`` filled with ``args`` and ``data``."""
    from ._pages import words  # _pages builds its filters on this module

    return str(getattr(words("_verdicts.j2"), macro)(*args, **data))


def _say(kind: VerdictKind, macro: str, *args: Any, **data: Any) -> Verdict:
    return Verdict(kind, _words(macro, kind.value, *args, **data))


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
    return _say(VerdictKind.NOT_TESTED, "not_tested", reason)


def deterministic(result: str, matches: bool, *, where: str) -> Verdict:
    """A computation without training or seeds, and ``where`` it ran (e.g. "torch 2.13.0, CPU, float32")."""
    return _say(VerdictKind.DETERMINISTIC, "deterministic", result, matches, where)


def by_construction(how: str, test: str) -> Verdict:
    """A design property, ``how``, and ``test``, the pytest node id that checks it."""
    if "::test_" not in test:
        raise ValueError(f"test must be a pytest node id (path::test_name), got {test!r}")
    return _say(VerdictKind.BY_CONSTRUCTION, "by_construction", how, test)


def no_interval_verdict(seeds: Sequence[int], result: str, *, single: str = "", many: str = "") -> Verdict:
    """The verdict of a rule with no interval over seeds (a ratio of mean gaps, a reach), which decides nothing."""
    kind = too_few(len(seeds)) or VerdictKind.INCONCLUSIVE
    return _say(kind, "no_interval", seeds_label(seeds), result, single=single, many=many)


def verdict(delta: DeltaInterval, direction: int, *, digits: int = 2) -> Verdict:
    """The verdict on a claim that Δ has sign ``direction`` (:func:`claimed_direction` of the paper's Δ)."""
    return _say(decide(delta.interval, direction, delta.n), "verdict", delta, digits)


def seed_summary(delta: DeltaInterval, *, digits: int = 2) -> str:
    """The "ours" cell of a paired claim: Δ per seed, its interval over seeds, the between-seed SD and item standard error."""
    return _words("seed_summary", delta, digits)


def detectability(delta: DeltaInterval, paper_delta: float, *, digits: int = 2) -> str:
    """What one run per arm detects (:func:`._stats.min_detectable_delta` of our between-seed SD) beside the paper's Δ."""
    return _words("detectability", delta, paper_delta, digits, min_detectable_delta(1.0, delta.confidence))


def trend_verdict(trend: LinearTrend, seeds_per_point: Sequence[int], direction: int, *, unit: str, digits: int = 3,
                  label: str = "") -> Verdict:
    """The verdict on a claim that a trend's slope has sign ``direction``: it needs :data:`MIN_SEEDS` points and seeds per point;
    ``label`` (e.g. "seeds 0, 1, 2") names the seeds behind each point after the kind."""
    fewest = min(seeds_per_point)
    kind = decide(trend.interval, direction, fewest if trend.n_points >= MIN_SEEDS else MIN_SEEDS - 1)
    return _say(kind, "trend_verdict", trend, unit, digits, fewest, label)


def equivalence_kind(eq: Equivalence) -> VerdictKind:
    """The ledger's kind of a TOST result: supported when equivalent, contradicts when not, else inconclusive."""
    if isinstance(eq.verdict, VerdictKind):
        return eq.verdict
    return {EquivalenceKind.EQUIVALENT: VerdictKind.SUPPORTED, EquivalenceKind.NOT_EQUIVALENT: VerdictKind.CONTRADICTS,
            EquivalenceKind.INCONCLUSIVE: VerdictKind.INCONCLUSIVE}[eq.verdict]


def equivalence_verdict(eq: Equivalence, label: str, span: str | None = None, *, digits: int = 2) -> Verdict:
    """The verdict on a "close" claim, |Δ| < margin, by :func:`equivalence_kind`; ``span`` replaces Δ and its interval."""
    return _say(equivalence_kind(eq), "equivalence_verdict", label, eq, span, digits)


def grid_verdict(kinds: Mapping[Any, VerdictKind], label: str, *, name: str = "k", **about: Any) -> Verdict:
    """One verdict over a grid's kinds (key -> kind): the first of too few seeds, contradicts, inconclusive that one has,
    else supported; ``about``: the ``method`` (with ``margin`` and its ``source``: TOST) templates/_verdicts.j2's grid names."""
    found = set(kinds.values())
    order = (VerdictKind.SINGLE_RUN, VerdictKind.TOO_FEW_SEEDS, VerdictKind.CONTRADICTS, VerdictKind.INCONCLUSIVE)
    kind = next((k for k in order if k in found), VerdictKind.SUPPORTED)
    return _say(kind, "grid", label, name, [key for key, k in kinds.items() if k is kind], len(kinds), **about)
