"""``python -m softmax_zoo.reports <page>``: rebuild one result page from the run records.

``python -m softmax_zoo.reports --check [page ...]`` rebuilds pages (default: all) into a
temporary folder instead and exits 1 if any file differs from the committed one in results/.
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

from softmax_zoo import reports
from softmax_zoo.reports._pages import CLAIMS_FILE

USAGE = "usage: python -m softmax_zoo.reports <page> | --check [page ...]"


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
        if (results_dir / CLAIMS_FILE).is_file():
            shutil.copy(results_dir / CLAIMS_FILE, out / CLAIMS_FILE)
        builder(page)(results_dir, out)
        return [
            p.name for p in sorted(out.iterdir())
            if not (results_dir / p.name).is_file() or not filecmp.cmp(p, results_dir / p.name, shallow=False)
        ]


def main(argv: Sequence[str] | None = None) -> int:
    """Build the page named in ``argv``, or ``--check`` pages; 2 on a bad page name, 1 on a failed check."""
    argv = list(sys.argv[1:] if argv is None else argv)
    check = argv[:1] == ["--check"]
    names = argv[1:] if check else argv
    available = pages()
    unknown = [n for n in names if n not in available]
    if unknown or (not check and len(names) != 1):
        print(f"{USAGE}; pages: {', '.join(available) or '(none yet)'}" + (f"; unknown: {unknown}" if unknown else ""),
              file=sys.stderr)
        return 2
    if not check:
        builder(names[0])()
        return 0
    failed = {page: diff for page in names or available if (diff := differences(page))}
    for page, diff in failed.items():
        print(f"{page}: rebuilt {', '.join(diff)} differ(s) from results/", file=sys.stderr)
    print("every page rebuilds identically" if not failed else f"{len(failed)} page(s) differ", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
