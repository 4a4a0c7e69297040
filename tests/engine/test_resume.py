"""resume=true continues an interrupted run to the same step losses and metrics (synthetic, LM, classification and
seq2seq tasks), its record counts the whole run; tied weights survive checkpoints."""

from __future__ import annotations

import logging
import random
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import TrainerCallback

from softmax_zoo import engine, trainer
from softmax_zoo.data.prepare.generated import classification_task, questions, write_pairs
from softmax_zoo.data.seq2seq import UniLMTrainCollator


class CrashAfterSave(TrainerCallback):
    """Simulate a killed job: raise right after the checkpoint of step ``step`` is written."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt(f"simulated interruption after step {self.step}")


def interrupted_and_resumed(make_cfg, tmp_path, *common: str, crash_at: int = 2) -> tuple[dict, dict]:
    """The records of an uninterrupted run of ``common`` and of the same run killed after step ``crash_at``'s checkpoint, then resumed."""
    straight = engine.run(make_cfg(*common, f"output_dir={tmp_path / 'a'}", f"results_dir={tmp_path / 'ra'}"))
    cfg = make_cfg(*common, f"output_dir={tmp_path / 'b'}", f"results_dir={tmp_path / 'rb'}")
    with pytest.raises(KeyboardInterrupt):
        engine.run(cfg, callbacks=[CrashAfterSave(crash_at)])
    assert sorted(p.name for p in Path(cfg.output_dir).glob("checkpoint-*")) == [f"checkpoint-{crash_at}"]
    assert not (tmp_path / "rb").exists()  # a crashed run leaves no record
    resumed = engine.run(make_cfg(*common, f"output_dir={tmp_path / 'b'}", f"results_dir={tmp_path / 'rb'}", "resume=true"))
    return straight, resumed


@pytest.mark.parametrize(
    "overrides",
    [["loss=softmax"], ["loss=sparse_softmax", "loss.k=5", "model.tie_weights=true"]],
    ids=["softmax", "sparse-tied"],
)
def test_resume_equals_uninterrupted(make_cfg, tmp_path, overrides):
    straight, resumed = interrupted_and_resumed(make_cfg, tmp_path, "scale=smoke", "train.max_steps=4", "train.save_steps=2", *overrides)
    assert resumed["timing"]["resumed_from_step"] == 2
    assert resumed["train_loss"] == straight["train_loss"]
    assert resumed["metrics"] == straight["metrics"]
    assert len(straight["train_loss"]["step"]) == 4


# The LM carries each training stream's context from one step to the next (an LSTM's (h, c), a
# transformer's previous window): the checkpoint keeps it, or the first resumed step reads from a zero state.
LM_RUNS = {
    "lstm-kernel-sampler-dropout": ["loss=sampled_softmax", "loss/sampler=quadratic", "loss.num_samples=8", "model.dropout=0.3"],
    "transformer": ["model=transformer_lm"],
}


@pytest.mark.parametrize("overrides", list(LM_RUNS.values()), ids=list(LM_RUNS))
def test_lm_resume_equals_uninterrupted(make_cfg, tmp_path, lm_corpus, overrides):
    common = ["task=lm1b", "scale=smoke", f"task.data_dir={lm_corpus}", "train.max_steps=6", "train.save_steps=3", *overrides]
    straight, resumed = interrupted_and_resumed(make_cfg, tmp_path, *common, crash_at=3)
    assert resumed["train_loss"] == straight["train_loss"] and len(straight["train_loss"]["step"]) == 6
    timed = {"train/tokens_per_second"}  # the same tokens over other seconds
    resumed_metrics, straight_metrics = ({k: v for k, v in r["metrics"].items() if k not in timed} for r in (resumed, straight))
    assert resumed_metrics == straight_metrics
    assert resumed["metrics"]["train/tokens"] == straight["metrics"]["train/tokens"] > 0  # the whole run's tokens


