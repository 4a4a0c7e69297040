"""python -m softmax_zoo.studies.lm_speed on the generated corpus: the heads' training steps timed side by side."""

from __future__ import annotations

import json

import pytest
import torch

from softmax_zoo.config import compose
from softmax_zoo.studies import lm_speed
from softmax_zoo.timing import time_interleaved


def test_time_interleaved_rotates_and_warms_up():
    calls = []
    steps = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = time_interleaved(steps, repeats=3, warmup=1)
    assert calls == list("abc") + list("abc") + list("bca") + list("cab")
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3, "c": 3}
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        time_interleaved(steps, repeats=0, warmup=0)


def test_step_is_the_runs_training_step(lm_corpus):
    cfg = compose(["experiment=lm1b_adaptive", "scale=smoke", f"task.data_dir={lm_corpus}"])
    model, optimizer = lm_speed.model_and_optimizer(cfg)
    assert isinstance(optimizer, torch.optim.Adagrad) and optimizer.defaults["lr"] == cfg.train.lr
    before = [p.detach().clone() for p in model.parameters()]
    lm_speed.training_step(model, optimizer, cfg.train.max_grad_norm, lm_speed.first_batches(cfg, 2))()
    changed = [not torch.equal(a, p) for a, p in zip(before, model.parameters())]
    assert any(changed) and all(p.grad is None for p in model.parameters())


def test_main_writes_the_measurement(lm_corpus, tmp_path):
    out = tmp_path / "diagnostics" / "lm1b_speed.json"
    argv = ["scale=smoke", "repeats=2", "warmup=1", "batches=2", f"out={out}", f"task.data_dir={lm_corpus}"]
    assert lm_speed.main(argv) == 0
    saved = json.loads(out.read_text())
    assert [r["experiment"] for r in saved["rows"]] == lm_speed.EXPERIMENTS.split(",")
    assert [r["choices"]["loss"] for r in saved["rows"]] == ["softmax", "adaptive_softmax", *["sampled_softmax"] * 3]
    assert [r["choices"]["sampler"] for r in saved["rows"][2:]] == ["quadratic", "unigram", "uniform"]
    assert saved["rows"][0]["ratio"] == 1.0
    for row in saved["rows"]:
        assert row["q1_s"] <= row["median_s"] <= row["q3_s"]
        assert row["tokens_per_s"] == pytest.approx(row["tokens_per_step"] / row["median_s"])
    assert saved["settings"]["scale"] == "smoke" and saved["settings"]["repeats"] == 2
    assert saved["settings"]["min_count"] == 1  # the page matches the measurement to the records on it (hence V)
    assert saved["torch_threads"] == torch.get_num_threads() and saved["command"].endswith(f"task.data_dir={lm_corpus}")
    assert set(saved["git"]) == {"commit", "dirty", "dirty_paths", "dirty_paths_more"}  # the speed names its code


@pytest.mark.parametrize("argv, message", [
    (["repeats=0"], "repeats='0': must be >= 1"),
    (["warmup=x"], "warmup='x': must be an integer >= 0"),
    (["threads=two"], "threads='two': must be an integer >= 1"),
    (["scale"], "arguments must be key=value"),
])
def test_bad_options_are_named(argv, message):
    with pytest.raises(ValueError, match=message):
        lm_speed.parse(argv)
