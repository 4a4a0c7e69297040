"""Side-by-side timing: several steps interleaved in one process, so their ratio shares the machine's load.

Used by the losses benchmark (``scripts/bench_losses.py``) and the LM head-speed measurement
(:mod:`softmax_zoo.studies.lm_speed`). Separate runs made at different times see different loads
(other processes on the cores, thermal state, the allocator's cache), so a ratio of their
throughputs mixes the load change into the speed-up; interleaving the rows removes most of it.
"""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import time
from collections.abc import Callable

import torch


def sync() -> None:
    """Wait for queued CUDA work (a no-op without CUDA), so a timer sees the step's whole cost."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_interleaved(steps: dict[str, Callable[[], object]], repeats: int, warmup: int) -> dict[str, list[float]]:
    """Seconds of each call of each step, the calls interleaved across the steps.

    ``warmup`` whole rounds run first, untimed, in the timed loop's pattern, so every step's
    buffers (and the allocator's cache of the others') are warm before the first timed call; the
    timed rounds rotate the order, so no step is always the one following a given other step.

    Args:
        steps: name -> a callable doing one step (its setup already done).
        repeats: timed rounds (>= 1); each step runs once per round.
        warmup: untimed rounds before them (>= 0).

    Returns:
        name -> ``repeats`` durations in seconds, in round order.
    """
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    items = list(steps.items())
    for _ in range(warmup):
        for _, step in items:
            step()
    times: dict[str, list[float]] = {name: [] for name, _ in items}
    for r in range(repeats):
        for name, step in items[r % len(items) :] + items[: r % len(items)]:
            sync()
            t0 = time.perf_counter()
            step()
            sync()
            times[name].append(time.perf_counter() - t0)
    return times


def medians(times: dict[str, list[float]]) -> dict[str, float]:
    """name -> median of its durations."""
    return {name: statistics.median(ts) for name, ts in times.items()}


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, e.g. ``"1.02 0.87 0.65"`` (other processes on the cores)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def utc_now() -> str:
    """``YYYY-MM-DD HH:MM UTC``."""
    return f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC"


def machine() -> str:
    """The device, cores, torch threads, torch and Python versions and the platform, in one line."""
    dev = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({platform.processor() or platform.machine()})"
    return (
        f"{dev}, {os.cpu_count()} cores, torch threads {torch.get_num_threads()}; "
        f"torch {torch.__version__}, Python {platform.python_version()}, {platform.platform()}"
    )
