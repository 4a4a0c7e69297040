"""`make gpu-check` without CUDA: one line saying so, a non-zero exit, no report written."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is visible: the check would run for real")
def test_gpu_check_fails_cleanly_without_cuda(tmp_path):
    out_file = tmp_path / "gpu_check.md"
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--out", str(out_file)],
        capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120,
    )
    assert out.returncode == 1
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert len(lines) == 1 and "no CUDA GPU" in lines[0], lines
    assert not out_file.exists()


def test_gpu_check_target_states_its_budget():
    text = (ROOT / "make" / "gpu.mk").read_text()
    assert "gpu-check:" in text and "8 min" in text
    assert "BUDGET_S = 480" in (ROOT / "scripts" / "gpu_check.py").read_text()
