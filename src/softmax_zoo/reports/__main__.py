"""``python -m softmax_zoo.reports <page>``: rebuild one result page from the run records."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Sequence

from softmax_zoo import reports


def pages() -> list[str]:
    """The page modules of :mod:`softmax_zoo.reports` (every module not starting with "_")."""
    return sorted(m.name for m in pkgutil.iter_modules(reports.__path__) if not m.name.startswith("_"))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``softmax_zoo.reports.<page>.build()`` for the one page named in ``argv``; 2 on a bad name."""
    argv = list(sys.argv[1:] if argv is None else argv)
    available = pages()
    if len(argv) != 1 or argv[0] not in available:
        print(f"usage: python -m softmax_zoo.reports <page>; pages: {', '.join(available) or '(none yet)'}", file=sys.stderr)
        return 2
    importlib.import_module(f"{reports.__name__}.{argv[0]}").build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
