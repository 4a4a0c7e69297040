"""Every experiment at ``scale=paper`` for a few optimiser steps on generated data with a tiny model.

Used by the slow test tests/engine/test_paper_experiments.py (on the CPU), by
tests/engine/test_every_experiment.py and by ``make gpu-check`` (scripts/gpu_check.py, on a GPU):
the paper configs compose, train 2 optimiser steps and evaluate/decode a handful of examples, with
the paper's optimiser, schedule, lengths, losses and decoding, and only the model (and the sizes
tied to the vocabulary) made tiny. The data come from :mod:`softmax_zoo.data.prepare.generated`.

What a task needs comes from its family's file (configs/families/<family>.yaml, the task file's
family choice), whose ``dry_run:`` block lists overrides:

- ``tiny_model``: the tiny random stand-in of a model loaded from a checkpoint;
- ``shrink``: what must shrink with it;
- ``task_keys``: ``task.<key>=<value>`` overrides, each set only where the task has the key.

A new task, or a new family with its own ``dry_run:`` block, is covered without editing this module.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from softmax_zoo.config import CONFIG_DIR, family_files

FAMILY_CHOICE = "override /family@_global_.family"  # the defaults entry of a task file naming its family
# fig2 takes its task from the command line (as in tests/engine/test_every_experiment.py).
FIG2_TASK = {"fig2": "clinc_oos", "fig2_softmax": "iflytek"}
# allow_dirty: a dry run of a paper config is a test, not a reproduction, so it runs from a working tree with changes.
STEPS = ["train.max_steps=2", "train.batch_size=4", "train.eval_batch_size=4", "train.save_steps=0", "allow_dirty=true"]


def task_file(task: str) -> DictConfig:
    """configs/task/<task>.yaml as written (not composed)."""
    return OmegaConf.load(CONFIG_DIR / "task" / f"{task}.yaml")


def family(task: str) -> str:
    """The family a task file chooses (``override /family@_global_.family: <family>``)."""
    (choice,) = (d[FAMILY_CHOICE] for d in task_file(task).defaults if FAMILY_CHOICE in d)
    return choice


def _dry_run(task: str) -> tuple[DictConfig, DictConfig]:
    """The family file of ``task`` and its ``dry_run:`` block (empty if it has none)."""
    file = family_files()[family(task)]
    return file, file.get("dry_run") or OmegaConf.create({})


def tiny_model(task: str) -> list[str]:
    """The override(s) that replace ``task``'s checkpointed model by its family's tiny random one."""
    return list(_dry_run(task)[1].get("tiny_model") or [])


def tiny(task: str) -> list[str]:
    """Overrides that make ``task``'s paper model tiny (and the sizes tied to it)."""
    file, block = _dry_run(task)
    task_keys = set(task_file(task)) | set(file.get("task") or {})
    wanted = [o for o in block.get("task_keys") or [] if o.split("=", 1)[0].removeprefix("task.") in task_keys]
    return [*tiny_model(task), *(block.get("shrink") or []), *wanted]


def experiment_task(experiment: str) -> list[str]:
    """The ``task=`` override an experiment needs from the command line (fig2's), or none."""
    return [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []


def paper_overrides(experiment: str, task_name: str, data: dict[str, Path]) -> list[str]:
    """Overrides that run ``experiment`` at paper scale for 2 steps with a tiny model on ``data[task_name]``."""
    return [f"experiment={experiment}", *experiment_task(experiment), "scale=paper",
            f"task.data_dir={data[task_name]}", *STEPS, *tiny(task_name)]