def test_classification_resume_with_dropout_equals_uninterrupted(make_cfg, tmp_path):
    data = classification_task(tmp_path / "data", "clinc_oos")
    common = ["task=clinc_oos", "model=tiny_bert", "model.dropout=0.3", "scale=smoke", f"task.data_dir={data}",
              "train.max_steps=4", "train.save_steps=2"]
    straight, resumed = interrupted_and_resumed(make_cfg, tmp_path, *common)
    assert resumed["train_loss"] == straight["train_loss"] and resumed["metrics"] == straight["metrics"]


def test_seq2seq_resume_with_masking_equals_uninterrupted(make_cfg, tmp_path, monkeypatch):
    """UniLM masks target tokens at random in the collator: the resumed run draws the masks the uninterrupted one drew
    (2 batches an epoch, interrupted after the first epoch, the collator told each epoch)."""
    epochs = []
    collate = UniLMTrainCollator.__call__
    monkeypatch.setattr(UniLMTrainCollator, "__call__", lambda self, examples: epochs.append(self.epoch) or collate(self, examples))
    data = tmp_path / "data"
    rng = random.Random(0)
    write_pairs(data, {"train": questions(rng, 24), "test": questions(rng, 4)})
    common = ["experiment=table3_softmax", "model=unilm_tiny", "scale=smoke", f"task.data_dir={data}",
              "train.max_steps=4", "train.save_steps=2", "train.batch_size=8", "train.precision=fp32"]
    straight, resumed = interrupted_and_resumed(make_cfg, tmp_path, *common)
    assert resumed["train_loss"] == straight["train_loss"] and len(straight["train_loss"]["step"]) == 4
    assert resumed["metrics"]["test/bleu4_beam1"] == straight["metrics"]["test/bleu4_beam1"]
    assert epochs == [0, 0, 1, 1] + [0, 0] + [1, 1]  # straight; interrupted after its first epoch; resumed


def test_a_resumed_record_counts_the_whole_run_and_says_it_was_resumed(make_cfg, tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="softmax_zoo"):
        straight, resumed = interrupted_and_resumed(make_cfg, tmp_path, "scale=smoke", "train.max_steps=4", "train.save_steps=2")
    first, second = resumed["timing"]["segments"]
    assert (first["from_step"], first["to_step"], second["from_step"], second["to_step"]) == (0, 2, 2, 4)
    assert resumed["timing"]["train_s"] == pytest.approx(first["train_s"] + second["train_s"])
    assert resumed["timing"]["wall_s"] == pytest.approx(first["wall_s"] + second["wall_s"]) and second["wall_s"] > second["train_s"]
    examples_per_step = resumed["config"]["train"]["batch_size"]
    assert resumed["timing"]["train_examples_per_s"] == pytest.approx(4 * examples_per_step / resumed["timing"]["train_s"])
    assert [(s["from_step"], s["to_step"]) for s in straight["timing"]["segments"]] == [(0, 4)]
    assert "resume: step 2 of the run, after 1 segment: steps 1-2 (" in caplog.text
    assert "trained in 2 segments: steps 1-2 (" in caplog.text and "steps 3-4 (" in caplog.text


def test_a_checkpoint_without_its_resume_state_resumes_with_the_earlier_time_unknown(make_cfg, tmp_path, caplog):
    cfg = make_cfg("scale=smoke", "train.max_steps=4", "train.save_steps=2", f"output_dir={tmp_path / 'b'}")
    with pytest.raises(KeyboardInterrupt):
        engine.run(cfg, callbacks=[CrashAfterSave(2)])
    state = Path(cfg.output_dir) / "checkpoint-2" / trainer.RESUME_STATE.format(process=0)
    state.unlink()
    with caplog.at_level(logging.WARNING, logger="softmax_zoo.trainer"):
        resumed = engine.run(make_cfg("scale=smoke", "train.max_steps=4", "train.save_steps=2", f"output_dir={tmp_path / 'b'}",
                                      "resume=true"))
    assert f"{state} is missing" in caplog.text
    first, second = resumed["timing"]["segments"]
    assert first == {"from_step": 0, "to_step": 2, "train_s": None, "wall_s": None} and resumed["timing"]["train_s"] == second["train_s"]


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
