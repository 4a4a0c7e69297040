"""A claim's logical form, declared as data beside its quotation: what a sentence asserts fixes the test it gets.

"Close to the full softmax" says an approximation loses no meaningful accuracy: non-inferiority, so being better
supports it. "Stable in k" says the results do not move: equivalence within a margin. "A wide range of k" says every
member of a set passes: an intersection-union test, each member at α, the set fixed by a rule before the results are
read. Every claims-ledger row carries a :class:`ClaimForm`; the ledger's data (claims.json, ``form``) keeps it and
templates/_forms.j2 words it. :data:`DECIDED_BY` ties each form to the verdict forms (``_verdicts.Form``) allowed to
decide it, so a row cannot be tested in a form other than the one it declares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ._verdicts import Form, Verdict


class ClaimKind(Enum):
    SUPERIORITY = "superiority"  # Δ lies on the claimed side of 0
    NON_INFERIORITY = "non-inferiority"  # Δ is not worse than a margin, in the stated direction
    EQUIVALENCE = "equivalence"  # |Δ| lies inside a margin
    EVERY_MEMBER = "every member"  # each member of a declared set passes its own test (intersection-union)
    TREND = "trend"  # a slope has the claimed sign
    THRESHOLD = "threshold"  # a gain only past a level s*, with s*'s interval over seeds
    DETERMINISTIC = "deterministic check"  # a computation without training or seeds
    BY_CONSTRUCTION = "by construction"  # a design property and the test that checks it
    DESCRIPTIVE = "descriptive"  # shown, not decided
    NOT_TESTED = "not tested"


# Which verdict forms may decide a claim of each kind; NO_INTERVAL (too few seeds, a single measurement) and NOT_TESTED
# decide nothing, so any kind may carry them.
UNDECIDED = (Form.NO_INTERVAL, Form.NOT_TESTED)
DECIDED_BY: dict[ClaimKind, tuple[Form, ...]] = {
    ClaimKind.SUPERIORITY: (Form.SIGN,),
    ClaimKind.NON_INFERIORITY: (Form.NON_INFERIORITY,),
    ClaimKind.EQUIVALENCE: (Form.EQUIVALENCE,),
    ClaimKind.EVERY_MEMBER: (Form.GRID,),
    ClaimKind.TREND: (Form.TREND,),
    ClaimKind.THRESHOLD: (),  # decided by reports/sparse_helps.py's threshold_kind, a kind without a Verdict
    ClaimKind.DETERMINISTIC: (Form.DETERMINISTIC,),
    ClaimKind.BY_CONSTRUCTION: (Form.BY_CONSTRUCTION,),
    ClaimKind.DESCRIPTIVE: (),
    ClaimKind.NOT_TESTED: (),
}
NEEDS_MARGIN = (ClaimKind.NON_INFERIORITY, ClaimKind.EQUIVALENCE)


@dataclass(frozen=True)
class ClaimForm:
    """A claim's form: its ``kind``, the words of the claim that fix it (``cue``, quoted from the sentence), what is
    compared (``measure``) and which way is better; a margin and its source for non-inferiority and equivalence; for
    every member, the ``members`` tested and the ``rule`` that chose them from the ``grid`` before the results were read.
    ``extra`` holds a form's own numbers (a check's tolerance, its arms)."""

    kind: ClaimKind
    cue: str
    measure: str = ""
    better: str = ""  # "higher" or "lower": the direction of a better ``measure``
    margin: float | None = None  # on the scale of ``measure`` (a log ratio where the measure is a log)
    margin_source: str = ""
    members: Sequence[Any] = ()
    rule: str = ""
    grid: Sequence[Any] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.cue.strip():
            raise ValueError(f"a {self.kind.value} claim needs the words of the claim that fix its form (cue), got {self.cue!r}")
        if self.better not in ("", "higher", "lower"):
            raise ValueError(f"better must be 'higher' or 'lower', got {self.better!r}")
        if self.kind in NEEDS_MARGIN and (self.margin is None or not self.margin > 0 or not self.margin_source.strip()):
            raise ValueError(f"a {self.kind.value} claim needs a margin > 0 and its source, got {self.margin} "
                             f"from {self.margin_source!r}")
        if self.kind is ClaimKind.NON_INFERIORITY and not self.better:
            raise ValueError("a non-inferiority claim needs the direction that is better ('higher' or 'lower')")
        if self.kind is ClaimKind.EVERY_MEMBER and not self.rule.strip():
            raise ValueError(f"an every-member claim needs the rule that chose its members {list(self.members)}, got {self.rule!r}")

    def data(self) -> dict[str, Any]:
        """The form as the ledger's data keeps it (claims.json ``form``): its kind's value and every field it sets."""
        out: dict[str, Any] = {"kind": self.kind.value, "cue": self.cue}
        for name in ("measure", "better", "margin", "margin_source", "rule"):
            if (value := getattr(self, name)) not in ("", None):
                out[name] = value
        if self.kind is ClaimKind.EVERY_MEMBER or self.members:
            out["members"] = list(self.members)
        if self.grid:
            out["grid"] = list(self.grid)
        return out | dict(self.extra)

    def check(self, verdict: Verdict | None, claim_id: str) -> None:
        """Raise unless ``verdict`` is of a form :data:`DECIDED_BY` allows for this claim's kind (or decides nothing)."""
        if verdict is None or verdict.form in UNDECIDED:
            return
        if verdict.form not in DECIDED_BY[self.kind]:
            allowed = [f.value for f in DECIDED_BY[self.kind]] or "none: it is not decided"
            raise ValueError(f"claim {claim_id} declares the form {self.kind.value!r} but was decided by "
                             f"{verdict.form.value!r}; its forms: {allowed}")


def declared(claim: Mapping[str, Any]) -> ClaimForm:
    """The :class:`ClaimForm` a page's claim declares (``claim["form"]``), checked against its ``verdict`` if it has one."""
    form = claim.get("form")
    if not isinstance(form, ClaimForm):
        raise ValueError(f"claim {claim.get('id', claim)} declares no form: every ledger row needs a ClaimForm "
                         f"(reports/_forms.py), got {form!r}")
    verdict = claim.get("verdict")
    form.check(verdict if isinstance(verdict, Verdict) else None, str(claim.get("id")))
    return form


def up_to_quarter(grid: Sequence[int], classes: int) -> list[int]:
    """The members of ``grid`` that "a wide range of k" covers for ``classes`` classes: k ≤ C/4, since k near C is the
    softmax itself (:data:`WIDE_K_RULE`)."""
    if classes < 1:
        raise ValueError(f"classes must be >= 1, got {classes}")
    return [k for k in grid if 4 * k <= classes]


WIDE_K_RULE = "k ≤ C/4"  # the rule :func:`up_to_quarter` applies, as the form states it
