"""init_from=: a new run starts from a finished run's weights (fresh optimiser, step 0); bad paths and shapes are named."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from softmax_zoo import engine

TIED = ["scale=smoke", "loss=sparse_softmax", "loss.k=5", "model.tie_weights=true", "train.save_steps=2"]


def test_new_run_starts_from_the_finished_runs_weights(make_cfg, tmp_path):
    first = make_cfg(*TIED, f"output_dir={tmp_path / 'first'}")
    engine.run(first)
    saved = load_file(str(Path(first.output_dir) / "checkpoint-2" / "model.safetensors"))

    second = make_cfg("scale=smoke", "loss=softmax", "model.tie_weights=true", f"init_from={first.output_dir}",
                      f"output_dir={tmp_path / 'second'}")
    task = engine.build_task(second)
    fresh = {k: v.clone() for k, v in task.model.state_dict().items()}
    read = engine.initialise_from(task.model, second.init_from)
    assert read.endswith("checkpoint-2/model.safetensors")  # the run folder resolves to its newest checkpoint
    state = task.model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in saved.items())
    assert any(not torch.equal(state[k], fresh[k]) for k in saved)  # the weights did change
    assert task.model.head.weight is task.model.class_embed.weight  # still tied after loading

    record = engine.run(second)
    assert record["train_loss"]["step"] == [1, 2]  # a new run from step 0, not a resume
    assert record["config"]["init_from"] == first.output_dir


def test_bad_init_from_is_named(make_cfg, tmp_path):
    with pytest.raises(FileNotFoundError, match="init_from='.*nowhere'"):
        engine.initialise_from(torch.nn.Linear(2, 2), str(tmp_path / "nowhere"))
    first = make_cfg(*TIED, f"output_dir={tmp_path / 'first'}")
    engine.run(first)
    with pytest.raises(ValueError, match="does not fit this model: missing"):
        engine.initialise_from(torch.nn.Linear(2, 2), first.output_dir)
