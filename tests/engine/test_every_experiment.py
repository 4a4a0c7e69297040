"""Every experiment config trains one optimiser step at smoke scale and writes its record.

Parametrised from configs/experiment/, so a new experiment file is covered without editing this
test. Data are generated in the prepared formats (the fixtures of each task family's tests);
experiments whose model is large get a tiny one of the same kind (``TINY_MODEL``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softmax_zoo import engine

from .paper_dry_run import generated_data
from .test_configs import names

# fig2 takes its task from the command line: one text task with a pretrained-encoder default
# (clinc_oos, run on the tiny BERT) and one with its own from-scratch default (iflytek).
FIG2_TASK = {"fig2": "clinc_oos", "fig2_softmax": "iflytek"}
TINY_MODEL = {"clinc_oos": "model=tiny_bert", "gigaword": "model=unilm_tiny", "squad_qg": "model=unilm_tiny"}


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """task name -> a prepared folder of generated data."""
    return generated_data(tmp_path_factory.mktemp("experiment_data"))


@pytest.mark.parametrize("experiment", names("experiment"))
def test_experiment_runs_one_step_at_smoke_scale(experiment, data, make_cfg):
    task = [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []
    task_name = make_cfg(f"experiment={experiment}", *task).task.name
    overrides = [f"experiment={experiment}", *task, "scale=smoke", "train.max_steps=1", f"task.data_dir={data[task_name]}"]
    cfg = make_cfg(*overrides, *([TINY_MODEL[task_name]] if task_name in TINY_MODEL else []))
    record = engine.run(cfg)
    path = Path(cfg.results_dir) / "runs" / cfg.experiment_name / f"{cfg.run_name}.json"
    assert json.loads(path.read_text()) == record
    assert record["timing"]["global_steps"] == 1 and record["metrics"]
