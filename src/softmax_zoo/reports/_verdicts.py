"""The claims ledger's verdict vocabulary, defined once: what a delta over seeds lets a row say.

* ``supported`` / ``contradicts``: at least :data:`MIN_SEEDS` seeds and a seed-aware interval of Δ
  that excludes 0, on the claim's side or the other: Student-t over the per-seed Δ where the design
  pairs the arms by seed (paired t), Welch's where it does not; the text names which. Never from
  whether the two arms' own intervals overlap.
* a "close" / "comparable" claim: two one-sided tests (TOST) of |Δ| < a stated margin whose source
  the text names: ``supported`` when equivalent, ``contradicts`` when Δ's interval lies outside the
  margin, else ``inconclusive`` (:func:`equivalence_verdict`).
* a claim over a grid (every k, the best k): each comparison's Holm-adjusted interval
  (:func:`grid_verdict`).
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from ._stats import (
    DeltaInterval,
    Equivalence,
    EquivalenceKind,
    HolmInterval,
    LinearTrend,
    SeedAwareDelta,
    UnpairedSeedDelta,
    holm_intervals,
    min_detectable_delta,
    seeds_label,
)

MIN_SEEDS = 3  # seeds a verdict of supported / contradicts / inconclusive needs

VERDICT_RULES = (
    f"Verdicts: \"supported\" or \"contradicts\" need >= {MIN_SEEDS} seeds and a 95% interval of Δ over seeds "
    "that excludes 0 (on the claim's side or the other); \"inconclusive\" when it includes 0. Δ's interval is a "
    "paired t over the per-seed Δ where the arms are paired by seed, Welch's where they are not, and each row names "
    "which; no verdict comes from whether two arms' own intervals overlap. A claim over a grid of k uses Holm-adjusted "
    "intervals, and a \"close\" claim two one-sided tests (TOST) against a stated margin. With fewer seeds a row says "
    "\"too few seeds\" or \"single run\" and gives its interval without a verdict."
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


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    text: str  # the ledger's verdict cell; starts with kind.value

    def __str__(self) -> str:
        return self.text


def too_few(n: int) -> VerdictKind | None:
    """SINGLE_RUN (n = 1) or TOO_FEW_SEEDS (n < :data:`MIN_SEEDS`): fewer seeds than a verdict needs; else None."""
    return VerdictKind.SINGLE_RUN if n == 1 else VerdictKind.TOO_FEW_SEEDS if n < MIN_SEEDS else None


def decide(interval: tuple[float, float], direction: int, n: int) -> VerdictKind:
    """The kind of verdict on a claim that Δ has sign ``direction`` (+1 or −1), from Δ's interval over ``n`` seeds.

    SUPPORTED / CONTRADICTS: the interval excludes 0 on the claimed side / the other; INCONCLUSIVE: it
    includes 0. Never from overlap of the arms' own intervals. Below :data:`MIN_SEEDS` seeds it decides
    nothing: SINGLE_RUN (n = 1) or TOO_FEW_SEEDS.
    """
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


def method_name(delta: SeedAwareDelta | UnpairedSeedDelta) -> str:
    """How Δ's interval over seeds is computed, as a row names it: "paired t" (per-seed Δ) or "Welch" (unpaired arms)."""
    return "Welch" if isinstance(delta, UnpairedSeedDelta) else "paired t"


