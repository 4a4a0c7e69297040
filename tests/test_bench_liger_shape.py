"""The GPU benchmark's torch F.linear_cross_entropy rows at tiny sizes on a CPU, and --liger-shape's clean skip without CUDA."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts")]

from bench_cases import gpu_linear_ce  # noqa: E402  # scripts/ is importable only after the sys.path insert above

pytestmark = pytest.mark.skipif(not hasattr(F, "linear_cross_entropy"), reason="torch < 2.13 has no F.linear_cross_entropy")


def test_torch_rows_compute_the_baseline_loss_on_cpu():
    rows = gpu_linear_ce.run(torch.float32, torch.device("cpu"), repeats=1, size=(64, 32, 500), with_torch_lce=True)
    timed = {r.name: r for r in rows if r.skipped is None}
    torch_rows = [n for n in timed if n.startswith("F.linear_cross_entropy")]
    assert len(torch_rows) == 4  # options=None, auto, and the CPU sweep's two chunk sizes
    for name in torch_rows:
        assert timed[name].loss == pytest.approx(timed[gpu_linear_ce.BASELINE].loss, rel=1e-5), name


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the skip without CUDA")
def test_liger_shape_skips_without_cuda(tmp_path):
    out = tmp_path / "page.md"
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_cases" / "gpu_linear_ce.py"), "--liger-shape", "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert run.returncode == 0 and "CUDA only" in run.stdout, run.stdout + run.stderr
    assert not out.exists()
