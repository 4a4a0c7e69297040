"""Every experiment config trains one optimiser step at smoke scale and writes its record.

Parametrised from configs/experiment/, so a new experiment file is covered without editing this
test. Data are generated in the prepared formats of each task's family (softmax_zoo.data.prepare.generated);
a model loaded from a checkpoint (``model.pretrained`` or ``model.checkpoint``) is replaced by its
family's tiny random one of the same kind (the ``dry_run.tiny_model`` of its family file), so a new
task needs no entry here. They run on a simulated CPU without a bfloat16 LSTM (an AVX2-only CPU), so
a bf16 experiment (stable_kd_ptb) shows that it runs on any x86-64 CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softmax_zoo import engine
from softmax_zoo.data.prepare.generated import generated_data
from softmax_zoo.dry_run import FIG2_TASK, tiny_model

from .teachers import trained_teacher
from .test_configs import names


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """task name -> a prepared folder of generated data."""
    return generated_data(tmp_path_factory.mktemp("experiment_data"))


def loads_a_checkpoint(model) -> bool:
    return model.get("pretrained") is not None or model.get("checkpoint") is not None


@pytest.mark.parametrize("experiment", names("experiment"))
def test_experiment_runs_one_step_at_smoke_scale(experiment, data, make_cfg, tmp_path, cpu_without_bf16_lstm):
    task = [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []
    composed = make_cfg(f"experiment={experiment}", *task)
    task_name = composed.task.name
    tiny = tiny_model(task_name) if loads_a_checkpoint(composed.model) else []
    overrides = [f"experiment={experiment}", *task, "scale=smoke", "train.max_steps=1", f"task.data_dir={data[task_name]}"]
    teacher = trained_teacher(experiment, composed, make_cfg, [*overrides, *tiny], tmp_path / "teacher")
    cfg = make_cfg(*overrides, *tiny, *teacher)
    record = engine.run(cfg)
    path = Path(cfg.results_dir) / "runs" / cfg.experiment_name / f"{cfg.run_name}.json"
    assert json.loads(path.read_text()) == record
    assert record["timing"]["global_steps"] == 1 and record["metrics"]
