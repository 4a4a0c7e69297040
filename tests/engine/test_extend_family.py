"""A task family added from outside the package: its task module, family file and task file, and nothing else.

my_family.py builds an in-memory task (uniform classes of Gaussian clusters, so it needs no data
module and no preparer), conf/families/my_family.yaml holds the family's keys and its per-scale
block, and conf/task/my_family_task.yaml chooses the family, in a folder outside the repository as
README "Extend it" names them. Family files are registered from every folder a composition reads
(``softmax_zoo.config.config_sources``): a ``hydra.searchpath`` folder, or a copy of configs/ given
as the primary folder (``--config-path``). README's command, as written, trains it at smoke scale.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from softmax_zoo.config import CONFIG_DIR, command_line_sources, compose, config_sources

MODULE, FAMILY, TASK = "my_family", "my_family", "my_family_task"

FAMILY_MODULE = '''
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

FAMILY_FILE = f"""
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

TASK_FILE = f"""
defaults:
  - override /model@_global_.model: mlp
  - override /family@_global_.family: {FAMILY}
name: {TASK}
primary_metric: test/micro_f1
metric_higher_is_better: true
num_classes: 7
dim: 4
separation: 3.0
n_train: 64
n_test: 32
data_seed: 0
"""


def write_files(conf: Path) -> Path:
    """families/my_family.yaml and task/my_family_task.yaml in the config folder ``conf``."""
    (conf / "families").mkdir(parents=True, exist_ok=True)
    (conf / "task").mkdir(exist_ok=True)
    (conf / "families" / f"{FAMILY}.yaml").write_text(textwrap.dedent(FAMILY_FILE))
    (conf / "task" / f"{TASK}.yaml").write_text(textwrap.dedent(TASK_FILE))
    return conf


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """The user's folder: my_family.py and conf/, the module importable here."""
    write_files(tmp_path / "conf")
    (tmp_path / f"{MODULE}.py").write_text(FAMILY_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("WANDB_MODE", "disabled")
    yield tmp_path
    sys.modules.pop(MODULE, None)
    compose([], CONFIG_DIR)  # the repository's families registered again for the tests after this one


def a_copy_of_configs(folder: Path) -> Path:
    """configs/ copied with the family's files added (what ``--config-path`` points at)."""
    shutil.copytree(CONFIG_DIR, folder / "configs")
    return write_files(folder / "configs")


@pytest.mark.parametrize("source", ["hydra.searchpath", "a copy of configs/"])
@pytest.mark.parametrize("scale, batch_size", [("smoke", 8), ("cpu", 16), ("paper", 64)])
def test_a_new_family_composes_at_every_scale(folder, source, scale, batch_size):
    if source == "hydra.searchpath":
        cfg = compose([f"task={TASK}", f"scale={scale}", f"hydra.searchpath=[file://{folder / 'conf'}]"])
    else:
        cfg = compose([f"task={TASK}", f"scale={scale}"], a_copy_of_configs(folder))
    assert cfg.task.builder == f"{MODULE}.build_task"
    assert cfg.train.batch_size == batch_size  # smoke: the scale file's; cpu, paper: the family's block


def test_the_folders_a_command_line_composes_from(tmp_path):
    """--config-path (else configs/), --config-dir and hydra.searchpath (the override's, else the primary train.yaml's)."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    assert command_line_sources(["task=synthetic"]) == [CONFIG_DIR]
    assert command_line_sources(["--config-path", str(a), f"hydra.searchpath=[file://{b},pkg://x.conf]"]) == [a, b]
    assert command_line_sources([f"--config-path={a}", "-cd", str(c), f"hydra.searchpath=[{b}]"]) == [a, c, b]
    a.mkdir()
    (a / "train.yaml").write_text(f"hydra:\n  searchpath: [file://{b}]\n")
    assert config_sources(a) == [a, b] and config_sources(a, [f"hydra.searchpath=[file://{c}]"]) == [a, c]


def test_readme_recipe_and_config_path_train_at_smoke_scale(folder, run_readme_recipe):
    """README's family recipe from a folder outside the repository, then the same run from a copy of
    configs/ (``--config-path``, as for an installed wheel): both find the family and train."""
    run_readme_recipe("# a task family", folder)
    configs = a_copy_of_configs(folder)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), str(Path(__file__).resolve().parents[2] / "src")]),
           "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "CUDA_VISIBLE_DEVICES": ""}  # fmt: skip
    cmd = [sys.executable, "-m", "softmax_zoo.train", "--config-path", str(configs), f"task={TASK}", "scale=smoke", "seed=1"]
    done = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in sorted((folder / "scratch" / "runs" / "default").glob("*.json"))]
    assert [r["config"]["seed"] for r in records] == [0, 1]
    for record in records:
        assert record["choices"]["task"] == TASK and record["timing"]["global_steps"] == 2
        assert "test/micro_f1" in record["metrics"] and record["config"]["task"]["builder"] == f"{MODULE}.build_task"
