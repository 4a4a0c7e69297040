"""The losses benchmark's sweep line: the fastest row of a sweep, and the baseline's time ratio to it per round."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts")]

import bench_losses  # noqa: E402  # scripts/ is importable only after the sys.path insert above
from bench_cases import Case  # noqa: E402


def _case(name: str, sweep: str | None = None) -> Case:
    return Case(group="g", name=name, setup=lambda: None, baseline="ours", sweep=sweep)


def test_sweep_line_names_the_fastest_row_and_the_ratio_per_round():
    rows = [_case("ours"), _case("torch 512", "chunk"), _case("torch 1024", "chunk")]
    times = {"ours": [1.0, 1.2, 0.9], "torch 512": [1.1, 1.1, 1.1], "torch 1024": [1.0, 1.0, 1.0]}
    (line,) = bench_losses.sweep_lines(rows, times, {"ours": 100.0, "torch 512": 150.0, "torch 1024": 200.0})
    # medians: ours 1.0, torch 1024 1.0 (the fastest); per round 1.0/1.0, 1.2/1.0, 0.9/1.0
    assert line == "- fastest chunk: torch 1024, 1000.0 ms, 200 MiB; ours: 1.00× its time (per round 0.90–1.20×), 0.50× its memory"


def test_one_round_gives_no_range():
    rows = [_case("ours"), _case("torch", "chunk")]
    (line,) = bench_losses.sweep_lines(rows, {"ours": [2.0], "torch": [1.0]}, {})
    assert line == "- fastest chunk: torch, 1000.0 ms; ours: 2.00× its time"
