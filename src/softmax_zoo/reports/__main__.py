"""``python -m softmax_zoo.reports <page> [results_dir=DIR] [out=DIR] [wandb=offline|online]``: rebuild one page.

Alone it lists the pages; ``--check [page ...]`` rebuilds pages (default: all, and README.md's status block) into a
temporary folder and exits 1 if any file differs from results/; ``readme`` rewrites README.md's status block
(:func:`headlines`); ``sweep <records|experiment|multirun folder>`` tabulates and plots any sweep (:mod:`._sweep`).
"""

from __future__ import annotations

import filecmp
import importlib
import pkgutil
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from softmax_zoo.extras import require

require("pipelines", "python -m softmax_zoo.reports", entry_point=__name__ == "__main__")

from softmax_zoo import reports  # noqa: E402
from softmax_zoo.cli_args import ArgumentError, Option, Parser, fail  # noqa: E402
from softmax_zoo.config import SCRATCH_DIR  # noqa: E402
from softmax_zoo.files import write_text  # noqa: E402
from softmax_zoo.provenance import REPO_ROOT  # noqa: E402
from softmax_zoo.records import runs_dir  # noqa: E402
from softmax_zoo.reports._pages import CLAIMS_FILE, COMMAND, ledger_data, read_claims, render, shown_path  # noqa: E402
from softmax_zoo.reports._settings import setting, values  # noqa: E402
from softmax_zoo.run_record import load_runs  # noqa: E402

PAGE = Parser(COMMAND, [
    Option("results_dir", None, "folder of the run records, <results_dir>/runs (default: the page's own, results)", kind=str),
    Option("out", None, "folder receiving the page and its claims rows (default: results_dir)", kind=str),
    Option("wandb", None, "also log the page to wandb", kind=str, choices=("offline", "online")),
], synopsis="<page>")
SWEEP = Parser(f"{COMMAND} sweep", [
    Option("metric", None, "the metric to tabulate first and plot (default: the task's primary_metric)", kind=str),
    Option("diagnostics", False, "also tabulate the diagnostic metrics (top-k regime, counts, throughput)"),
    Option("results_dir", None, "folder of an experiment's records, <results_dir>/runs (default: results, then scratch)", kind=str),
    Option("out", None, "folder of the table and plot", kind=str),
], synopsis="<records folder | experiment | multirun folder>")
BEGIN = f"<!-- results status: made by `{COMMAND} readme` from results/; do not edit by hand -->"
END = "<!-- end of results status -->"
README = REPO_ROOT / "README.md"
def pages() -> list[str]:
    """The page modules of :mod:`softmax_zoo.reports` (every module not starting with "_")."""
    return sorted(m.name for m in pkgutil.iter_modules(reports.__path__) if not m.name.startswith("_"))


def headlines() -> dict[str, tuple[str, str]]:
    """README.md's results status table, between BEGIN and END: per experiment (a folder of results/runs) with records its
    runs, scales, seeds and the verdict of its headline claim. Experiment -> (its page, the claims-ledger row that heads
    it), from every page module's ``HEADLINES``, in page order."""
    return {experiment: (page, claim) for page in pages() for experiment, claim in page_module(page).HEADLINES.items()}


def page_module(page: str) -> Any:
    """``softmax_zoo.reports.<page>``."""
    return importlib.import_module(f"{reports.__name__}.{page}")


def builder(page: str) -> Callable[..., None]:
    """``softmax_zoo.reports.<page>.build``."""
    return page_module(page).build


def differences(page: str, results_dir: str | Path = "results") -> list[str]:
    """The files of ``page`` rebuilt from ``results_dir`` (beside a copy of its claims ledger) that differ from its own."""
    results_dir = Path(results_dir)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for ledger in (CLAIMS_FILE, ledger_data(CLAIMS_FILE)):
            if (results_dir / ledger).is_file():
                shutil.copy(results_dir / ledger, out / ledger)
        builder(page)(results_dir, out)
        built = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())  # a page may write below out (diagnostics/)
        return [str(p) for p in built if not (results_dir / p).is_file() or not filecmp.cmp(out / p, results_dir / p, shallow=False)]


def snapshot(folder: Path) -> dict[Path, tuple[int, bytes]]:
    """Each file of ``folder`` (not its subfolders): its modification time (ns) and its bytes; {} when there is no folder."""
    return {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(folder.iterdir()) if p.is_file()} if folder.is_dir() else {}


def written_lines(before: dict[Path, tuple[int, bytes]], after: dict[Path, tuple[int, bytes]]) -> list[str]:
    """One line per file a build wrote (a new modification time): ``wrote <path>``, or ``<path> unchanged`` when its bytes
    are those it had before."""
    lines = []
    for path, (mtime, data) in after.items():
        old = before.get(path)
        if old is None or old[0] != mtime:
            lines.append(f"{shown_path(path)} unchanged" if old is not None and old[1] == data else f"wrote {shown_path(path)}")
    return lines


