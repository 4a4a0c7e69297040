"""Regime gates: a setting whose arms are out of the regime a claim is about decides nothing about the claim.

A :class:`Gate` is data: what it measures (its ``key``) and the threshold past which an arm fails it. Every page applies
the same gates the same way (:func:`failures`, then :func:`gated`): a verdict from a setting that fails one becomes
"not comparable (regime)" and keeps the test's own verdict beside it, so the numbers are still shown. The gates' words
are templates/_verdicts.j2's ``not_comparable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._verdicts import Verdict, VerdictKind


@dataclass(frozen=True)
class Gate:
    """An arm fails the gate when its ``key`` measure is above ``threshold`` (``at_or_above``: at it too)."""

    key: str
    threshold: float
    at_or_above: bool = False

    def fails(self, value: float) -> bool:
        return value >= self.threshold if self.at_or_above else value > self.threshold


@dataclass(frozen=True)
class Failure:
    """``arm`` failed ``gate`` with ``value``."""

    gate: Gate
    arm: str
    value: float


# More than half of an arm's test outputs are degenerate (a word three times in a row): the model is not yet in the
# regime of the paper's, whose outputs are summaries.
DEGENERATE = Gate("degenerate", 0.5)
# A baseline's score at or worse than a trivial predictor's (the value: its perplexity over the trivial predictor's,
# the uniform guess's V or the unigram frequency predictor's): a comparison with it measures the baseline, not the method.
TRIVIAL = Gate("trivial", 1.0, at_or_above=True)
GATES = (DEGENERATE, TRIVIAL)


def failures(gate: Gate, by_arm: Mapping[str, float]) -> list[Failure]:
    """The arms of ``by_arm`` (arm -> ``gate.key``'s measure) that fail ``gate``, in order."""
    return [Failure(gate, arm, float(value)) for arm, value in by_arm.items() if gate.fails(value)]


def gated(verdict: Verdict, failed: Sequence[Failure]) -> Verdict:
    """``verdict``, or where the setting failed a gate "not comparable (regime)" with the test's verdict as ``data["test"]``
    and the ``failed`` gates (a row that was not tested stays so)."""
    if not failed or verdict.kind is VerdictKind.NOT_TESTED:
        return verdict
    return Verdict(VerdictKind.NOT_COMPARABLE, verdict.form, {"test": verdict, "failed": list(failed)})
