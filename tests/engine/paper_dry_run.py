"""Every experiment at ``scale=paper`` for a few optimiser steps on generated data with a tiny model.

Shared by the slow test (tests/engine/test_paper_experiments.py, on the CPU) and by
``make gpu-check`` (scripts/gpu_check.py, on a GPU): the paper configs compose, train 2 optimiser
steps and evaluate/decode a handful of examples, with the paper's optimiser, schedule, lengths,
losses and decoding, and only the model (and the sizes tied to the vocabulary) made tiny.

What a task needs comes from its config, by family (the task file's family choice): the generated
data of the family's prepared format (seq2seq: of the task's ``format``), and the family's tiny
stand-ins. A new task of an existing family is covered without editing this file.
"""

from __future__ import annotations

import random
from pathlib import Path

from omegaconf import OmegaConf

from ..classification.conftest import prepare_task
from ..lm.conftest import prepare_corpus
from ..seq2seq.test_end_to_end import _questions, _summaries, _write

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# fig2 takes its task from the command line (as in test_every_experiment.py).
FIG2_TASK = {"fig2": "clinc_oos", "fig2_softmax": "iflytek"}
# seq2seq task.format -> generated pairs of that format
PAIRS = {"summarisation": _summaries, "question_generation": _questions}
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


def task_file(task: str):
    return OmegaConf.load(CONFIGS / "task" / f"{task}.yaml")


def family(task: str) -> str:
    """The family a task file chooses (``override /family@_global_.family: <family>``)."""
    (choice,) = (d["override /family@_global_.family"] for d in task_file(task).defaults if "override /family@_global_.family" in d)
    return choice


def task_names() -> list[str]:
    return sorted(p.stem for p in (CONFIGS / "task").glob("*.yaml"))


def generated_data(root: Path) -> dict[str, Path]:
    """task name -> a prepared folder of generated data, for every task of configs/task/ that reads one."""
    rng = random.Random(0)
    folders: dict[str, Path] = {}
    corpus = None
    for task in task_names():
        kind = family(task)
        if kind == "classification":
            folders[task] = prepare_task(root, task)
        elif kind == "lm":
            folders[task] = corpus = corpus or prepare_corpus(root)
        elif kind == "seq2seq":
            make_rows = PAIRS[task_file(task).format]
            _write(root / task, {"train": make_rows(rng, 24), "test": make_rows(rng, 12)})
            folders[task] = root / task
    return folders


def tiny(task: str) -> list[str]:
    """Overrides that make ``task``'s paper model tiny (and the sizes tied to it)."""
    kind = family(task)
    if kind != "lm":
        return list(TINY.get(kind, []))
    task_keys = set(task_file(task)) | set(OmegaConf.load(CONFIGS / "family" / f"{kind}.yaml").task)
    return [*TINY["lm"], *(f"task.{key}={value}" for key, value in TINY_LM_TASK.items() if key in task_keys)]


def paper_overrides(experiment: str, task_name: str, data: dict[str, Path]) -> list[str]:
    """Overrides that run ``experiment`` at paper scale for 2 steps with a tiny model."""
    task = [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []
    return [f"experiment={experiment}", *task, "scale=paper", f"task.data_dir={data[task_name]}", *STEPS, *tiny(task_name)]
