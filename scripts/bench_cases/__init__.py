"""Benchmark cases for scripts/bench_losses.py, one module per family of variants."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

# Modules whose ``cases(quick: bool) -> list[Case]`` make up the benchmark, in report order.
CASE_MODULES = ("logit_losses", "chunked_heads", "torch_lce", "sparse_backward", "linear_kd", "adaptive", "sampled", "hf_lm")


@dataclass
class Case:
    """One benchmark row.

    Args:
        group: the table it belongs to, with the sizes, e.g. "cross-entropy (N=4096, C=32000)".
        name: the row, e.g. "sparse_softmax_cross_entropy (k=10)".
        setup: builds the inputs (untimed) and returns the step to time (one forward+backward).
        baseline: name of the row in the same group that ratios are taken against.
        target: ("<=", 0.8) = time ≤ 0.8× baseline; (">=", 20) = at least 20× faster than baseline.
        repeats: timed calls per row.
        memory_target: 0.5 = peak memory ≤ 0.5× the baseline row's.
        sweep: rows of a group with the same sweep name are settings of one tunable thing (e.g.
            torch's batch_chunk_size); the report names the fastest and the baseline's ratios to it.
    """

    group: str
    name: str
    setup: Callable[[], Callable[[], object]]
    baseline: str | None = None
    target: tuple[str, float] | None = None
    repeats: int = field(default=5)
    memory_target: float | None = None
    sweep: str | None = None
