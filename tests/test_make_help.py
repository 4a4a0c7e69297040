"""`make help` lists the targets and the variables the reproduce targets take."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_make_help_lists_the_reproduce_targets_variables():
    done = subprocess.run(["make", "--no-print-directory", "-s", "help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    variables = done.stdout.split("variables (make <target> NAME=value):\n", 1)[1]
    for name in ("SCALE=", "SEEDS=", "FIG2_TASKS=", "FIG2_SEEDS=", "LM_SCALE=", "LM_SEEDS=", "REGIME_SEEDS=", "TASK=", "SWEEP="):
        assert f"  {name}" in variables or f" {name}" in variables, name
