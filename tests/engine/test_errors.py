"""What a new user sees when a run is refused: the message alone, naming the setting at fault."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import safetensors.torch
import torch

from softmax_zoo import config, engine
from softmax_zoo.config import unknown_key_hint


def train(tmp_path: Path, *overrides: str, **env: str) -> subprocess.CompletedProcess:
    """``python -m softmax_zoo.train scale=smoke <overrides>`` with every output under tmp_path."""
    cmd = [sys.executable, "-m", "softmax_zoo.train", "scale=smoke", *overrides, f"results_dir={tmp_path / 'r'}",
           f"output_dir={tmp_path / 'c'}", f"hydra.run.dir={tmp_path / 'h'}"]  # fmt: skip
    inherited = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    full = {**inherited, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "", **env}
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=300)


def test_a_refused_setting_prints_its_message_alone_and_the_trace_on_request(tmp_path):
    short = train(tmp_path, "loss=sparse_softmax", "loss.k=0")
    assert short.returncode == 1
    assert "ValueError: k must be >= 1, got 0" in short.stderr and "Traceback" not in short.stderr
    assert len(short.stderr.strip().splitlines()) <= 6, short.stderr
    log = tmp_path / "h" / "train.log"
    assert f"(the traceback is in {log})" in short.stderr
    assert "Traceback" in log.read_text() and "k must be >= 1, got 0" in log.read_text()

    full = train(tmp_path, "loss=sparse_softmax", "loss.k=0", HYDRA_FULL_ERROR="1")
    assert full.returncode == 1 and "Traceback" in full.stderr and "k must be >= 1, got 0" in full.stderr


@pytest.mark.parametrize("seed", ["abc", "1.5", "true", "-1"])
def test_a_seed_that_is_not_an_integer_is_named(make_cfg, seed):
    with pytest.raises(ValueError, match=r"seed must be an integer >= 0 \(e\.g\. seed=0\), got seed="):
        engine.run(make_cfg("scale=smoke", f"seed={seed}"))


def test_a_truncated_init_from_file_is_named(make_cfg, tmp_path):
    cfg = make_cfg("scale=smoke")
    task = engine.build_task(cfg)
    weights = tmp_path / "model.safetensors"
    safetensors.torch.save_model(task.model, str(weights))
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ValueError, match=rf"init_from='{tmp_path}': {weights} does not load"):
        engine.initialise_from(task.model, str(tmp_path))
    assert torch.isfinite(next(task.model.parameters())).all()


def test_sparse_softmax_takes_label_smoothing_without_a_plus():
    assert config.compose(["loss=sparse_softmax", "loss.label_smoothing=0.1"]).loss.label_smoothing == 0.1


def test_a_head_argument_missing_from_its_config_gets_the_plus_hint(tmp_path):
    configs = tmp_path / "configs"
    shutil.copytree(config.CONFIG_DIR, configs)
    sparse = configs / "loss" / "sparse_softmax.yaml"
    sparse.write_text(sparse.read_text().replace("label_smoothing: 0.0\n", ""))
    hint = unknown_key_hint(["loss=sparse_softmax", "loss.label_smoothing=0.1"], config_dir=configs)
    assert hint == (
        "'loss.label_smoothing' is not in the composed config, but SparseSoftmaxHead takes label_smoothing: "
        "add it with +loss.label_smoothing=0.1"
    )
    hint = unknown_key_hint(["loss=sparse_softmax", "loss.kk=5"])
    assert hint.startswith("loss.kk: unknown option of SparseSoftmaxHead 'kk' (did you mean 'k'?); valid: bias,") and " k," in hint
