"""A page's "the paper's setting and ours" table: what the paper states beside what our records ran, and why.

Each :class:`Setting` is one row. Ours come from the records' configs, never from prose; a row whose every
column equals the paper's says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..run_record import RunRecord, typed
from ._pages import template_words
from ._stats import seeds_label

WORDS = template_words("_settings.md.j2")  # the table's fixed cells (NOT_STATED, NOT_RECORDED, AS_THE_PAPER) and its reason cell
REASONED_SCALE = "cpu"  # the scale the reasons are written for
PRETRAINED_NAMES = {"minilm": "all-MiniLM-L6-v2"}  # the checkpoints the configs load, as their authors name them
Records = Sequence[RunRecord]
Read = Callable[[RunRecord], Any]  # what a row reads of one record
SPARSE = "sparse_softmax"  # configs/loss/ name of the sparse-softmax arm


def setting(*keys: str) -> Read:
    """A reader of the resolved config's value under ``keys`` (:meth:`RunRecord.setting`): ``setting("train", "lr")``."""
    return lambda r: r.setting(*keys)


@dataclass(frozen=True)
class Setting:
    """One row of the table: the setting, the paper's value, how to read ours, why ours is what it is."""

    name: str
    paper: str | None  # None: the paper's text is silent (the table says WORDS.NOT_STATED)
    ours: Callable[[Records], str | None]  # a column's records -> our value as the page shows it (None: not this column's)
    why: str  # the reason at the cpu scale


def values(records: Records, read: Read) -> list[Any]:
    """The distinct values ``read`` of ``records`` in record order, missing (None) ones left out."""
    found = [read(r) for r in typed(records)]
    return [v for i, v in enumerate(found) if v is not None and v not in found[:i]]


def shown(records: Records, read: Read, fmt: Callable[[Any], str] = str) -> str:
    """The distinct values ``read`` of ``records``, formatted and joined ("32" or "1, 5"); WORDS.NOT_RECORDED if none."""
    return ", ".join(fmt(v) for v in values(records, read)) or WORDS.NOT_RECORDED


def joined(records: Records, read: Read) -> str:
    """The distinct values ``read`` of ``records``, sorted and "/"-joined ("0.1/20"; floats as %g); "—" if none."""
    found = sorted({f"{v:g}" if isinstance(v, float) else str(v) for v in values(records, read)})
    return "/".join(found) if found else "—"


def seeds(records: Records) -> str:
    """"seeds 0, 1, 2": the seeds of ``records``; WORDS.NOT_RECORDED without records."""
    return seeds_label(sorted(values(records, lambda r: r.seed))) if records else WORDS.NOT_RECORDED


def sparse_ks(records: Records) -> str:
    """"5, 10, 20": the k of the records' sparse-softmax runs (configs/loss/sparse_softmax.yaml), sorted; "—" without any."""
    sparse = [r for r in typed(records) if r.choices.get("loss") == SPARSE]
    return ", ".join(map(str, sorted(values(sparse, setting("loss", "k"))))) or "—"


def pretrained_name(name: str | None) -> str:
    """A checkpoint's published name ("minilm" -> "all-MiniLM-L6-v2"); the config's name when it has none."""
    return PRETRAINED_NAMES.get(name, name) if name else WORDS.FROM_SCRATCH


def settings_rows(settings: Sequence[Setting], columns: dict[str, Records]) -> list[list[str]]:
    """The table's rows: setting, the paper's value, ours per column (``columns``: its name -> its records), why ours
    (the cpu-scale reason, and for any other scale a pointer to its own config block)."""
    scales = {str(s) for recs in columns.values() for s in values(recs, setting("scale", "name"))}
    why = partial(WORDS.why, reasoned_scale=REASONED_SCALE, reasoned=REASONED_SCALE in scales, others=sorted(scales - {REASONED_SCALE}))
    rows = []
    for s in settings:
        ours = [s.ours(recs) for recs in columns.values()]
        same = s.paper is not None and all(v == s.paper for v in ours)
        rows.append([s.name, WORDS.NOT_STATED if s.paper is None else s.paper, *ours, WORDS.AS_THE_PAPER if same else str(why(s.why))])
    return rows


def settings_data(settings: Sequence[Setting], columns: dict[str, Records], paper: str) -> dict[str, Any]:
    """The "the paper's setting and ours" part of a page (templates/_settings.md.j2)."""
    return {"paper": paper, "columns": list(columns), "rows": settings_rows(settings, columns)}

