"""resume=true continues an interrupted run to the same result; tied weights survive checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import TrainerCallback

from softmax_zoo import engine, trainer


class CrashAfterSave(TrainerCallback):
    """Simulate a killed job: raise right after the checkpoint of step ``step`` is written."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt(f"simulated interruption after step {self.step}")


@pytest.mark.parametrize(
    "overrides",
    [["loss=softmax"], ["loss=sparse_softmax", "loss.k=5", "model.tie_weights=true"]],
    ids=["softmax", "sparse-tied"],
)
def test_resume_equals_uninterrupted(make_cfg, tmp_path, overrides):
    common = ["scale=smoke", "train.max_steps=4", "train.save_steps=2", *overrides]
    straight = engine.run(make_cfg(*common, f"output_dir={tmp_path / 'a'}", f"results_dir={tmp_path / 'ra'}"))

    cfg = make_cfg(*common, f"output_dir={tmp_path / 'b'}", f"results_dir={tmp_path / 'rb'}")
    with pytest.raises(KeyboardInterrupt):
        engine.run(cfg, callbacks=[CrashAfterSave(2)])
    assert sorted(p.name for p in Path(cfg.output_dir).glob("checkpoint-*")) == ["checkpoint-2"]
    assert not (tmp_path / "rb").exists()  # a crashed run leaves no record

    resumed = engine.run(make_cfg(*common, f"output_dir={tmp_path / 'b'}", f"results_dir={tmp_path / 'rb'}", "resume=true"))
    assert resumed["timing"]["resumed_from_step"] == 2
    assert resumed["train_loss"] == straight["train_loss"]
    assert resumed["metrics"] == straight["metrics"]
    assert len(straight["train_loss"]["step"]) == 4


def test_tied_weight_is_saved_once_and_loaded_tied(make_cfg, tmp_path):
    cfg = make_cfg("scale=smoke", "loss=sparse_softmax", "loss.k=5", "model.tie_weights=true", "train.save_steps=2")
    engine.run(cfg)
    with safe_open(str(Path(cfg.output_dir) / "checkpoint-2" / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
        saved = f.get_tensor("class_embed.weight" if "class_embed.weight" in keys else "head.weight")
    assert len({"class_embed.weight", "head.weight"} & keys) == 1

    task = engine.build_task(cfg)
    zoo_trainer = trainer.ZooTrainer(model=task.model, args=trainer.training_arguments(cfg))
    zoo_trainer._load_from_checkpoint(str(Path(cfg.output_dir) / "checkpoint-2"))
    assert task.model.head.weight is task.model.class_embed.weight
    torch.testing.assert_close(task.model.head.weight.detach(), saved)


def test_resume_without_a_checkpoint_starts_fresh(make_cfg):
    record = engine.run(make_cfg("scale=smoke", "resume=true"))
    assert record["timing"]["resumed_from_step"] == 0 and record["train_loss"]["step"] == [1, 2]
