"""What every page shares: its words, where it reads and writes, its provenance, figures, the claims ledger.

A page module's ``build(results_dir="results", out=None)`` reads the run records under ``<results_dir>/runs`` and writes
its files and its rows of ``claims.md`` into ``out`` (default ``results_dir``), so that a check can rebuild a page
beside the committed one. Its words are its template's: :func:`publish` fills ``templates/<page>.md.j2`` with the plain
data of the page's ``summarise``, through one Jinja2 environment (:data:`ENV`) whose filters (:data:`FILTERS`) are each
number format's one home. Undefined names fail (StrictUndefined): a template cannot print a silent blank.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import jinja2

from ..files import atomic_write, write_text
from ..markdown import markdown_table
from ..provenance import REPO_ROOT
from ..records import changed, changed_files
from ..run_record import GitState, RunRecord, typed
from ._forms import declared
from ._stats import format_mean_ci, seeds_label
from ._verdicts import MIN_SEEDS, Verdict, by_construction, deterministic, not_tested

CLAIMS_FILE = "claims.md"
COMMAND = "python -m softmax_zoo.reports"
DEFAULT_RESULTS = "results"  # the committed pages' results_dir
CLAIMS_HEADER = ("id", "claim", "paper", "ours", "verdict", "source")  # claims.md's columns, besides each row's form


def variant_label(loss: str) -> str:
    """:func:`softmax_zoo.losses.machinery.registry.variant_label`, imported when a page first words an arm (torch with it)."""
    from ..losses.machinery.registry import variant_label as label

    return label(loss)


def enough_digits(values, digits: int = 2, most: int = 6) -> int:
    """The fewest digits from ``digits`` (up to ``most``) at which no nonzero finite value of ``values`` prints as ±0
    and distinct values print distinct: a Δ of +0.0019 [−0.0002, +0.0040] prints so, not as +0.00 [−0.00, +0.00]."""
    shown = [v for v in values if math.isfinite(v)]

    def blurred(d: int) -> bool:
        return any(v != 0 and round(v, d) == 0 for v in shown) or len({round(v, d) for v in shown}) < len(set(shown))

    while digits < most and blurred(digits):
        digits += 1
    return digits


FILTERS = {
    "signed": lambda x, digits=2: f"{x:+.{digits}f}",  # "+0.67": a delta with its sign
    "fixed": lambda x, digits=2: f"{x:.{digits}f}",  # "15.42"
    "per100": lambda share, digits=0: f"{100 * share:.{digits}f}",  # "42" of a share in [0, 1]
    "pct": lambda share, digits=0: f"{100 * share:.{digits}f}%",  # "42%" of a share in [0, 1]
    "fmt": format,  # a format without a filter of its own: x | fmt(".3g")
    "pick": lambda row, keys: [row[k] for k in keys],  # the values of keys in a dict, as a table row
    "code": lambda text: f"`{text}`",  # a path or a name in code type
    "enough_digits": enough_digits,  # (Δ, low, high) | enough_digits(2): the digits a Δ and its interval need
    "span": lambda interval, digits=2: "[{:+.{d}f}, {:+.{d}f}]".format(*interval, d=digits),  # "[-0.72, -0.40]"
    # a Markdown table (softmax_zoo.markdown.markdown_table) without its last newline (the template's line gives it)
    "table": lambda rows, header: markdown_table(header, rows).rstrip("\n"),
    "prefixed": lambda items, prefix: [f"{prefix}{x}" for x in items],  # table headers: "ours: " + column
    "seeds": seeds_label, "mean_ci": format_mean_ci, "sci": partial(format_mean_ci, notation="e"),  # "1.12e-08 ± 5.1e-09 (n=3)"
    "label": variant_label,  # a loss choice's registered label: "sparse_softmax" -> "sparse"
}
ENV = jinja2.Environment(loader=jinja2.PackageLoader("softmax_zoo.reports", "templates"), undefined=jinja2.StrictUndefined,
                         trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
ENV.filters.update(FILTERS)
# verdicts a template decides itself (as data: its words are templates/_verdicts.j2's said())
ENV.globals.update(MIN_SEEDS=MIN_SEEDS, by_construction=by_construction, deterministic=deterministic, not_tested=not_tested)


def render(template: str, **data: Any) -> str:
    """``templates/<template>`` filled with ``data``."""
    return ENV.get_template(template).render(**data)


def render_page(template: str, data: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(the page, its ledger rows): ``template`` filled with ``data``, ``data["claims"]`` in its macros claim, paper, ours,
    verdict, each row with the form its claim declares (:func:`._forms.declared`, as data)."""
    page, macros = template_words(template, **data), ("claim", "paper", "ours", "verdict")
    return str(page), [{"id": c["id"], "source": c["source"], "form": declared(c).data(),
                        **{m: str(getattr(page, m)(c)) for m in macros}} for c in data.get("claims", ())]