def verdict(delta: SeedAwareDelta | UnpairedSeedDelta, direction: int, *, digits: int = 2) -> Verdict:
    """The verdict on a claim that Δ has sign ``direction`` (+1 or -1), by the rules of this module.

    The text names the interval's method (:func:`method_name`), e.g. "supported (seeds 0, 1, 2): Δ +0.40
    [+0.10, +0.70], 95% interval over seeds (paired t) excludes 0, on the claim's side".

    Args:
        delta: per-seed paired deltas (:class:`SeedAwareDelta`) or unpaired arms (:class:`UnpairedSeedDelta`).
        direction: the claimed sign of Δ (:func:`claimed_direction` of the paper's delta).
        digits: decimals of Δ and its interval in the text.
    """
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction}")
    level = f"{100 * delta.confidence:g}%"
    if delta.n_seeds == 1:
        (low, high), = delta.item_intervals if isinstance(delta, SeedAwareDelta) else ((math.nan, math.nan),)
        if not math.isnan(low):
            where = f"{_span(delta.mean, low, high, digits)} over test items"
        else:
            where = f"Δ {delta.mean:+.{digits}f} (no interval)"
        return Verdict(VerdictKind.SINGLE_RUN, f"single run ({delta.label}): {where}")
    low, high = delta.interval
    span = f"{_span(delta.mean, low, high, digits)}, {level} interval over seeds ({method_name(delta)})"
    if delta.n_seeds < MIN_SEEDS:
        return Verdict(VerdictKind.TOO_FEW_SEEDS, f"too few seeds ({delta.label}; a verdict needs {MIN_SEEDS}): {span}")
    return by_interval(low, high, direction, span, f" ({delta.label})")


def by_interval(low: float, high: float, direction: int, span: str, who: str = "") -> Verdict:
    """Inconclusive, supported or contradicts, by where the interval [low, high] lies against 0 and the claimed sign:
    "<kind><who>: <span> includes 0" / "excludes 0, on the claim's side" / "excludes 0, opposite to the claim"
    (:func:`decide`'s rule; the caller has checked the seeds)."""
    kind = decide((low, high), direction, MIN_SEEDS)
    said = {VerdictKind.INCONCLUSIVE: "includes 0", VerdictKind.SUPPORTED: "excludes 0, on the claim's side",
            VerdictKind.CONTRADICTS: "excludes 0, opposite to the claim"}[kind]
    return Verdict(kind, f"{kind.value}{who}: {span} {said}")


