"""A page's "the paper's setting and ours" table: what the paper states beside what our records ran, and why.

Each :class:`Setting` is one row. Ours come from the records' configs, never from prose; a row whose every
column equals the paper's says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..records import get
from ._pages import words
from ._stats import seeds_label

WORDS = words("_settings.md.j2")  # the table's fixed cells and its reason cell
NOT_STATED, NOT_RECORDED, AS_THE_PAPER = WORDS.NOT_STATED, WORDS.NOT_RECORDED, WORDS.AS_THE_PAPER
REASONED_SCALE = "cpu"  # the scale the reasons are written for
PRETRAINED_NAMES = {"minilm": "all-MiniLM-L6-v2"}  # the checkpoints the configs load, as their authors name them
Records = Sequence[dict[str, Any]]
SPARSE = "sparse_softmax"  # configs/loss/ name of the sparse-softmax arm


@dataclass(frozen=True)
class Setting:
    """One row of the table: the setting, the paper's value, how to read ours, why ours is what it is."""

    name: str
    paper: str
    ours: Callable[[Records], str | None]  # a column's records -> our value as the page shows it (None: not this column's)
    why: str  # the reason at the cpu scale


def values(records: Records, key: str) -> list[Any]:
    """The distinct values of a dotted record key (:func:`softmax_zoo.records.get`) in record order, missing ones left out."""
    found = [get(r, key) for r in records]
    return [v for i, v in enumerate(found) if v is not None and v not in found[:i]]


def shown(records: Records, key: str, fmt: Callable[[Any], str] = str) -> str:
    """The distinct values of ``key`` over ``records``, formatted and joined ("32" or "1, 5"); :data:`NOT_RECORDED` if none."""
    return ", ".join(fmt(v) for v in values(records, key)) or NOT_RECORDED


def joined(records: Records, key: str) -> str:
    """The distinct values of ``key`` over ``records``, sorted and "/"-joined ("0.1/20"; floats as %g); "—" if none."""
    found = sorted({f"{v:g}" if isinstance(v := get(r, key), float) else str(v) for r in records if get(r, key) is not None})
    return "/".join(found) if found else "—"


def seeds(records: Records) -> str:
    """"seeds 0, 1, 2": the seeds of ``records``; :data:`NOT_RECORDED` without records."""
    return seeds_label(sorted(values(records, "seed"))) if records else NOT_RECORDED


def sparse_ks(records: Records) -> str:
    """"5, 10, 20": the k of the records' sparse-softmax runs (configs/loss/sparse_softmax.yaml), sorted; "—" without any."""
    return ", ".join(map(str, sorted(values([r for r in records if get(r, "choices.loss") == SPARSE], "config.loss.k")))) or "—"


def pretrained_name(name: str | None) -> str:
    """A checkpoint's published name ("minilm" -> "all-MiniLM-L6-v2"); the config's name when it has none."""
    return PRETRAINED_NAMES.get(name, name) if name else WORDS.FROM_SCRATCH


def settings_rows(settings: Sequence[Setting], columns: dict[str, Records]) -> list[list[str]]:
    """The table's rows: setting, the paper's value, ours per column (``columns``: its name -> its records), why ours
    (the cpu-scale reason, and for any other scale a pointer to its own config block)."""
    scales = {str(s) for recs in columns.values() for s in values(recs, "config.scale.name")}
    why = partial(WORDS.why, reasoned_scale=REASONED_SCALE, reasoned=REASONED_SCALE in scales, others=sorted(scales - {REASONED_SCALE}))
    rows = []
    for s in settings:
        ours = [s.ours(recs) for recs in columns.values()]
        rows.append([s.name, s.paper, *ours, AS_THE_PAPER if all(v == s.paper for v in ours) else str(why(s.why))])
    return rows


def settings_data(settings: Sequence[Setting], columns: dict[str, Records], paper: str) -> dict[str, Any]:
    """The "the paper's setting and ours" part of a page (templates/_settings.md.j2)."""
    return {"paper": paper, "columns": list(columns), "rows": settings_rows(settings, columns)}

