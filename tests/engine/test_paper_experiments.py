"""Every experiment config at ``scale=paper`` runs 2 optimiser steps and a tiny evaluation/decode
on the CPU with a tiny model (softmax_zoo.dry_run), so that a broken paper config is
caught without a GPU. Marked slow: `make test-all`."""

from __future__ import annotations

import pytest

from softmax_zoo import engine
from softmax_zoo.data.prepare.generated import generated_data
from softmax_zoo.dry_run import FIG2_TASK, paper_overrides

from .teachers import trained_teacher
from .test_configs import names


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return generated_data(tmp_path_factory.mktemp("paper_data"))


@pytest.mark.slow
@pytest.mark.parametrize("experiment", names("experiment"))
def test_experiment_runs_two_steps_at_paper_scale(experiment, data, make_cfg, tmp_path):
    task = [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []
    composed = make_cfg(f"experiment={experiment}", *task)
    overrides = paper_overrides(experiment, composed.task.name, data)
    teacher = trained_teacher(experiment, composed, make_cfg, overrides, tmp_path / "teacher")
    cfg = make_cfg(*overrides, *teacher)
    assert cfg.scale.name == "paper"
    record = engine.run(cfg)
    assert record["timing"]["global_steps"] == 2 and record["choices"]["scale"] == "paper"
    assert any(k.startswith(("test/", "val/")) for k in record["metrics"]), sorted(record["metrics"])
