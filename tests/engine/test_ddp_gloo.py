"""A reproduction's experiment on two processes (torchrun, gloo on the CPU): lm1b_sampled_uniform at
smoke scale trains 3 optimiser steps with DDP, rank 0 writes the record, and the ranks' samplers
draw with seed + rank, hence different negatives."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from softmax_zoo.data.prepare.generated import lm_corpus

ROOT = Path(__file__).resolve().parents[2]
WORKER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import torch, torch.distributed as dist
    from transformers import TrainerCallback
    from softmax_zoo import config, engine
    from softmax_zoo.losses import SampledSoftmaxHead

    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    seen = {}

    class TrainedSampler(TrainerCallback):  # the trained head's sampler: its seed and 16 draws for fixed rows
        def on_train_end(self, args, state, control, model=None, **kwargs):
            (head,) = [m for m in model.modules() if isinstance(m, SampledSoftmaxHead)]
            hidden = torch.randn(4, head.in_features, generator=torch.Generator().manual_seed(0))
            seen["seed"] = head.sampler.generator.initial_seed()
            seen["ids"] = head.sampler.sample(hidden, head.weight.detach(), 16)[0].tolist()

    cfg = config.compose(["experiment=lm1b_sampled_uniform", "scale=smoke", "train.max_steps=3", f"task.data_dir={data}",
                          f"results_dir={out / 'results'}", f"output_dir={out / 'ckpt'}", "allow_dirty=true"])
    record = engine.run(cfg, callbacks=[TrainedSampler()])
    ranks = [None, None]
    dist.all_gather_object(ranks, seen)
    if dist.get_rank() == 0:
        (out / "rank0.json").write_text(json.dumps({"record": record, "ranks": ranks, "seed": cfg.seed, "world": dist.get_world_size()}))
""")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two processes each import torch, transformers and hydra, then train: ~1 minute
def test_two_process_gloo_run_of_a_reproduction_experiment(tmp_path):
    data = lm_corpus(tmp_path / "data")
    (tmp_path / "worker.py").write_text(WORKER)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={free_port()}",
           str(tmp_path / "worker.py"), str(data), str(tmp_path)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    out = json.loads((tmp_path / "rank0.json").read_text())
    assert out["world"] == 2 and out["record"]["device"]["world_size"] == 2
    assert out["record"]["timing"]["global_steps"] == 3 and out["record"]["metrics"]
    assert [r["seed"] for r in out["ranks"]] == [out["seed"], out["seed"] + 1]  # seed + rank
    assert out["ranks"][0]["ids"] != out["ranks"][1]["ids"]  # the ranks draw different negatives
