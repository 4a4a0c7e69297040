"""One-off: rewrite the stable study's records of its earlier flat layout in the training records' schema.

    python scripts/migrate_stable_records.py     # rewrites results/runs/stable/*.json that lack "schema"

The flat layout held a run's arms, setting, curve (``curve``), final numbers (``final``), wall time
(``seconds``), torch version and git state at its top level; the schema
(:func:`softmax_zoo.records.study_record`) keeps them under choices, config, history, metrics,
timing, versions. What the flat records did not hold stays absent (``created`` is None, no
``torch_threads``), so the page says what it said. Records already in the schema are left alone.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from softmax_zoo.records import RECORD_SCHEMA, write_record  # noqa: E402

RUNS = ROOT / "results" / "runs"
ARMS = ("study", "start", "form", "dtype")  # the flat record's arms, in the schema's order


def migrated(flat: dict[str, Any]) -> dict[str, Any]:
    """The schema record of one flat record."""
    choices = {k: flat[k] for k in ARMS if k in flat}
    return {
        "schema": RECORD_SCHEMA, "experiment": "stable", "run_name": flat["run"], "created": None, "seed": flat["seed"],
        "choices": choices, "config": {**choices, "seed": flat["seed"], "setting": flat["setting"]},
        "git": flat["git"], "metrics": flat["final"], "history": flat["curve"], "timing": {"wall_s": flat["seconds"]},
        "versions": {"torch": flat["torch"]}, "command": flat["command"], "job": {}, "wandb": None,
    }


def main() -> None:
    for path in sorted((RUNS / "stable").glob("*.json")):
        record = json.loads(path.read_text())
        if "schema" not in record:
            write_record(migrated(record), RUNS)
            print(f"migrated {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
