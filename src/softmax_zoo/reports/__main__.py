"""``python -m softmax_zoo.reports <page> [results_dir=DIR] [out=DIR] [wandb=offline|online]``: rebuild one page.

``results_dir`` (default results) holds the records, ``out`` (default ``results_dir``) receives the page and its
claims rows; ``wandb=`` also logs the page (:func:`softmax_zoo.tracking.log_page`). Alone it lists the pages;
``--check [page ...]`` rebuilds pages (default: all, and README.md's status block) into a temporary folder and
exits 1 if any file differs from results/; ``readme`` rewrites README.md's status block (:mod:`._status`);
``sweep <records|experiment|multirun folder> [metric=NAME] [diagnostics=true]`` tabulates and plots any sweep
(:mod:`._sweep`).
"""

from __future__ import annotations

import filecmp
import importlib
import pkgutil
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from softmax_zoo import reports
from softmax_zoo.cli_args import ArgumentError, Option, Parser
from softmax_zoo.reports._pages import CLAIMS_FILE, ledger_data

USAGE = (
    "usage: python -m softmax_zoo.reports <page> [results_dir=DIR] [out=DIR] [wandb=offline|online] | --check [page ...] | readme "
    "| sweep <records folder|experiment|multirun folder> [metric=NAME] [diagnostics=true] [results_dir=DIR] [out=DIR]"
)
PAGE = Parser("python -m softmax_zoo.reports", [
    Option("results_dir", None, "folder of the run records, <results_dir>/runs (default: the page's own, results)", kind=str),
    Option("out", None, "folder receiving the page and its claims rows (default: results_dir)", kind=str),
    Option("wandb", None, "also log the page to wandb", kind=str, choices=("offline", "online")),
], synopsis="<page>")
CHECK = Parser("python -m softmax_zoo.reports --check", [], synopsis="[page ...]")
SWEEP = Parser("python -m softmax_zoo.reports sweep", [
    Option("metric", None, "the metric to tabulate first and plot (default: the task's primary_metric)", kind=str),
    Option("diagnostics", False, "also tabulate the diagnostic metrics (top-k regime, counts, throughput)"),
    Option("results_dir", None, "folder of an experiment's records, <results_dir>/runs (default: results, then scratch)", kind=str),
    Option("out", None, "folder of the table and plot", kind=str),
], synopsis="<records folder | experiment | multirun folder>")


def pages() -> list[str]:
    """The page modules of :mod:`softmax_zoo.reports` (every module not starting with "_")."""
    return sorted(m.name for m in pkgutil.iter_modules(reports.__path__) if not m.name.startswith("_"))


def builder(page: str) -> Callable[..., None]:
    """``softmax_zoo.reports.<page>.build``."""
    return importlib.import_module(f"{reports.__name__}.{page}").build


def differences(page: str, results_dir: str | Path = "results") -> list[str]:
    """Rebuild ``page`` beside ``results_dir`` and name the files that differ from (or are missing in) it.

    The page is built into a temporary folder holding a copy of the claims ledger, so that the
    ledger's other rows take part in the comparison too.
    """
    results_dir = Path(results_dir)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for ledger in (CLAIMS_FILE, ledger_data(CLAIMS_FILE)):
            if (results_dir / ledger).is_file():
                shutil.copy(results_dir / ledger, out / ledger)
        builder(page)(results_dir, out)
        return [
            p.name for p in sorted(out.iterdir())
            if not (results_dir / p.name).is_file() or not filecmp.cmp(p, results_dir / p.name, shallow=False)
        ]


def build_page(page: str, wandb: str | None = None, **options: str) -> None:
    """Build ``page`` (``options``: results_dir, out); with ``wandb`` (a mode) also log the files the build wrote."""
    started = time.time()
    builder(page)(**options)
    if wandb:
        from softmax_zoo.tracking import log_page

        out = Path(options.get("out") or options.get("results_dir") or "results")
        written = sorted(p for p in out.iterdir() if p.is_file() and p.stat().st_mtime >= started - 1)
        info = log_page(page, written, wandb)
        print(f"logged {len(written)} file(s) of {page} to wandb run {info['path']} ({info['mode']}, {info['dir']})")


def given(options: dict[str, Any]) -> dict[str, Any]:
    """The options set on the command line or with a default (None: left to the builder's own default)."""
    return {k: v for k, v in options.items() if v is not None}


def main(argv: Sequence[str] | None = None) -> int:
    """Build the page named in ``argv``, ``--check`` pages, or a ``sweep``; 2 on bad arguments, 1 on a failed check.

    Without arguments, list the pages and exit 0.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    available = pages()
    if not argv:
        print(f"{USAGE}\npages: {', '.join(available) or '(none yet)'}")
        return 0
    if argv == ["readme"]:
        from softmax_zoo.reports._status import write_readme

        print(f"wrote the results status of {write_readme()}")
        return 0
    if argv[0] == "sweep":
        from softmax_zoo.reports._sweep import build_sweep

        try:
            args = SWEEP.parse(argv[1:])
            if len(args.positional) != 1:
                raise ArgumentError(f"sweep takes one records folder, experiment or multirun folder, got {args.positional}")
            print(build_sweep(args.positional[0], **given(args.options)))
        except (ValueError, FileNotFoundError) as e:
            print(f"{USAGE}\n{e}", file=sys.stderr)
            return 2
        return 0
    check = argv[:1] == ["--check"]
    try:
        args = (CHECK if check else PAGE).parse(argv[1:] if check else argv)
    except ArgumentError as e:
        print(f"{USAGE}\n{e}", file=sys.stderr)
        return 2
    names = args.positional
    unknown = [n for n in names if n not in available]
    if unknown or (not check and len(names) != 1):
        print(f"{USAGE}; pages: {', '.join(available) or '(none yet)'}" + (f"; unknown: {unknown}" if unknown else ""),
              file=sys.stderr)
        return 2
    if not check:
        build_page(names[0], **given(args.options))
        return 0
    failed = {page: diff for page in names or available if (diff := differences(page))}
    if not names:
        from softmax_zoo.reports._status import readme_differs

        if readme_differs():
            failed["readme"] = ["README.md's results status block (python -m softmax_zoo.reports readme)"]
    for page, diff in failed.items():
        print(f"{page}: rebuilt {', '.join(diff)} differ(s) from results/", file=sys.stderr)
    print("every page rebuilds identically" if not failed else f"{len(failed)} page(s) differ", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
