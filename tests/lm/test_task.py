"""The lm task end to end at smoke scale (generated corpus), and its bad-input errors."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch
from hydra.errors import InstantiationException
from torch.utils.data import DataLoader

from softmax_zoo import config, engine
from softmax_zoo.data.prepare.generated import NUM_WORDS
from softmax_zoo.data.tokenizers import WordVocab

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
