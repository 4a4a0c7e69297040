"""Every experiment at ``scale=paper`` for a few optimiser steps on generated data with a tiny model.

Shared by the slow test (tests/engine/test_paper_experiments.py, on the CPU) and by
``make gpu-check`` (scripts/gpu_check.py, on a GPU): the paper configs compose, train 2 optimiser
steps and evaluate/decode a handful of examples, with the paper's optimiser, schedule, lengths,
losses and decoding, and only the model (and the sizes tied to the vocabulary) made tiny.
"""

from __future__ import annotations

import random
from pathlib import Path

from ..classification.conftest import prepare_task
from ..lm.conftest import prepare_corpus
from ..seq2seq.test_end_to_end import _questions, _summaries, _write

# fig2 takes its task from the command line (as in test_every_experiment.py).
FIG2_TASK = {"fig2": "clinc_oos", "fig2_softmax": "iflytek"}
# The tiny stand-in of each task's paper model, and what must shrink with it.
TINY = {
    "clinc_oos": ["model=tiny_bert"],
    "iflytek": ["model=tiny_bert"],
    "gigaword": ["model=unilm_tiny", "task.eval_size=4", "task.decode.batch_size=4"],
    "squad_qg": ["model=unilm_tiny", "task.eval_size=4", "task.decode.batch_size=4"],
    "lm1b": ["model.embedding_dim=16", "model.hidden_size=16", "task.min_count=1", "task.cutoffs=[20,40]",
             "task.num_samples=8", "task.curve_every=1", "task.curve_tokens=200"],
    "ptb": ["model.embedding_dim=16", "model.hidden_size=16", "task.min_count=1", "task.curve_every=1", "task.curve_tokens=200"],
}
STEPS = ["train.max_steps=2", "train.batch_size=4", "train.eval_batch_size=4", "train.save_steps=0"]


def generated_data(root: Path) -> dict[str, Path]:
    """task name -> a prepared folder of generated data."""
    rng = random.Random(0)
    folders = {task: prepare_task(root, task) for task in ("clinc_oos", "iflytek")}
    corpus = prepare_corpus(root)
    folders.update(lm1b=corpus, ptb=corpus)
    for task, make_rows in (("gigaword", _summaries), ("squad_qg", _questions)):
        _write(root / task, {"train": make_rows(rng, 24), "test": make_rows(rng, 12)})
        folders[task] = root / task
    return folders


def paper_overrides(experiment: str, task_name: str, data: dict[str, Path]) -> list[str]:
    """Overrides that run ``experiment`` at paper scale for 2 steps with a tiny model."""
    task = [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []
    return [f"experiment={experiment}", *task, "scale=paper", f"task.data_dir={data[task_name]}", *STEPS, *TINY[task_name]]