def build_page(page: str, wandb: str | None = None, **options: str) -> None:
    """Build ``page`` (``options``: results_dir, out) and print each file it wrote (:func:`written_lines`); with
    ``wandb`` (a mode) also log those files."""
    out = Path(options.get("out") or options.get("results_dir") or "results")
    before = snapshot(out)
    builder(page)(**options)
    after = snapshot(out)
    for line in written_lines(before, after):
        print(line)
    if wandb:
        from softmax_zoo.tracking import log_page

        written = [p for p, (mtime, _) in after.items() if p not in before or before[p][0] != mtime]
        info = log_page(page, written, wandb)
        print(f"logged {len(written)} file(s) of {page} to wandb run {info['path']} ({info['mode']}, {info['dir']})")


def check(names: Sequence[str]) -> int:
    """Rebuild the pages ``names`` (default: all, and the README's status block); 1 if any file differs."""
    if unknown := [n for n in names if n not in pages()]:
        return fail(PAGE, ArgumentError(f"{COMMAND} --check: unknown page(s) {unknown}; pages: {', '.join(pages())}"))
    failed = {page: diff for page in names or pages() if (diff := differences(page))}
    if not names and readme_differs():
        failed["readme"] = [f"README.md's results status block ({COMMAND} readme)"]
    for page, diff in failed.items():
        print(f"{page}: rebuilt {', '.join(diff)} differ(s) from results/", file=sys.stderr)
    print(f"{len(failed)} page(s) differ" if failed else "every page rebuilds identically", file=sys.stderr)
    return 1 if failed else 0


def sweep(argv: Sequence[str]) -> int:
    """Write and print the page of the sweep ``argv`` names (:func:`._sweep.build_sweep`); 2 on bad arguments."""
    from softmax_zoo.reports._sweep import build_sweep

    try:
        args = SWEEP.parse(argv)
        if len(args.positional) != 1:
            raise ArgumentError(f"{SWEEP.prog}: takes one records folder, experiment or multirun folder, got {args.positional}")
        out = Path(args.options.get("out") or Path(SCRATCH_DIR) / "sweeps")
        before = snapshot(out)
        print(build_sweep(args.positional[0], **args.options))
        for line in written_lines(before, snapshot(out)):
            print(line)
    except (ValueError, FileNotFoundError) as e:
        return fail(SWEEP, e)
    return 0


def status_rows(results_dir: str | Path = "results") -> list[dict[str, Any]]:
    """One row per experiment of :func:`headlines` that has records: its runs, scales, seeds, headline claim and page."""
    runs, ledger = runs_dir(results_dir), read_claims(Path(results_dir) / CLAIMS_FILE)
    rows = []
    for experiment, (page, claim_id) in headlines().items():
        if records := load_runs(runs, experiment):
            claim = ledger.get(claim_id, {})
            rows.append({"experiment": experiment, "page": page, "runs": len(records), "claim_id": claim_id,
                         "scales": sorted(map(str, values(records, setting("scale", "name")))),
                         "seeds": sorted(values(records, lambda r: r.seed)),
                         "claim": claim.get("claim", ""), "verdict": claim.get("verdict")})
    return rows


def status_block(results_dir: str | Path = "results") -> str:
    """The README's block rebuilt from ``results_dir``, markers included."""
    return f"{BEGIN}\n{render('readme_status.md.j2', rows=status_rows(results_dir))}{END}"


def with_status(text: str, block: str) -> str:
    """``text`` (the README) with its block between the markers replaced by ``block``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md has no results status block ({BEGIN!r} ... {END!r})")
    return text[:start] + block + text[end + len(END):]


def write_readme(results_dir: str | Path = "results", readme: Path = README) -> Path:
    """Rewrite the README's status block from ``results_dir``."""
    return write_text(readme, with_status(readme.read_text(encoding="utf-8"), status_block(results_dir)))


def readme_differs(results_dir: str | Path = "results", readme: Path = README) -> bool:
    """Whether the README's status block differs from one rebuilt from ``results_dir``."""
    text = readme.read_text(encoding="utf-8")
    return with_status(text, status_block(results_dir)) != text


def main(argv: Sequence[str] | None = None) -> int:
    """Build the page ``argv`` names, ``--check`` pages, the README's status or a sweep, else list pages; 2: bad argv, 1: check failed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(f"{PAGE.usage()}\n{SWEEP.usage()}\nusage: {COMMAND} --check [page ...] | {COMMAND} readme\npages: {', '.join(pages())}")
        return 0
    if argv == ["readme"]:
        print(f"wrote the results status of {write_readme()}")
        return 0
    if argv[0] == "--check":
        return check(argv[1:])
    if argv[0] == "sweep":
        return sweep(argv[1:])
    try:
        args = PAGE.parse(argv)
        if len(args.positional) != 1 or args.positional[0] not in pages():
            raise ArgumentError(f"{COMMAND}: takes one page of {', '.join(pages())}, got {args.positional}")
    except ArgumentError as e:
        return fail(PAGE, e)
    build_page(args.positional[0], **{k: v for k, v in args.options.items() if v is not None})  # None: the builder's default
    return 0


if __name__ == "__main__":
    sys.exit(main())
