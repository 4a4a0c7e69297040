"""The lm task end to end at smoke scale (generated corpus), and its bad-input errors."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch
from hydra.errors import InstantiationException
from torch.utils.data import DataLoader
from transformers import TrainerCallback

from softmax_zoo import config, engine
from softmax_zoo.data.prepare.generated import NUM_WORDS
from softmax_zoo.data.tokenizers import WordVocab
from softmax_zoo.trainer import training_arguments

HEADS = {
    "softmax": ["loss=softmax"],
    # explicit cutoffs: `auto` times matmuls on this machine (optimal_cutoffs), not deterministic under load
    "adaptive": ["loss=adaptive_softmax", "loss.cutoffs=[8,30]"],
    "sampled_uniform": ["loss=sampled_softmax", "loss/sampler=uniform", "loss.num_samples=8"],
    "sampled_unigram": ["loss=sampled_softmax", "loss/sampler=unigram", "loss.num_samples=8"],
    "sampled_quadratic": ["loss=sampled_softmax", "loss/sampler=quadratic", "loss.num_samples=8"],
    "sampled_softmax_oracle": ["loss=sampled_softmax", "loss/sampler=softmax", "loss.num_samples=8"],
}


def compose(corpus, tmp_path, *overrides: str):
    return config.compose([
        "task=lm1b", "scale=smoke", f"task.data_dir={corpus}", f"results_dir={tmp_path}",
        f"output_dir={tmp_path}/ckpt", *overrides,
    ])


@pytest.mark.parametrize("head", list(HEADS))
def test_smoke_run_writes_a_record(lm_corpus, tmp_path, head):
    record = engine.run(compose(lm_corpus, tmp_path, *HEADS[head]))
    m = record["metrics"]
    vocab_size = NUM_WORDS + 2  # + <eos>, <unk>
    for p in ("val", "test"):
        assert 1.0 < m[f"{p}/perplexity"] < 3 * vocab_size  # two steps from a near-uniform start
        assert m[f"{p}/loss"] == pytest.approx(math.log(m[f"{p}/perplexity"]))
    meta = json.loads((lm_corpus / "meta.json").read_text())
    assert m["val/tokens"] == meta["splits"]["validation"]["tokens_with_eos"]  # every token scored once
    assert m["train/tokens_per_second"] > 0
    assert record["task_info"]["vocab_size"] == vocab_size
    assert (tmp_path / "runs" / record["experiment"] / f"{record['run_name']}.json").is_file()


def test_vocab_counts_that_do_not_match_the_data_are_refused(lm_corpus, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in lm_corpus.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    lines = (bad / "vocab.txt").read_text().splitlines()
    word, n = lines[-1].split("\t")
    (bad / "vocab.txt").write_text("\n".join([*lines[:-1], f"{word}\t{int(n) + 5}"]) + "\n")
    with pytest.raises(ValueError, match="does not match the prepared training data"):
        engine.build_task(compose(bad, tmp_path))


def test_missing_data_names_the_make_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="make data TASK=lm1b"):
        engine.build_task(compose(tmp_path / "absent", tmp_path))


# build_head instantiates through Hydra, which wraps the head's ValueError; the message is the losses module's.
HEAD_ERRORS = (ValueError, InstantiationException)


def test_cutoffs_beyond_the_vocabulary_fail_before_training(lm_corpus, tmp_path):
    with pytest.raises(HEAD_ERRORS, match=r"cutoffs must lie in \(0, num_classes\) = \(0, 62\), got 500"):
        engine.build_task(compose(lm_corpus, tmp_path, "loss=adaptive_softmax", "loss.cutoffs=[8,500]"))


def test_sampled_head_with_m_not_below_the_vocabulary_says_use_full_softmax(lm_corpus, tmp_path):
    with pytest.raises(HEAD_ERRORS, match="full softmax"):
        engine.build_task(compose(lm_corpus, tmp_path, "loss=sampled_softmax", f"loss.num_samples={NUM_WORDS + 2}"))


def test_uniform_model_has_perplexity_equal_to_the_vocabulary_size(lm_corpus, tmp_path):
    task = engine.build_task(compose(lm_corpus, tmp_path))
    head = task.model.head
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
    metrics = task.evaluate(task.model, "validation", task.eval_datasets["validation"]).metrics
    assert metrics["val/perplexity"] == pytest.approx(len(WordVocab.load(lm_corpus / "vocab.txt")), rel=1e-5)


def test_validation_curve_points_carry_training_time_without_evaluation_time(lm_corpus, tmp_path):
    task = engine.build_task(compose(lm_corpus, tmp_path, "task.curve_every=2", "task.curve_tokens=30"))
    (curve,) = task.callbacks
    state = SimpleNamespace(global_step=0, is_world_process_zero=True, log_history=[])
    curve.on_train_begin(None, state, None, model=task.model)
    batch = next(iter(DataLoader(task.train_dataset, batch_size=4, collate_fn=task.collator)))
    for step in (1, 2):
        task.model(**batch)["loss"].backward()
        state.global_step = step
        curve.on_step_end(None, state, None, model=task.model)
    assert [p["step"] for p in state.log_history] == [0, 2]
    first, second = state.log_history
    assert first["val/curve_perplexity"] == pytest.approx(len(WordVocab.load(lm_corpus / "vocab.txt")), rel=0.5)
    assert 30 <= second["val/curve_tokens"] < 30 + 4 * 5  # whole batches of 4 rows x bptt 5
    assert 0 <= first["train_wall_s"] < second["train_wall_s"]
    assert task.model.rate.pending_excluded > 0  # the point after step 2 is taken out of tokens/second


class SpoilLastStep(TrainerCallback):
    """Overwrites every weight with large noise at the last step, before that step's validation."""

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step == state.max_steps:
            g = torch.Generator().manual_seed(0)
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(10 * torch.randn(p.shape, generator=g))
        return control


