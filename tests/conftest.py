"""Shared fixtures: a seeded generator, the devices to run the device-parametrised tests on, a generated LM corpus,
a CPU without a bfloat16 LSTM, and :func:`run_readme_recipe` (a README "Extend it" recipe run as written)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.utils._pytree as pytree

from softmax_zoo.data.prepare import generated

# "cuda" runs only where a GPU is present; the marker lets `-m "not cuda"` deselect it.
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")],
    ),
]


@pytest.fixture
def gen() -> torch.Generator:
    """A CPU generator seeded the same way in every test."""
    return torch.Generator().manual_seed(0)


@pytest.fixture(params=DEVICES)
def device(request) -> torch.device:
    """Each test using this fixture runs on the CPU and, when available, on CUDA."""
    return torch.device(request.param)


@pytest.fixture(scope="session")
def lm_corpus(tmp_path_factory) -> Path:
    """A generated LM task folder (:func:`softmax_zoo.data.prepare.generated.lm_corpus`): {train,validation,test}.txt,
    vocab.txt, meta.json."""
    return generated.lm_corpus(tmp_path_factory.mktemp("lmdata"))


ROOT = Path(__file__).resolve().parents[1]


def readme_recipe(first_line: str) -> str:
    """The bash block of README.md's "Extend it" section that starts with ``first_line`` (its comment)."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Extend it\n", 1)[1].split("\n## ", 1)[0]
    found = [block for block in re.findall(r"```bash\n(.*?)```", section, re.S) if block.startswith(first_line)]
    assert len(found) == 1, f"README's Extend it section has {len(found)} bash blocks starting {first_line!r}"
    return found[0]


@pytest.fixture
def run_readme_recipe():
    """run(first_line, folder) -> the finished process: the README recipe run by bash in ``folder``, as
    written, with ``REPO`` this checkout, this interpreter first on PATH and this checkout's src on
    PYTHONPATH (a clone with an editable install has both). Fails with the output's tail if a command fails."""

    def run(first_line: str, folder: Path, timeout: int = 600) -> subprocess.CompletedProcess:
        env = {**os.environ, "REPO": str(ROOT), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "WANDB_MODE": "disabled",
               "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
        for name in ("SOFTMAX_ZOO_DATA", "SOFTMAX_ZOO_VARIANTS", "SOFTMAX_ZOO_PREPARERS"):
            env.pop(name, None)
        script = "set -eo pipefail\n" + readme_recipe(first_line)
        done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return done

    return run


# oneDNN's error where a CPU has no bfloat16 LSTM (no AVX512-BF16/AMX, e.g. an AVX2-only CPU).
NO_BF16_LSTM = "could not create a primitive descriptor for the LSTM forward propagation primitive"


@pytest.fixture
def cpu_without_bf16_lstm(monkeypatch):
    """The CPU LSTM raises oneDNN's RuntimeError when it would run in bfloat16 (under CPU bf16 autocast,
    or on a bfloat16 tensor), as on a CPU without AVX512-BF16 or AMX; float32 LSTMs run as usual."""
    real = torch._VF.lstm

    def lstm(*args, **kwargs):
        autocast = torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
        tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if any(t.device.type == "cpu" for t in tensors) and (autocast or any(t.dtype == torch.bfloat16 for t in tensors)):
            raise RuntimeError(NO_BF16_LSTM)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch._VF, "lstm", lstm)