class Words:
    """The variables and macros ``templates/<template>`` sets, given ``data``, as attributes: the words Python pairs
    with numbers. The template renders on the first attribute read, so a module's ``WORDS = template_words(...)`` does no work
    at import."""

    def __init__(self, template: str, data: dict[str, Any]) -> None:
        self._template, self._data, self._module = template, data, None

    def _rendered(self) -> Any:
        if self._module is None:
            self._module = ENV.get_template(self._template).make_module(self._data)
        return self._module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rendered(), name)

    def __str__(self) -> str:
        return str(self._rendered())  # the template's body


def template_words(template: str, **data: Any) -> Words:
    """:class:`Words` of ``templates/<template>`` given ``data``."""
    return Words(template, data)


PROVENANCE = template_words("_provenance.md.j2")  # the macros that word a page's provenance


def said(verdict: Verdict) -> str:
    """``verdict`` in the ledger's words: templates/_verdicts.j2's ``said``, as a page's template prints it."""
    return str(template_words("_verdicts.j2").said(verdict))


def shown_path(path: str | Path) -> str:
    """``path`` as a page names it: relative to the repository when inside it ("scratch/runs/table5"), else absolute."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def page_command(report: str, results_dir: str | Path = DEFAULT_RESULTS) -> str:
    """``python -m softmax_zoo.reports <report>``, with ``results_dir=<folder>`` unless it is the committed results/."""
    folder = shown_path(results_dir)
    return f"{COMMAND} {report}" + ("" if folder == DEFAULT_RESULTS else f" results_dir={folder}")


def dirty_note(behind: Sequence[RunRecord | dict[str, Any]]) -> str:
    """What a claims row says when records made with uncommitted changes stand behind it (empty when none do); a dict
    behind it is a measurement file, read by its ``git`` entry."""
    return str(PROVENANCE.dirty_note(sum(map(changed, behind)), len(behind), changed_files(behind)))


def commits(records: Sequence[RunRecord]) -> str:
    """The commits of the code that made ``records``, oldest first, with their runs and those made with uncommitted
    changes: ``"commits 3e2adde (5 runs, 2 with uncommitted changes: src/a.py), 9a7cf16 (1 run); 2 of 6 records ..."``."""
    runs: dict[str, list[RunRecord]] = {}
    for record in sorted(typed(records), key=lambda r: str(r.created)):
        commit = record.git.commit
        runs.setdefault(str(commit)[:7] if commit else "unknown", []).append(record)
    groups = [{"commit": commit, "runs": len(rs), "dirty": sum(r.dirty for r in rs), "files": changed_files(rs)}
              for commit, rs in runs.items()]
    return str(PROVENANCE.commits(groups, sum(r.dirty for rs in runs.values() for r in rs), len(records)))


def file_commit(data: dict[str, Any]) -> str:
    """The code a measurement file (not a run record) was made from, by its ``git`` entry: ``"commit 3e2adde"``."""
    git = GitState.of_file(data)
    commit = git.commit
    return str(PROVENANCE.file_commit(commit and str(commit)[:7], changed_files([RunRecord(git=git)]) if git.changed else ""))


def provenance(report: str, records: Sequence[RunRecord], results_dir: str | Path = DEFAULT_RESULTS) -> str:
    """A line naming the command that builds a page from ``results_dir``, its record count and their :func:`commits`."""
    return str(PROVENANCE.provenance(page_command(report, results_dir), len(records), commits(records) if records else ""))


def write_page(out: str | Path, name: str, text: str, claims: Sequence[dict[str, str]] = ()) -> None:
    """Write ``<out>/<name>.md`` and add or replace ``claims`` in ``<out>/claims.md``."""
    write_text(Path(out) / f"{name}.md", text)
    if claims:
        update_claims(claims, Path(out) / CLAIMS_FILE)


def publish(out: str | Path, page: str, data: dict[str, Any]) -> None:
    """Write ``<out>/<page>.md`` from ``templates/<page>.md.j2`` and ``data``, and its claims rows into ``<out>/claims.md``."""
    write_page(out, page, *render_page(f"{page}.md.j2", data))


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the file-only Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Lay out, save atomically (format from the suffix) and close a matplotlib figure."""
    path = Path(path)
    fig.tight_layout()
    try:
        return atomic_write(path, lambda tmp: fig.savefig(tmp, format=path.suffix.lstrip("."), dpi=dpi))
    finally:
        pyplot().close(fig)