def test_eval_steps_evaluates_the_checkpoint_best_on_validation(lm_corpus, tmp_path):
    cfg = compose(lm_corpus, tmp_path, "train.max_steps=3", "train.eval_steps=1", "train.save_steps=1")
    record = engine.run(cfg, callbacks=[SpoilLastStep()])
    points = {h["step"]: h["eval_val/perplexity"] for h in record["history"] if "eval_val/perplexity" in h}
    assert sorted(points) == [1, 2, 3]
    best = min(points, key=points.get)
    assert best < 3 and points[3] > 10 * points[best]  # the spoilt last weights are not the ones evaluated
    assert record["selection"] == {"metric": "val/perplexity", "greater_is_better": False, "step": best,
                                   "value": points[best], "last_step": 3}
    assert record["metrics"]["val/perplexity"] == pytest.approx(points[best], rel=1e-6)


def test_a_run_without_eval_steps_evaluates_its_last_weights_and_records_no_selection(lm_corpus, tmp_path):
    record = engine.run(compose(lm_corpus, tmp_path, "train.max_steps=2"), callbacks=[SpoilLastStep()])
    assert "selection" not in record and not any("eval_val/perplexity" in h for h in record["history"])
    assert record["metrics"]["val/perplexity"] > 3 * (NUM_WORDS + 2)  # the spoilt weights


@pytest.mark.parametrize("bad, match", [
    (["train.eval_steps=2", "train.save_steps=3"], r"train.eval_steps=2 needs train.save_steps a positive multiple of it.*got 3"),
    (["train.eval_steps=2", "train.save_steps=0"], r"got 0"),
    (["train.eval_steps=-1"], r"train.eval_steps must be an integer >= 0, got -1"),
])
def test_eval_steps_that_cannot_keep_the_best_checkpoint_are_refused(lm_corpus, tmp_path, bad, match):
    with pytest.raises(ValueError, match=match):
        training_arguments(compose(lm_corpus, tmp_path, *bad))


def test_validation_time_is_not_training_time_on_the_curve(lm_corpus, tmp_path):
    task = engine.build_task(compose(lm_corpus, tmp_path, "task.curve_every=2", "task.curve_tokens=30"))
    (curve,) = task.callbacks
    curve.on_evaluate(None, None, None, metrics={"eval_val/perplexity": 9.0, "eval_runtime": 1.5})
    assert curve.spent == 1.5 and curve.training_seconds(curve.start + 4.0) == pytest.approx(2.5)


def test_validation_subset_validates_on_the_first_rows_and_the_final_evaluation_on_the_whole_split(lm_corpus, tmp_path):
    cfg = compose(lm_corpus, tmp_path, "train.max_steps=2", "train.eval_steps=1", "train.save_steps=1", "train.validation_subset=4")
    record = engine.run(cfg)
    tokens = {h["eval_val/tokens"] for h in record["history"] if "eval_val/tokens" in h}
    assert tokens == {4 * cfg.task.bptt}  # 4 rows of bptt tokens (one evaluation batch of 4 streams)
    meta = json.loads((lm_corpus / "meta.json").read_text())
    assert record["metrics"]["val/tokens"] == meta["splits"]["validation"]["tokens_with_eos"]
