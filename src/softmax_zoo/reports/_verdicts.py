"""The claims ledger's verdict vocabulary, defined once: what a delta over seeds lets a row say.

* ``supported`` / ``contradicts``: at least :data:`MIN_SEEDS` seeds and a seed-aware interval
  (Student-t over the per-seed Δ, or Welch's for unpaired arms) that excludes 0, on the claim's
  side or the other.
* ``inconclusive``: at least :data:`MIN_SEEDS` seeds and the interval includes 0.
* ``too few seeds``: 2 seeds; their interval is given (1 degree of freedom) but decides nothing.
* ``single run``: one seed; a paired Δ is given with its bootstrap interval over test items, which
  measures the test-set draw, not training variation, so it decides nothing either.
* ``not tested``: with the reason.
* ``deterministic``: a computation without training or seeds (the paper's own minimal examples, an
  equivalence against a float64 reference), run by the report; the text says whether it matches the
  paper, and names the torch version and dtype it depends on.
* ``by construction``: a design property of the implementation (what the sampler reads, which loss is
  trained), with the test that checks it; not a training result.

Every text names its seeds ("seeds 0, 1, 2"). A :class:`Verdict` prints as its text, the ledger's
verdict cell; :attr:`Verdict.kind` is for counting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from ._stats import LinearTrend, SeedAwareDelta, UnpairedSeedDelta, min_detectable_delta, seeds_label

MIN_SEEDS = 3  # seeds a verdict of supported / contradicts / inconclusive needs

VERDICT_RULES = (
    f"Verdicts: \"supported\" or \"contradicts\" need >= {MIN_SEEDS} seeds and a 95% interval over seeds "
    "that excludes 0 (on the claim's side or the other); \"inconclusive\" when it includes 0; with fewer "
    "seeds a row says \"too few seeds\" or \"single run\" and gives its interval without a verdict."
)


NON_SEED_RULES = (
    "\"deterministic\" rows are computations without training or seeds (the same every run for one torch version); "
    "\"by construction\" rows state a design property of our implementation and the test that checks it."
)


class VerdictKind(Enum):
    SUPPORTED = "supported"
    CONTRADICTS = "contradicts"
    INCONCLUSIVE = "inconclusive"
    TOO_FEW_SEEDS = "too few seeds"
    SINGLE_RUN = "single run"
    NOT_TESTED = "not tested"
    DETERMINISTIC = "deterministic"
    BY_CONSTRUCTION = "by construction"
    EQUIVALENT = "equivalent"
    NOT_EQUIVALENT = "not equivalent"


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    text: str  # the ledger's verdict cell; starts with kind.value

    def __str__(self) -> str:
        return self.text


def claimed_direction(paper_delta: float) -> int:
    """+1 when the claim is Δ > 0 (B beats A on a higher-is-better metric), -1 when it is Δ < 0."""
    if paper_delta == 0 or math.isnan(paper_delta):
        raise ValueError(f"a claimed delta needs a sign, got {paper_delta}")
    return 1 if paper_delta > 0 else -1


def not_tested(reason: str) -> Verdict:
    """"not tested: <reason>", e.g. reason "needs scale=paper"."""
    return Verdict(VerdictKind.NOT_TESTED, f"not tested: {reason}")


def deterministic(result: str, matches: bool, *, where: str) -> Verdict:
    """"deterministic (no training, no seed; <where>): matches the paper: <result>" (or "differs from the paper").

    ``where`` names what the numbers depend on, e.g. "torch 2.13.0, CPU, float32".
    """
    said = "matches the paper" if matches else "differs from the paper"
    return Verdict(VerdictKind.DETERMINISTIC, f"deterministic (no training, no seed; {where}): {said}: {result}")


def by_construction(how: str, test: str) -> Verdict:
    """"by construction: <how>; checked by <test>" (``test``: a pytest node id of the repository)."""
    if "::test_" not in test:
        raise ValueError(f"test must be a pytest node id (path::test_name), got {test!r}")
    return Verdict(VerdictKind.BY_CONSTRUCTION, f"by construction: {how}; checked by {test}")


def no_interval_verdict(seeds: Sequence[int], result: str, *, single: str = "", many: str = "") -> Verdict:
    """The verdict of a rule with no interval over seeds (a ratio of mean gaps, a reach): it decides nothing.

    One seed: "single run (seed 0): {result}{single}"; fewer than :data:`MIN_SEEDS`: "too few seeds
    (seeds 0, 1; a verdict needs 3): {result}"; more: "inconclusive (seeds …): {result}{many}".
    """
    label = seeds_label(seeds)
    if len(seeds) == 1:
        return Verdict(VerdictKind.SINGLE_RUN, f"single run ({label}): {result}{single}")
    if len(seeds) < MIN_SEEDS:
        return Verdict(VerdictKind.TOO_FEW_SEEDS, f"too few seeds ({label}; a verdict needs {MIN_SEEDS}): {result}")
    return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive ({label}): {result}{many}")


def _span(mean: float, low: float, high: float, digits: int) -> str:
    return f"Δ {mean:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def verdict(delta: SeedAwareDelta | UnpairedSeedDelta, direction: int, *, digits: int = 2) -> Verdict:
    """The verdict on a claim that Δ has sign ``direction`` (+1 or -1), by the rules of this module.

    Args:
        delta: per-seed paired deltas (:class:`SeedAwareDelta`) or unpaired arms (:class:`UnpairedSeedDelta`).
        direction: the claimed sign of Δ (:func:`claimed_direction` of the paper's delta).
        digits: decimals of Δ and its interval in the text.
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    level = f"{100 * delta.confidence:g}%"
    if delta.n_seeds == 1:
        if isinstance(delta, SeedAwareDelta):
            (low, high), = delta.item_intervals
            where = f"{_span(delta.mean, low, high, digits)} over test items"
        else:
            where = f"Δ {delta.mean:+.{digits}f} (no interval)"
        return Verdict(VerdictKind.SINGLE_RUN, f"single run ({delta.label}): {where}")
    low, high = delta.interval
    span = f"{_span(delta.mean, low, high, digits)}, {level} interval over seeds"
    if delta.n_seeds < MIN_SEEDS:
        return Verdict(VerdictKind.TOO_FEW_SEEDS, f"too few seeds ({delta.label}; a verdict needs {MIN_SEEDS}): {span}")
    return by_interval(low, high, direction, span, f" ({delta.label})")


def by_interval(low: float, high: float, direction: int, span: str, who: str = "") -> Verdict:
    """Inconclusive, supported or contradicts, by where the interval [low, high] lies against 0 and the claimed sign:
    "<kind><who>: <span> includes 0" / "excludes 0, on the claim's side" / "excludes 0, opposite to the claim"."""
    if low <= 0 <= high:
        return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive{who}: {span} includes 0")
    if (low > 0) == (direction > 0):
        return Verdict(VerdictKind.SUPPORTED, f"supported{who}: {span} excludes 0, on the claim's side")
    return Verdict(VerdictKind.CONTRADICTS, f"contradicts{who}: {span} excludes 0, opposite to the claim")


def seed_summary(delta: SeedAwareDelta, *, digits: int = 2) -> str:
    """The "ours" cell of a paired claim: Δ per seed, the interval over seeds, the SDs beside each other.

    E.g. "Δ per seed +0.10, +0.30, +0.20 (seeds 0, 1, 2); mean +0.20 [-0.05, +0.45] (95%, Student-t over
    seeds); between-seed SD 0.10 vs item-bootstrap half-width 0.40; smallest Δ one run per arm detects
    0.28 (at our scale)". A single seed gives its Δ with the item interval only.
    """
    f = f"+.{digits}f"
    if delta.n_seeds == 1:
        (low, high), = delta.item_intervals
        return f"{_span(delta.mean, low, high, digits)} over {delta.n_items[0]} test items ({delta.label})"
    low, high = delta.interval
    return (
        f"Δ per seed {', '.join(format(d, f) for d in delta.deltas)} ({delta.label}); mean {delta.mean:{f}} "
        f"[{low:{f}}, {high:{f}}] ({100 * delta.confidence:g}%, Student-t over seeds); between-seed SD "
        f"{delta.sd:.{digits}f} vs item-bootstrap half-width {delta.item_half_width:.{digits}f}; smallest Δ one run "
        f"per arm detects {delta.min_detectable_delta:.{digits}f} (at our scale)"
    )


def detectability(delta: SeedAwareDelta, paper_delta: float, *, digits: int = 2) -> str:
    """What one run per arm could detect, beside the paper's Δ: from our between-seed SD, at our scale.

    E.g. "smallest Δ one run per arm detects: 1.40 (2.80 × between-seed SD 0.50, seeds 0, 1, 2; measured
    at our scale) vs the paper's +0.67"; with one seed there is no between-seed SD to say it.
    """
    if delta.n_seeds == 1:
        return f"smallest Δ one run per arm detects: not measured ({delta.label}; needs >= 2 seeds)"
    factor = min_detectable_delta(1.0, delta.confidence)  # (z_{(1+c)/2} + z_{0.80})
    return (
        f"smallest Δ one run per arm detects: {delta.min_detectable_delta:.{digits}f} ({factor:.2f} × between-seed SD "
        f"{delta.sd:.{digits}f}, {delta.label}; measured at our scale) vs the paper's {paper_delta:+.{digits}f}"
    )


def trend_verdict(trend: LinearTrend, seeds_per_point: Sequence[int], direction: int, *, unit: str, digits: int = 3) -> Verdict:
    """The verdict on a claim that a trend's slope has sign ``direction``, each point a mean over its seeds.

    A verdict needs :data:`MIN_SEEDS` points and :data:`MIN_SEEDS` seeds behind every point; the slope's
    interval is :class:`softmax_zoo.reports._stats.LinearTrend`'s (Student-t, n − 2 degrees of freedom).
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    low, high = trend.interval
    f = f"+.{digits}f"
    span = (f"slope {trend.slope:{f}} [{low:{f}}, {high:{f}}] {unit}, {100 * trend.confidence:g}% Student-t interval over "
            f"{trend.n_points} points ({trend.n_points - 2} degree{'s' if trend.n_points != 3 else ''} of freedom)")
    fewest = min(seeds_per_point)
    if trend.n_points < MIN_SEEDS:
        return Verdict(VerdictKind.TOO_FEW_SEEDS, f"too few points ({trend.n_points}; a verdict needs {MIN_SEEDS}): {span}")
    if fewest < MIN_SEEDS:
        kind = VerdictKind.SINGLE_RUN if fewest == 1 else VerdictKind.TOO_FEW_SEEDS
        return Verdict(kind, f"{kind.value} (the fewest seeds behind a point: {fewest}; a verdict needs {MIN_SEEDS}): {span}")
    return by_interval(low, high, direction, span)


from ._stats import Equivalence  # noqa: E402  (the two-sided rule's result, for the function below)


def equivalence_verdict(result: Equivalence, who: str, span: str) -> Verdict:
    """The verdict on a two-sided "close" / "comparable" claim from its TOST (:func:`._stats.equivalence`):
    "<kind> (<who>): <span>", the kind equivalent / not equivalent / inconclusive, or below :data:`MIN_SEEDS`
    seeds single run / too few seeds. ``span`` gives Δ, its intervals, the margin and the margin's source."""
    kind = result.verdict if isinstance(result.verdict, VerdictKind) else VerdictKind[result.verdict.name]
    return Verdict(kind, f"{kind.value} ({who}): {span}")