@contextmanager
def line_plot(path: str | Path, *, xlabel: str, ylabel: str, title: str, legend_outside: bool = False) -> Iterator[Any]:
    """Axes to draw on, 6.4 x 4.2 in (9.6 wide, legend ``legend_outside``); on exit: labels, title, grid, legend, saved to ``path``."""
    fig, ax = pyplot().subplots(figsize=(9.6, 4.2) if legend_outside else (6.4, 4.2))
    yield ax
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(**({"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "fontsize": 8} if legend_outside else {}))
    save_figure(fig, path)


def ledger_data(path: str | Path) -> Path:
    """The ledger's rows as data, beside its page: claims.json for claims.md."""
    return Path(path).with_suffix(".json")


def read_claims(path: str | Path) -> dict[str, dict[str, str]]:
    """The rows of the claims ledger ``path`` (claims.md) keyed by id, from its data (:func:`ledger_data`), if any."""
    data = ledger_data(path)
    return json.loads(data.read_text(encoding="utf-8")) if data.is_file() else {}


def update_claims(rows: Iterable[dict[str, Any]], path: str | Path = "results/claims.md") -> Path:
    """Add or replace claims by id (dicts with the keys of :data:`CLAIMS_HEADER` and ``form``, a
    :meth:`._forms.ClaimForm.data`) in the ledger at ``path``, leaving every other row as it is: its data
    (:func:`ledger_data`), and the page that templates/claims.md.j2 makes of it."""
    ledger = read_claims(path)
    for row in rows:
        if missing := [k for k in (*CLAIMS_HEADER, "form") if k not in row]:
            raise ValueError(f"claim row {row.get('id', row)} lacks {missing}")
        ledger[str(row["id"])] = {**{k: str(row[k]) for k in CLAIMS_HEADER}, "form": dict(row["form"])}
    ledger = dict(sorted(ledger.items()))
    write_text(ledger_data(path), json.dumps(ledger, ensure_ascii=False, indent=1) + "\n")
    return write_text(path, render("claims.md.j2", header=CLAIMS_HEADER, rows=list(ledger.values())))


def bench_group(path: Path, title: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the first group whose title starts with ``title``, the whole report) of ``scripts/bench_losses.py``'s JSON
    at ``path``: a group is ``{"title", "rows": [{"variant", "ms", ...}]}``; ({}, {}) when the file or the group is missing."""
    if not path.is_file():
        return {}, {}
    report = json.loads(path.read_text(encoding="utf-8"))
    return next((g for g in report["groups"] if g["title"].startswith(title)), {}), report
