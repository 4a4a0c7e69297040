"""The words of every page: one Jinja2 environment over reports/templates/ and the number formats it knows.

A page's summariser returns plain data; :func:`render` puts it into the page's template. Each number format has
one home, a filter of :data:`FILTERS`. Undefined names fail (StrictUndefined): a template cannot print a silent blank.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import jinja2

from ..markdown import markdown_table
from ._stats import format_mean_ci, seeds_label
from ._verdicts import MIN_SEEDS, by_construction, detectability, deterministic, not_tested, seed_summary

FILTERS = {
    "signed": lambda x, digits=2: f"{x:+.{digits}f}",  # "+0.67": a delta with its sign
    "fixed": lambda x, digits=2: f"{x:.{digits}f}",  # "15.42"
    "per100": lambda share, digits=0: f"{100 * share:.{digits}f}",  # "42" of a share in [0, 1]
    "pct": lambda share, digits=0: f"{100 * share:.{digits}f}%",  # "42%" of a share in [0, 1]
    "fmt": format,  # a format without a filter of its own: x | fmt(".3g")
    "pick": lambda row, keys: [row[k] for k in keys],  # the values of keys in a dict, as a table row
    "code": lambda text: f"`{text}`",  # a path or a name in code type
    "span": lambda interval, digits=2: "[{:+.{d}f}, {:+.{d}f}]".format(*interval, d=digits),  # "[-0.72, -0.40]"
    # a Markdown table (softmax_zoo.markdown.markdown_table) without its last newline (the template's line gives it)
    "table": lambda rows, header: markdown_table(header, rows).rstrip("\n"),
    "prefixed": lambda items, prefix: [f"{prefix}{x}" for x in items],  # table headers: "ours: " + column
    "seeds": seeds_label, "mean_ci": format_mean_ci, "sci": partial(format_mean_ci, notation="e"),  # "1.12e-08 ± 5.1e-09 (n=3)"
    "seed_summary": seed_summary, "detectability": detectability,
}
ENV = jinja2.Environment(loader=jinja2.PackageLoader("softmax_zoo.reports", "templates"), undefined=jinja2.StrictUndefined,
                         trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
ENV.filters.update(FILTERS)
ENV.globals.update(MIN_SEEDS=MIN_SEEDS, by_construction=by_construction, deterministic=deterministic, not_tested=not_tested)
RULES = ENV.get_template("_verdicts.j2").make_module()  # the vocabulary's rules, which the pages print
ENV.globals.update({note: getattr(RULES, note) for note in ("VERDICT_RULES", "NON_SEED_RULES", "SEED_INTERVAL_NOTE")})


def render(template: str, **data: Any) -> str:
    """``templates/<template>`` filled with ``data``."""
    return ENV.get_template(template).render(**data)


def render_page(template: str, data: dict[str, Any]) -> tuple[str, list[dict[str, str]]]:
    """(the page, its claims ledger rows): ``template`` filled with ``data``, and ``data["claims"]`` in the
    words of the template's macros claim, paper, ours and verdict."""
    page, macros = words(template, **data), ("claim", "paper", "ours", "verdict")
    return str(page), [{"id": c["id"], "source": c["source"], **{m: str(getattr(page, m)(c)) for m in macros}}
                       for c in data.get("claims", ())]


def words(template: str, **data: Any) -> Any:
    """The variables ``templates/<template>`` sets (``{% set paper = {...} %}``), ``data`` given to it: a page's words
    that Python pairs with numbers (the statements and reasons of a settings table), as attributes."""
    return ENV.get_template(template).make_module(data)


def publish(out: str | Path, page: str, data: dict[str, Any]) -> None:
    """Write ``<out>/<page>.md`` from ``templates/<page>.md.j2`` and ``data``, and its claims rows into ``<out>/claims.md``."""
    from ._pages import write_page  # that module renders through this one

    write_page(out, page, *render_page(f"{page}.md.j2", data))
