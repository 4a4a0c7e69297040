"""Every experiment at ``scale=paper`` for a few optimiser steps on generated data with a tiny model.

Used by the slow test tests/engine/test_paper_experiments.py (on the CPU), by
tests/engine/test_every_experiment.py and by ``make gpu-check`` (scripts/gpu_check.py, on a GPU):
the paper configs compose, train 2 optimiser steps and evaluate/decode a handful of examples, with
the paper's optimiser, schedule, lengths, losses and decoding, and only the model (and the sizes
tied to the vocabulary) made tiny. The data come from :mod:`softmax_zoo.data.prepare.generated`.

What a task needs comes from its config file, by family (the task file's family choice): the
family's tiny stand-ins here, the generated data of the family's prepared format there. A new task
of an existing family is covered without editing this module.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from softmax_zoo.config import CONFIG_DIR

FAMILY_CHOICE = "override /family@_global_.family"  # the defaults entry of a task file naming its family
# fig2 takes its task from the command line (as in tests/engine/test_every_experiment.py).
FIG2_TASK = {"fig2": "clinc_oos", "fig2_softmax": "iflytek"}
# The tiny stand-in of a family's paper model, and what must shrink with it. LM: each of these
# task keys that the task has (task.cutoffs, task.num_samples: lm1b's heads) is set.
TINY_MODEL = {"classification": "model=tiny_bert", "seq2seq": "model=unilm_tiny"}
TINY = {
    "classification": [TINY_MODEL["classification"]],
    "seq2seq": [TINY_MODEL["seq2seq"], "task.eval_size=4", "task.decode.batch_size=4"],
    "lm": ["model.embedding_dim=16", "model.hidden_size=16"],
}
TINY_LM_TASK = {"min_count": 1, "cutoffs": "[20,40]", "num_samples": 8, "curve_every": 1, "curve_tokens": 200}
# allow_dirty: a dry run of a paper config is a test, not a reproduction, so it runs from a working tree with changes.
STEPS = ["train.max_steps=2", "train.batch_size=4", "train.eval_batch_size=4", "train.save_steps=0", "allow_dirty=true"]


def task_file(task: str) -> DictConfig:
    """configs/task/<task>.yaml as written (not composed)."""
    return OmegaConf.load(CONFIG_DIR / "task" / f"{task}.yaml")


def family(task: str) -> str:
    """The family a task file chooses (``override /family@_global_.family: <family>``)."""
    (choice,) = (d[FAMILY_CHOICE] for d in task_file(task).defaults if FAMILY_CHOICE in d)
    return choice


def task_names() -> list[str]:
    """Every task of configs/task/, sorted."""
    return sorted(p.stem for p in (CONFIG_DIR / "task").glob("*.yaml"))


def tiny(task: str) -> list[str]:
    """Overrides that make ``task``'s paper model tiny (and the sizes tied to it)."""
    kind = family(task)
    if kind != "lm":
        return list(TINY.get(kind, []))
    task_keys = set(task_file(task)) | set(OmegaConf.load(CONFIG_DIR / "family" / f"{kind}.yaml").task)
    return [*TINY["lm"], *(f"task.{key}={value}" for key, value in TINY_LM_TASK.items() if key in task_keys)]


def experiment_task(experiment: str) -> list[str]:
    """The ``task=`` override an experiment needs from the command line (fig2's), or none."""
    return [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []


def paper_overrides(experiment: str, task_name: str, data: dict[str, Path]) -> list[str]:
    """Overrides that run ``experiment`` at paper scale for 2 steps with a tiny model on ``data[task_name]``."""
    return [f"experiment={experiment}", *experiment_task(experiment), "scale=paper",
            f"task.data_dir={data[task_name]}", *STEPS, *tiny(task_name)]
