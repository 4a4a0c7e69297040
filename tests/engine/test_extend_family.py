"""A task family added from outside the package: its task module, family file and task file, and nothing else.

A throwaway module builds an in-memory task (uniform classes of Gaussian clusters, so it needs no data
module and no preparer), ``configs/families/toy.yaml`` holds the family's keys and its per-scale block,
and ``configs/task/toy.yaml`` chooses the family. Family files are read from the config folder that
composes (``softmax_zoo.config.register_families``), so the test writes them into a copy of configs/.
With no other edit the task composes at every scale and trains at smoke scale through the engine.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from softmax_zoo import engine
from softmax_zoo.config import CONFIG_DIR, compose

MODULE = "toy_family_task"

TOY_MODULE = '''
"""Uniformly drawn classes of Gaussian clusters, generated in memory."""
import torch

from softmax_zoo.models import build_model, head_factory
from softmax_zoo.tasks.base import Task
from softmax_zoo.tasks.synthetic import TensorPairs, collate, evaluate


def build_task(cfg, batches):
    t = cfg.task
    g = torch.Generator().manual_seed(t.data_seed)
    centres = torch.randn(t.num_classes, t.dim, generator=g) * t.separation  # (C, dim)

    def split(n):
        labels = torch.randint(t.num_classes, (n,), generator=g)  # (n,)
        return TensorPairs(centres[labels] + torch.randn(n, t.dim, generator=g), labels)

    train = split(t.n_train)
    counts = torch.bincount(train.labels, minlength=t.num_classes)
    model = build_model(cfg.model, head_factory(cfg.loss, t.num_classes, counts), in_features=t.dim, num_classes=t.num_classes)
    return Task(model=model, train_dataset=train, eval_datasets={"test": split(t.n_test)}, collator=collate,
                evaluate=evaluate, data_meta={"source": "generated in memory"})
'''

TOY_FAMILY = f"""
task:
  builder: {MODULE}.build_task
scales:
  cpu:
    train:
      epochs: 1
      batch_size: 16
      save_steps: 0
  paper:
    train:
      epochs: 1
      batch_size: 64
      save_steps: 0
"""

TOY_TASK = """
defaults:
  - override /model@_global_.model: mlp
  - override /family@_global_.family: toy
name: toy
primary_metric: test/micro_f1
metric_higher_is_better: true
num_classes: 7
dim: 4
separation: 3.0
n_train: 64
n_test: 32
data_seed: 0
"""


@pytest.fixture
def configs(tmp_path, monkeypatch) -> Path:
    """A copy of configs/ with the toy family and task added, and the toy module importable."""
    folder = tmp_path / "configs"
    shutil.copytree(CONFIG_DIR, folder)
    (folder / "families" / "toy.yaml").write_text(textwrap.dedent(TOY_FAMILY))
    (folder / "task" / "toy.yaml").write_text(textwrap.dedent(TOY_TASK))
    (tmp_path / f"{MODULE}.py").write_text(TOY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("WANDB_MODE", "disabled")
    yield folder
    sys.modules.pop(MODULE, None)
    compose([], CONFIG_DIR)  # the repository's families registered again for the tests after this one


@pytest.mark.parametrize("scale, batch_size", [("smoke", 8), ("cpu", 16), ("paper", 64)])
def test_a_new_family_composes_at_every_scale(configs, scale, batch_size):
    cfg = compose(["task=toy", f"scale={scale}"], configs)
    assert cfg.task.builder == f"{MODULE}.build_task"
    assert cfg.train.batch_size == batch_size  # smoke: the scale file's; cpu, paper: the family's block


def test_a_new_family_trains_at_smoke_scale(configs, tmp_path):
    cfg = compose(["task=toy", "scale=smoke", f"results_dir={tmp_path / 'results'}", f"output_dir={tmp_path / 'ckpt'}"], configs)
    record = engine.run(cfg)
    path = tmp_path / "results" / "runs" / cfg.experiment_name / f"{cfg.run_name}.json"
    assert json.loads(path.read_text()) == record
    assert record["timing"]["global_steps"] == 2 and "test/micro_f1" in record["metrics"]
    assert cfg.run_name.startswith("toy_mlp_softmax_smoke_seed0")
