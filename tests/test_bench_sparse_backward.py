"""scripts/bench_cases/sparse_backward.py: the sparse head's rows beside the softmax head and the three-GEMM floor,
and the output layer's step at the paper's sizes; each row's step runs (quick sizes)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts")]

from bench_cases import CASE_MODULES, sparse_backward  # noqa: E402  # scripts/ is importable only after the insert above


def test_rows_targets_and_paper_sizes():
    assert "sparse_backward" in CASE_MODULES
    cases = sparse_backward.cases(quick=False)
    lm = [c for c in cases if c.group.startswith(sparse_backward.GROUP)]
    assert {c.group.split(":")[0] for c in lm} == {f"sparse backward N={n} C={c}" for n in (4096, 8192) for c in (32000, 128000)}
    targets = {c.name: (c.target, c.memory_target) for c in lm if c.target}
    assert targets == {'SparseSoftmaxHead (k=20, chunk_size="auto")': (("<=", 0.5), 1.0)}
    assert all(c.baseline == sparse_backward.BASELINE for c in lm)
    steps = [c for c in cases if c.group.startswith(sparse_backward.STEP_GROUP)]
    assert sorted(int(c.group.split("C=")[1].split(":")[0]) for c in steps[::2]) == [119, 134, 151, 30_522]


def test_every_quick_row_runs():
    for case in sparse_backward.cases(quick=True):
        case.setup()()
