"""A Hydra multirun through the real entry point: one record, checkpoint folder and wandb run per job."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .wandb_offline import run_summary


@pytest.mark.slow
def test_two_by_two_multirun_gives_four_runs(tmp_path):
    """loss.k x seed at smoke scale, launched from tmp_path: records land in scratch/, not results/."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "", "WANDB_SILENT": "true"}
    env.pop("WANDB_MODE", None)  # the config's logger.mode=offline decides
    cmd = [
        sys.executable, "-m", "softmax_zoo.train", "-m", "scale=smoke", "loss=sparse_softmax", "loss.k=3,5", "seed=0,1",
        "train.save_steps=2", "logger=wandb", "logger.mode=offline", "hydra.sweep.dir=sweep",
    ]  # fmt: skip
    done = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]

    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "scratch" / "runs" / "default").glob("*.json"))]
    assert sorted((r["config"]["loss"]["k"], r["seed"]) for r in records) == [(3, 0), (3, 1), (5, 0), (5, 1)]
    for r in records:
        assert r["run_name"] == f"synthetic_mlp_sparse_softmax_smoke_seed{r['seed']}_loss.k={r['config']['loss']['k']}"
        assert r["job"]["mode"] == "MULTIRUN" and r["job"]["sweep_dir"] == str(tmp_path / "sweep")
        assert r["wandb"]["group"] == "sweep" and r["wandb"]["id"]
    checkpoints = sorted(p.parent.name for p in (tmp_path / "checkpoints" / "default").glob("*/checkpoint-2"))
    assert checkpoints == sorted(r["run_name"] for r in records)
    assert not (tmp_path / "results").exists()

    runs = [run_summary(p) for p in (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")]
    assert sorted(r["name"] for r in runs) == sorted(r["run_name"] for r in records)
    assert {r["group"] for r in runs} == {"sweep"}
    for run in runs:
        assert set(run["tags"]) == {"synthetic", "mlp", "sparse_softmax", "smoke"} and run["job_type"] == "train"
        assert run["config"]["loss"]["k"] in (3, 5) and run["config"]["seed"] in (0, 1)
        assert "learning_rate" in run["config"]["trainer_args"] and "learning_rate" not in run["config"]
        assert 0.0 <= run["summary"]["test/micro_f1"] <= 1.0
    job_logs = sorted((tmp_path / "sweep").glob("*/train.log"))
    assert len(job_logs) == 4 and all("step 2/2: loss=" in p.read_text() and "record " in p.read_text() for p in job_logs)


@pytest.mark.slow
def test_the_sweep_page_of_a_multirun_counts_each_job_once(tmp_path):
    """A 2-job multirun launched in tmp_path: its sweep page, from a relative and an absolute folder, has n=1 per k."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "", "WANDB_MODE": "disabled"}
    train = [sys.executable, "-m", "softmax_zoo.train", "-m", "scale=smoke", "loss=sparse_softmax", "loss.k=3,5",
             "hydra.sweep.dir=multirun/day/time"]
    done = subprocess.run(train, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for folder in ("multirun/day/time", str(tmp_path / "multirun" / "day" / "time")):
        page = subprocess.run([sys.executable, "-m", "softmax_zoo.reports", "sweep", folder, f"out={tmp_path / 'out'}"],
                              env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert page.returncode == 0, page.stderr[-3000:]
        assert "from 2 run records" in page.stdout
        assert "\n| 3 | 1 |" in page.stdout and "\n| 5 | 1 |" in page.stdout
