"""The Makefile leaves the hub reachable: its targets (the paper reproductions among them) run with the
hub client online unless the user asks for offline mode; the test targets set offline mode themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
CODE = "import huggingface_hub.constants as c; print('hub offline:', c.HF_HUB_OFFLINE)"


def under_make(recipe: str, **env: str) -> str:
    """Output of ``recipe`` run as a recipe of this Makefile (its exports applied), in ``os.environ``
    without the offline variables plus ``env``."""
    base = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "MAKEFLAGS")}
    done = subprocess.run(["make", "--no-print-directory", "-s", "--eval", f"probe: ; @{recipe}", "probe"], cwd=ROOT,
                          env={**base, **env}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_make_targets_reach_the_hub_unless_asked():
    assert under_make(f'{sys.executable} -c "{CODE}"') == "hub offline: False"
    assert under_make(f'{sys.executable} -c "{CODE}"', HF_HUB_OFFLINE="1") == "hub offline: True"
    assert under_make('echo "$${HF_DATASETS_OFFLINE-unset}"') == "unset"


def test_test_targets_set_offline_mode_themselves():
    assert under_make("echo $(TEST_ENV)") == "HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1"
    makefile = (ROOT / "Makefile").read_text()
    assert "\t$(TEST_ENV) $(BIN)/python -m pytest -q\n" in makefile and '\t$(TEST_ENV) $(BIN)/python -m pytest -q -m ""\n' in makefile