def seed_summary(delta: SeedAwareDelta, *, digits: int = 2) -> str:
    """The "ours" cell of a paired claim: Δ per seed, the interval over seeds, the SDs beside each other.

    E.g. "Δ per seed +0.10, +0.30, +0.20 (seeds 0, 1, 2); mean +0.20 [-0.05, +0.45] (95%, Student-t over
    seeds); between-seed SD 0.10 vs item standard error 0.20; smallest Δ one run per arm detects
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
        f"{delta.sd:.{digits}f} vs item standard error {delta.item_se:.{digits}f}; smallest Δ one run "
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


def equivalence_verdict(eq: Equivalence, label: str, span: str | None = None, *, digits: int = 2) -> Verdict:
    """The verdict on a "close" / "comparable" claim, |Δ| < margin, from :func:`._stats.equivalence` (TOST).

    Supported when equivalent (the 1 − 2α interval inside ±margin), contradicts when the 1 − α interval
    lies outside it, else inconclusive; below :data:`MIN_SEEDS` seeds no verdict. The text gives the
    interval, the margin and its source, and the test, e.g. "supported (seeds 0, 1, 2): Δ +0.10 [-0.20,
    +0.40], 90% interval inside ±1.00 (margin: our choice), TOST at α=0.05 on paired t over seeds (n=3)"; ``span``
    replaces that description of Δ, its interval and the margin (a page that words it in its own unit).
    """
    (low, high), f = eq.tost_interval, f"+.{digits}f"
    where = span or (f"Δ {eq.delta:{f}} [{low:{f}}, {high:{f}}], {100 * (1 - 2 * eq.alpha):g}% interval against ±{eq.margin:.{digits}f} "
             f"(margin: {eq.margin_source}), {eq.method}")
    if isinstance(eq.verdict, VerdictKind):  # too few seeds
        return Verdict(eq.verdict, f"{eq.verdict.value} ({label}): {where}")
    kind = {EquivalenceKind.EQUIVALENT: VerdictKind.SUPPORTED, EquivalenceKind.NOT_EQUIVALENT: VerdictKind.CONTRADICTS,
            EquivalenceKind.INCONCLUSIVE: VerdictKind.INCONCLUSIVE}[eq.verdict]
    return Verdict(kind, f"{kind.value} ({label}): {where}: {eq.verdict.value}")


def holm_grid(tests: Mapping[object, DeltaInterval]) -> dict[object, HolmInterval] | None:
    """Each comparison's Holm-adjusted interval beside its raw one (:func:`._stats.holm_intervals`), by key; None when a
    comparison has a single seed (no p-value to adjust)."""
    if not tests:
        raise ValueError("a grid needs at least one comparison")
    return dict(zip(tests, holm_intervals(list(tests.values())))) if min(t.n for t in tests.values()) > 1 else None


def grid_verdict(tests: Mapping[object, DeltaInterval], direction: int, label: str, *,
                 name: str = "k") -> tuple[Verdict, dict[object, HolmInterval] | None]:
    """One verdict on a claim that every comparison of a grid (``name`` -> Δ's :class:`DeltaInterval`) has sign
    ``direction``, by Holm-adjusted intervals (:func:`holm_grid`, familywise 95%), and those intervals.

    Supported when every adjusted interval excludes 0 on the claim's side, contradicts when one excludes it on
    the other side, else inconclusive; with fewer than :data:`MIN_SEEDS` seeds behind a comparison no verdict.
    """
    holm, fewest = holm_grid(tests), min(t.n for t in tests.values())
    family = f"Holm-adjusted over {len(tests)} comparisons, familywise 95%, {next(iter(tests.values())).method.split(' (')[0]}"
    if (gate := too_few(fewest)) is not None or holm is None:
        kind = gate or VerdictKind.SINGLE_RUN
        return Verdict(kind, f"{kind.value} ({label}; a verdict needs {MIN_SEEDS}): no interval decides ({family})"), holm
    kinds = {key: decide(h.interval, direction, h.raw.n) for key, h in holm.items()}
    if opposed := [key for key, kind in kinds.items() if kind is VerdictKind.CONTRADICTS]:
        return Verdict(VerdictKind.CONTRADICTS, f"contradicts ({label}): the adjusted interval of {name}={opposed} excludes 0, "
                                                f"opposite to the claim ({family})"), holm
    if open_ := [key for key, kind in kinds.items() if kind is VerdictKind.INCONCLUSIVE]:
        return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive ({label}): the adjusted interval of {name}={open_} includes 0 "
                                                  f"({family})"), holm
    return Verdict(VerdictKind.SUPPORTED, f"supported ({label}): every adjusted interval excludes 0, on the claim's side "
                                          f"({family})"), holm


def all_equivalent(verdicts: Mapping[object, Verdict], label: str, how: str, *, name: str = "k") -> Verdict:
    """One verdict on a claim that every comparison of a grid is "close" (intersection-union: each TOST at α keeps the
    family at α, no adjustment): supported when every one is, contradicts when one is not equivalent, else inconclusive.
    ``how`` names the margin, its source and the test, e.g. "margin ±1 (ours), TOST at α=0.05 on paired t"."""
    kinds = {key: v.kind for key, v in verdicts.items()}
    if few := {k for k in kinds.values() if k in (VerdictKind.SINGLE_RUN, VerdictKind.TOO_FEW_SEEDS)}:
        kind = VerdictKind.SINGLE_RUN if VerdictKind.SINGLE_RUN in few else VerdictKind.TOO_FEW_SEEDS
        return Verdict(kind, f"{kind.value} ({label}; a verdict needs {MIN_SEEDS}): no interval decides ({how})")
    if opposed := [key for key, kind in kinds.items() if kind is VerdictKind.CONTRADICTS]:
        return Verdict(VerdictKind.CONTRADICTS, f"contradicts ({label}): {name}={opposed} not equivalent ({how})")
    if open_ := [key for key, kind in kinds.items() if kind is VerdictKind.INCONCLUSIVE]:
        return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive ({label}): equivalence of {name}={open_} undecided ({how})")
    return Verdict(VerdictKind.SUPPORTED, f"supported ({label}): every {name} equivalent ({how})")
