"""``torchrun --nproc_per_node 2 -m softmax_zoo.train ... train.vocab_parallel=true``: the head split over
2 processes trains exactly as one process with the same global batch (the training-loss curve and
the evaluation), for the softmax, a sparse and a sampled head."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from softmax_zoo import engine

HEADS = {
    "softmax": ["loss=softmax"],
    "sparse": ["loss=sparse_softmax", "loss.k=5"],
    "sampled": ["loss=sampled_softmax", "loss/sampler=unigram"],
}


def _common(lm_corpus: Path, head: list[str]) -> list[str]:
    return ["task=lm1b", "model=transformer_lm", "scale=smoke", f"task.data_dir={lm_corpus}", "train.max_steps=5",
            "train.save_steps=0", *head]


@pytest.mark.slow
@pytest.mark.parametrize("head", HEADS)
def test_two_ranks_train_as_one_process(make_cfg, tmp_path, lm_corpus, head):
    one = engine.run(make_cfg(*_common(lm_corpus, HEADS[head]), f"results_dir={tmp_path / 'one'}"))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               "-m", "softmax_zoo.train", *_common(lm_corpus, HEADS[head]), "train.vocab_parallel=true",
               f"results_dir={tmp_path / 'two'}", f"output_dir={tmp_path / 'ckpt2'}", f"hydra.run.dir={tmp_path / 'hydra'}"]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-12000:]}"
    [path] = (tmp_path / "two").rglob("*.json")  # rank 0's record only
    two = json.loads(path.read_text())
    assert two["device"]["vocab_parallel_ranks"] == 2
    assert two["train_loss"]["step"] == one["train_loss"]["step"] == [1, 2, 3, 4, 5]
    assert two["train_loss"]["loss"] == pytest.approx(one["train_loss"]["loss"], rel=1e-5)
    for key in ("val/loss", "test/loss"):  # a sparse head's may be "inf" (a target outside its top-k)
        expected = one["metrics"][key]
        assert two["metrics"][key] == (expected if isinstance(expected, str) else pytest.approx(expected, rel=1e-5))


def test_refuses_checkpoints_and_a_single_process(make_cfg, lm_corpus, monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match="needs several processes: torchrun"):
        engine.run(make_cfg(*_common(lm_corpus, HEADS["softmax"]), "train.vocab_parallel=true"))
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="set train.save_steps=0 train.save_minutes=0, got train.save_steps=3"):
        engine.run(make_cfg(*_common(lm_corpus, HEADS["softmax"]), "train.vocab_parallel=true", "train.save_steps=3"))
