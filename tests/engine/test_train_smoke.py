"""Smoke runs of the entry point's engine on the generated task: every head, records, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from softmax_zoo import engine, trainer
from softmax_zoo.models.mlp import MLPClassifier
from softmax_zoo.tasks.base import require_prepared

from .test_configs import FIXED_COST, names

RECORD_KEYS = {
    "schema", "experiment", "run_name", "created", "seed", "choices", "config", "git", "data", "metrics", "model",
    "train_loss", "history", "timing", "device", "versions", "command", "task_info", "job", "wandb",
}  # fmt: skip


def record_path(cfg) -> Path:
    return Path(cfg.results_dir) / "runs" / cfg.experiment_name / f"{cfg.run_name}.json"


def check_record(cfg, steps: int) -> dict:
    """The record on disk is complete, matches the config and has finite numbers."""
    record = json.loads(record_path(cfg).read_text())
    assert set(record) == RECORD_KEYS
    assert record["config"]["seed"] == cfg.seed and record["run_name"] == cfg.run_name
    assert record["choices"]["task"] == cfg.task.name and record["choices"]["scale"] == cfg.scale.name
    assert record["train_loss"]["step"] == list(range(1, steps + 1))
    assert all(math.isfinite(x) for x in record["train_loss"]["loss"])
    assert {"val/micro_f1", "val/macro_f1", "test/micro_f1", "test/macro_f1"} <= set(record["metrics"])
    assert all(0.0 <= record["metrics"][k] <= 1.0 for k in record["metrics"] if k.endswith("f1"))
    assert record["timing"]["train_examples_per_s"] > 0
    assert record["timing"]["eval"]["test"]["examples_per_s"] > 0
    assert len(record["data"]["sha256"]["generated"]) == 64
    assert record["versions"]["torch"] == torch.__version__
    device = "cuda" if torch.cuda.is_available() else "cpu"  # the Trainer takes the GPU when there is one
    assert record["device"]["type"] == device and record["device"]["world_size"] == 1
    cpu = record["device"]["cpu"]
    assert cpu["model"] and cpu["capability"] in {"DEFAULT", "AVX2", "AVX512", "ZVECTOR", "VSX", "SVE256"}
    assert record["device"]["precision"] == "fp32"  # scale=smoke
    return record


HEADS = [[f"loss={name}"] for name in names("loss") if name != "sampled_softmax"]
HEADS += [["loss=sampled_softmax", f"loss/sampler={s}"] for s in names("loss/sampler")]


@pytest.mark.parametrize("overrides", HEADS, ids=lambda o: "-".join(x.split("=")[1] for x in o))
def test_every_head_trains_two_steps_and_writes_a_record(make_cfg, overrides):
    if overrides == ["loss=adaptive_softmax"]:
        overrides = [*overrides, f"loss.cutoffs_search.cost={FIXED_COST}"]
    cfg = make_cfg("task=synthetic", "scale=smoke", *overrides)
    record = engine.run(cfg)
    assert record == check_record(cfg, steps=2)
    assert record["config"]["loss"]["_target_"] == cfg.loss._target_
    assert list(record["model"]["heads"]) == ["head"] and record["model"]["num_parameters"] > 0
    assert record["model"]["heads"]["head"].startswith(cfg.loss._target_.rsplit(".", 1)[1])


def test_a_run_that_saves_nothing_leaves_no_checkpoint_folder(make_cfg, tmp_path):
    cfg = make_cfg("scale=smoke", f"output_dir={tmp_path / 'ckpt' / 'default' / 'run'}")
    assert cfg.train.save_steps == 0
    engine.run(cfg)
    assert not (tmp_path / "ckpt").exists() and record_path(cfg).is_file()
    kept = tmp_path / "kept"
    kept.mkdir()
    engine.run(make_cfg("scale=smoke", f"output_dir={kept / 'run'}", "overwrite=true"))
    assert kept.is_dir() and not (kept / "run").exists()  # folders that were there before stay


def test_grad_accum_and_epoch_eval_history(make_cfg):
    cfg = make_cfg("scale=smoke", "train.grad_accum=2", "train.max_steps=-1", "train.epochs=2", "train.eval_each_epoch=true")
    record = engine.run(cfg)
    steps = 2 * 64 // (8 * 2)  # 2 epochs of 64 examples, 8 per micro-batch, 2 micro-batches per step
    check_record(cfg, steps=steps)
    assert [h["step"] for h in record["history"]] == [steps // 2, steps]
    assert all("val/micro_f1" in h for h in record["history"])


def test_same_seed_same_record_metrics(make_cfg):
    a = engine.run(make_cfg("scale=smoke", "train.max_steps=3", "run_name=a"))
    b = engine.run(make_cfg("scale=smoke", "train.max_steps=3", "run_name=b"))
    c = engine.run(make_cfg("scale=smoke", "train.max_steps=3", "run_name=c", "seed=1"))
    assert a["metrics"] == b["metrics"] and a["train_loss"] == b["train_loss"]
    assert a["train_loss"] != c["train_loss"]


def test_nan_loss_stops_with_the_step_and_keeps_the_last_good_checkpoint(make_cfg, monkeypatch):
    forward = MLPClassifier.forward
    calls = {"n": 0}

    def nan_from_third_step(self, features, labels=None):
        out = forward(self, features, labels)
        calls["n"] += 1
        if labels is not None and calls["n"] >= 3:
            out["loss"] = out["loss"] * float("nan")
        return out

    monkeypatch.setattr(MLPClassifier, "forward", nan_from_third_step)
    cfg = make_cfg("scale=smoke", "train.max_steps=6", "train.save_steps=2")
    with pytest.raises(trainer.NonFiniteLossError, match=r"training loss nan at optimiser step 3.*checkpoint-2"):
        engine.run(cfg)
    ckpts = sorted(p.name for p in Path(cfg.output_dir).glob("checkpoint-*"))
    assert ckpts == ["checkpoint-2"]
    assert not record_path(cfg).exists()


def test_k_larger_than_the_classes_fails_before_training(make_cfg):
    cfg = make_cfg("scale=smoke", "loss=sparse_softmax", "loss.k=51")
    with pytest.raises(ValueError, match="51"):
        engine.run(cfg)
    assert not Path(cfg.output_dir).exists() and not record_path(cfg).exists()


def test_missing_prepared_data_names_the_make_command(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"make data TASK=clinc_oos"):
        require_prepared(tmp_path / "nowhere", "clinc_oos")
    (tmp_path / "meta.json").write_text("{}")
    assert require_prepared(tmp_path, "clinc_oos") == tmp_path


def test_logger_wandb_disabled_runs_and_records(make_cfg):
    cfg = make_cfg("scale=smoke", "logger=wandb", "logger.mode=disabled")
    check_record(cfg, steps=2) if engine.run(cfg) else pytest.fail("no record")


def test_logger_wandb_offline_writes_a_local_run(make_cfg, tmp_path, monkeypatch):
    monkeypatch.delenv("WANDB_MODE")
    cfg = make_cfg("scale=smoke", "logger=wandb", "logger.mode=offline", f"logger.dir={tmp_path / 'wb'}")
    engine.run(cfg)
    runs = list((tmp_path / "wb" / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(runs) == 1
    data = runs[0].read_bytes()  # protobuf records; keys and names are stored as plain strings
    for logged in (b"builder", b"train/loss", b"test/micro_f1", cfg.run_name.encode()):
        assert logged in data, logged  # resolved config, per-step loss, final metrics, run name


@pytest.mark.slow
def test_torchrun_two_cpu_processes_write_one_record(tmp_path):
    """DDP on CPU (gloo) through the real entry point; ~30 s, hence slow."""
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={port}",
        "-m", "softmax_zoo.train", "scale=smoke", "train.save_steps=2",
        f"results_dir={tmp_path / 'results'}", f"output_dir={tmp_path / 'ckpt'}", f"hydra.run.dir={tmp_path / 'hydra'}",
    ]  # fmt: skip
    subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=300)
    records = list((tmp_path / "results" / "runs").rglob("*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["device"]["world_size"] == 2 and record["train_loss"]["step"] == [1, 2]
    assert record["command"].startswith("python -m softmax_zoo.train scale=smoke")
    assert (tmp_path / "ckpt" / "checkpoint-2" / "model.safetensors").is_file()
    states = sorted(p.name for p in (tmp_path / "ckpt" / "checkpoint-2").glob("resume_state_*.pt"))
    assert states == ["resume_state_0.pt", "resume_state_1.pt"]  # each process carries its own streams


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_mixed_precision_run_and_resume(make_cfg, tmp_path):
    """precision=auto on a GPU: bf16 (or fp16 on an older GPU), and checkpoints resume there too."""
    common = ["scale=smoke", "train.precision=auto", "train.max_steps=4", "train.save_steps=2", "loss=sparse_softmax", "loss.k=5"]
    straight = engine.run(make_cfg(*common, f"output_dir={tmp_path / 'a'}"))
    assert straight["device"]["type"] == "cuda"
    assert straight["device"]["precision"] == ("bf16" if torch.cuda.is_bf16_supported() else "fp16")
    check = make_cfg(*common, f"output_dir={tmp_path / 'a'}", "resume=true", "train.max_steps=4", f"results_dir={tmp_path / 'r2'}")
    resumed = engine.run(check)
    assert resumed["timing"]["resumed_from_step"] == 4  # nothing left to do: the same final state
    assert resumed["metrics"] == straight["metrics"]
