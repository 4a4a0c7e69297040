"""One-off: write the JSON beside each committed ``results/bench_losses_*.md`` made before the benchmark wrote JSON.

    python scripts/migrate_bench_json.py     # writes results/bench_losses_<...>.json where it is missing

Parses each page's header lines (command, machine, date, load averages) and its tables, in the keys
``scripts/bench_losses.py`` writes (:func:`bench_losses.write_json`); times and ratios are as the
Markdown rounded them. A page that already has its JSON is left alone.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "src")]

from bench_losses import write_json  # noqa: E402


def number(cell: str) -> float | None:
    return float(cell) if cell else None


def parse(text: str) -> dict[str, object]:
    """The report's keys from a bench_losses page."""
    command = re.search(r"^- command: `(.*?)`", text, re.M).group(1)
    machine = re.search(r"^- machine: (.*)$", text, re.M).group(1)
    date, start, end = re.search(r"^- date: (.*?); load average at start / end: ([\d. ]+?) / ([\d. ]+?) \(", text, re.M).groups()
    groups = []
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        title, *lines = block.splitlines()
        rows = []
        for line in lines:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| ") and len(cells) == 5 and re.fullmatch(r"[\d.]+", cells[1]):
                rows.append({"variant": cells[0], "ms": float(cells[1]), "ratio": number(cells[2]),
                             "mem_mib": number(cells[3]), "target": cells[4]})
        groups.append({"title": title, "rows": rows})
    return {"command": command, "machine": machine, "date": date, "load_average": {"start": start, "end": end}, "groups": groups}


def main() -> None:
    for page in sorted((ROOT / "results").glob("bench_losses_*.md")):
        path = page.with_suffix(".json")
        if not path.exists():
            write_json(path, **parse(page.read_text(encoding="utf-8")))
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
