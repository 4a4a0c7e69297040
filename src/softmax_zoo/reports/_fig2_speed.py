"""The title's "Faster" from the benchmarks: the sparse loss on given logits, and the output layer's training step.

Each reads a committed benchmark report under the results folder (``make bench``, ``scripts/bench_losses.py --only``)
and returns its times as a claims row; the page words them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..run_record import GitState
from ._fig2_constants import PAPER_K, TASK_NAMES
from ._pages import bench_group

# scripts/bench_losses.py (`make bench`) times sparse_softmax_cross_entropy beside softmax_cross_entropy and F.cross_entropy
BENCH_FILE = "bench_losses_cpu.md"  # under results_dir; its data is the .json beside it
BENCH_GROUP = "cross-entropy ("
SPARSE_ROW, SOFTMAX_ROW, TORCH_ROW = "sparse_softmax_cross_entropy", "softmax_cross_entropy", "F.cross_entropy"
# The output layer's training step (scripts/bench_cases/sparse_backward.py): the paper's sizes, then LM sizes; one
# page each, by `python scripts/bench_losses.py --only "<its --only>"`; its groups' sparse row at the paper's k.
STEP_BENCH_FILES = ("bench_losses_cpu_sparse-step.json",
                    *(f"bench_losses_cpu_sparse-backward-n-{n}-c-{c}.json" for n in (4096, 8192) for c in (32000, 128000)))
STEP_SOFTMAX_ROWS = ("SoftmaxHead (plain)", 'SoftmaxHead (chunk_size="auto")')
STEP_SPARSE_ROW = f"SparseSoftmaxHead (k={PAPER_K},"
STEP_TASK_NAMES = TASK_NAMES | {"gigaword": "Gigaword (UniLM, 30,522 WordPieces)"}  # the output-layer step's sizes


def speed_claim(results_dir: str | Path) -> dict[str, Any]:
    """The title's "Faster": the times (ms) of the sparse, softmax and torch losses in ``<results_dir>/bench_losses_cpu.json``'s
    cross-entropy group, its shape and the load at the start; ``sparse`` is None without a sparse-vs-softmax timing."""
    group, report = bench_group((Path(results_dir) / BENCH_FILE).with_suffix(".json"), BENCH_GROUP)
    times = {r["variant"]: r["ms"] for r in group.get("rows", ())}
    sparse = next((name for name in times if name.startswith(SPARSE_ROW)), None)
    row = {"kind": "speed", "id": "sparse-faster-timing", "source": "fig2", "bench": BENCH_FILE, "paper_k": PAPER_K}
    if sparse is None or SOFTMAX_ROW not in times:
        return row | {"sparse": None}
    shape, k = re.search(r"\((.*)\)", group["title"]), re.search(r"k=(\d+)", sparse)
    return row | {"sparse": sparse, "softmax": SOFTMAX_ROW, "torch": TORCH_ROW if TORCH_ROW in times else None, "times": times,
                  "shape": shape.group(1) if shape else group["title"], "load": report.get("load_average", {}).get("start"),
                  "k": int(k.group(1)) if k else None}


def step_claim(results_dir: str | Path) -> dict[str, Any]:
    """The title's "Faster" as the output layer's training step: per group of the :data:`STEP_BENCH_FILES` found
    under ``results_dir``, its task (None: an LM size), N, C, the softmax and sparse (k = 20) heads' ms and the
    sparse head's speed-up; the files' commands, dates and load; ``sizes`` empty without a measurement."""
    row = {"kind": "speed-step", "id": "sparse-faster-output-layer", "source": "fig2", "paper_k": PAPER_K}
    sizes, runs = [], []
    for name in STEP_BENCH_FILES:
        path = Path(results_dir) / name
        if not path.is_file():
            continue
        report = json.loads(path.read_text(encoding="utf-8"))
        runs.append({"file": name, "command": report["command"], "date": report["date"],
                     "load": report.get("load_average", {}).get("start"), "commit": GitState.of_file(report).commit})
        for group in report["groups"]:
            rows = {r["variant"]: r for r in group["rows"]}
            softmax = next((rows[v] for v in STEP_SOFTMAX_ROWS if v in rows), None)
            sparse = next((r for v, r in rows.items() if v.startswith(STEP_SPARSE_ROW)), None)
            size = re.search(r"N=(\d+) C=(\d+)", group["title"])
            if softmax is None or sparse is None or size is None:
                continue
            task = re.match(r"sparse step (\w+) ", group["title"])
            # the fastest call beside the median: on a shared CPU a call of a few ms waits for the core now and then
            fastest = [1e3 * min(r["seconds"]) if r.get("seconds") else None for r in (softmax, sparse)]
            name = STEP_TASK_NAMES.get(task.group(1), task.group(1)) if task else None
            sizes.append({"task": name, "n": int(size.group(1)), "c": int(size.group(2)),
                          "softmax": softmax["ms"], "sparse": sparse["ms"], "speedup": softmax["ms"] / sparse["ms"],
                          "fastest": None if None in fastest else {"softmax": fastest[0], "sparse": fastest[1],
                                                                   "speedup": fastest[0] / fastest[1]}})
    return row | {"sizes": sizes, "runs": runs, "faster": [s for s in sizes if s["speedup"] > 1],
                  "slower": [s for s in sizes if s["speedup"] <= 1]}
