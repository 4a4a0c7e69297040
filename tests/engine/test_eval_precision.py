"""Evaluation runs in float32 for every task, whatever precision trained: after a bf16 run the
evaluated model's forward is no longer wrapped in accelerate's autocast."""

from __future__ import annotations

import pytest

from softmax_zoo import engine
from softmax_zoo.data.prepare.generated import lm_corpus


@pytest.mark.slow  # ~45 s on a loaded 2-core machine
def test_lm_evaluates_in_float32_after_bf16_training(make_cfg, tmp_path, monkeypatch):
    seen = {}
    evaluate = engine.evaluate_splits

    def spy(task, model, *args, **kwargs):
        seen["wrapped"] = "_original_forward" in model.__dict__  # accelerate's autocast wrapper of forward
        return evaluate(task, model, *args, **kwargs)

    monkeypatch.setattr(engine, "evaluate_splits", spy)
    data = lm_corpus(tmp_path / "data")
    cfg = make_cfg("experiment=lm1b_softmax", "scale=smoke", "train.max_steps=1", "train.precision=bf16", f"task.data_dir={data}")
    record = engine.run(cfg)
    assert record["device"]["precision"] == "bf16"
    assert seen["wrapped"] is False
