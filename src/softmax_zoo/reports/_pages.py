"""What every page shares: where it reads and writes, Markdown tables, figures, the claims ledger.

A page module exposes ``build(results_dir="results", out=None)``: it reads the run records under
``<results_dir>/runs`` and writes its files, and its rows of ``claims.md``, into ``out`` (default
``results_dir``). ``out`` lets a check rebuild a page beside the committed one and compare. A page
names the folder it read (:func:`shown_path`), the command that rebuilds it (:func:`page_command`)
and the commits its records come from (:func:`commits`; :func:`provenance` says all three).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..records import REPO_ROOT, atomic_write, get, write_text

CLAIMS_FILE = "claims.md"
COMMAND = "python -m softmax_zoo.reports"
DEFAULT_RESULTS = "results"  # the committed pages' results_dir
# A claim's regime (share of targets inside the top-k) when its records carry no top-k diagnostics.
REGIME_NOT_MEASURED = "not measured (the records carry no top-k diagnostics)"
CLAIMS_HEADER = ("id", "claim", "paper", "ours", "verdict", "source")


# ---------------------------------------------------------------- tables and pages


def shown_path(path: str | Path) -> str:
    """``path`` as a page names it: relative to the repository when inside it ("scratch/runs/table5"), else absolute."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(REPO_ROOT.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def page_command(report: str, results_dir: str | Path = DEFAULT_RESULTS) -> str:
    """The command that rebuilds ``report`` from ``results_dir``: ``python -m softmax_zoo.reports <report>``,
    with ``results_dir=<folder>`` unless it is the committed results/."""
    folder = shown_path(results_dir)
    return f"{COMMAND} {report}" + ("" if folder == DEFAULT_RESULTS else f" results_dir={folder}")


def commits(records: Sequence[dict[str, Any]]) -> str:
    """The commits of the code that made ``records``, oldest first, with their runs and how many ran changed code.

    ``"commits 3e2adde (5 runs, 2 with uncommitted changes), 9a7cf16 (1 run)"``. A run counts as
    changed when its record lists changed files the run is made from (``git.dirty_paths``), or, in a
    record from before those were kept, when any tracked file was changed (``git.dirty``).
    """
    runs: dict[str, list[dict[str, Any]]] = {}
    for record in sorted(records, key=lambda r: str(r.get("created"))):
        commit = get(record, "git.commit")
        runs.setdefault(str(commit)[:7] if commit else "unknown", []).append(record)

    def changed(record: dict[str, Any]) -> bool:
        paths = get(record, "git.dirty_paths")
        return bool(paths) if paths is not None else bool(get(record, "git.dirty"))

    def counts(group: list[dict[str, Any]]) -> str:
        dirty = sum(map(changed, group))
        return f"{len(group)} run{'s' if len(group) != 1 else ''}" + (f", {dirty} with uncommitted changes" if dirty else "")

    listed = ", ".join(f"{commit} ({counts(group)})" for commit, group in runs.items())
    return f"commit{'s' if len(runs) != 1 else ''} {listed}"


def provenance(report: str, records: Sequence[dict[str, Any]], results_dir: str | Path = DEFAULT_RESULTS) -> str:
    """A line naming the command that builds a page from ``results_dir``, its record count and the code's commits (:func:`commits`)."""
    origin = f"; records from {commits(records)}" if records else ""
    return f"Made by `{page_command(report, results_dir)}` from {len(records)} run records{origin}.\n"


def write_page(out: str | Path, name: str, text: str, claims: Sequence[dict[str, str]] = ()) -> None:
    """Write ``<out>/<name>.md`` and add or replace ``claims`` in ``<out>/claims.md``."""
    write_text(Path(out) / f"{name}.md", text)
    if claims:
        update_claims(claims, Path(out) / CLAIMS_FILE)


# ---------------------------------------------------------------- figures


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
    """One 6.4 x 4.2 in axes to draw on; on exit: labels, title, grid, legend, saved to ``path``.

    ``legend_outside``: the legend to the right of the axes (a wider figure), where it would hide curves."""
    fig, ax = pyplot().subplots(figsize=(9.6, 4.2) if legend_outside else (6.4, 4.2))
    yield ax
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(**({"loc": "upper left", "bbox_to_anchor": (1.02, 1.0), "fontsize": 8} if legend_outside else {}))
    save_figure(fig, path)


# ---------------------------------------------------------------- claims ledger


def read_claims(path: str | Path) -> dict[str, dict[str, str]]:
    """Rows of the claims ledger keyed by id (empty if the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return {}
    rows = {}
    for line in path.read_text().splitlines():
        if not line.startswith("| ") or line.startswith("| id |"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in _split_row(line)]
        if len(cells) == len(CLAIMS_HEADER):
            rows[cells[0]] = dict(zip(CLAIMS_HEADER, cells))
    return rows


def _split_row(line: str) -> list[str]:
    """Cells of a Markdown table row ("| a | b |"), honouring escaped pipes."""
    return re.split(r"(?<!\\)\|", line.strip()[1:-1])


def update_claims(rows: Iterable[dict[str, str]], path: str | Path = "results/claims.md") -> Path:
    """Add or replace claims by id, leaving every other row as it is.

    Args:
        rows: dicts with the keys of ``CLAIMS_HEADER`` (id, claim, paper, ours, verdict, source).
        path: the ledger (results/claims.md).
    """
    ledger = read_claims(path)
    for row in rows:
        missing = [k for k in CLAIMS_HEADER if k not in row]
        if missing:
            raise ValueError(f"claim row {row.get('id', row)} lacks {missing}")
        ledger[str(row["id"])] = {k: str(row[k]) for k in CLAIMS_HEADER}
    from ._render import render

    return write_text(path, render("claims.md.j2", header=CLAIMS_HEADER,
                                   rows=[[r[k] for k in CLAIMS_HEADER] for _, r in sorted(ledger.items())]))


def bench_group(path: Path, title: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the first group whose title starts with ``title``, the whole report) of ``scripts/bench_losses.py``'s JSON
    at ``path``: a group is ``{"title", "rows": [{"variant", "ms", ...}]}``; ({}, {}) when the file or the group is missing."""
    if not path.is_file():
        return {}, {}
    report = json.loads(path.read_text(encoding="utf-8"))
    return next((g for g in report["groups"] if g["title"].startswith(title)), {}), report
