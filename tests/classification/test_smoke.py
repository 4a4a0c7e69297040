"""`python -m softmax_zoo.train task=<t> loss=<head> scale=smoke` on generated data writes a valid record.

Run in-process through the engine (the same code path as the command line). Every task runs with
the full softmax and every head runs on clinc_oos in the fast suite; the rest of the
task x head grid is marked slow.
"""

from __future__ import annotations

import json
import math

import pytest

from softmax_zoo import engine
from softmax_zoo.data.prepare.generated import NUM_CLASSES, classification_tasks

from .conftest import compose

TASKS = classification_tasks()

HEADS = ["softmax", "stable_softmax", "sparse_softmax", "adaptive_softmax", "sampled_softmax"]
GRID = [
    pytest.param(task, head, marks=[] if task == "clinc_oos" or head == "softmax" else [pytest.mark.slow])
    for task in TASKS
    for head in HEADS
]


@pytest.mark.parametrize("task,head", GRID)
def test_smoke_run_writes_a_record(data_root, tmp_path, task, head):
    record = engine.run(compose(data_root, tmp_path, task, f"loss={head}", "experiment_name=smoke"))
    path = tmp_path / "runs" / "smoke" / f"{record['run_name']}.json"
    assert path.is_file()
    saved = json.loads(path.read_text())
    assert saved["run_name"] == f"{task}_tiny_bert_{head}_smoke_seed0"
    m = saved["metrics"]
    for p in ("val", "test"):
        assert 0.0 <= m[f"{p}/micro_f1"] <= 1.0 and 0.0 <= m[f"{p}/macro_f1"] <= 1.0
        assert math.isfinite(m[f"{p}/loss"]) and m[f"{p}/loss"] > 0
        assert 0.0 <= m[f"{p}/target_in_topk"] <= 1.0 and m[f"{p}/logits_near_kth"] >= 1
    assert saved["train_loss"]["step"] == [1, 2] and all(math.isfinite(x) for x in saved["train_loss"]["loss"])
    assert saved["task_info"]["num_classes"] == NUM_CLASSES
    assert saved["data"]["outputs_sha256"]["train.jsonl"] == json.loads(
        (data_root / task / "meta.json").read_text()
    )["outputs_sha256"]["train.jsonl"]
    assert saved["timing"]["train_examples_per_s"] > 0
    assert saved["config"]["loss"]["_target_"].rsplit(".", 1)[-1].lower().startswith(head.split("_")[0])


def test_the_engine_tells_the_sparse_head_its_training_step(data_root, tmp_path):
    from transformers import TrainerCallback

    seen = []

    class Watch(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            seen.append((model.head.training_step, model.head.full_softmax_now()))

    cfg = compose(data_root, tmp_path, "clinc_oos", "loss=sparse_softmax", "loss.full_softmax_steps=1", "experiment_name=warm")
    engine.run(cfg, callbacks=[Watch()])
    assert seen == [(0, True), (1, False)]  # step 0 trained with the full softmax, step 1 sparse
