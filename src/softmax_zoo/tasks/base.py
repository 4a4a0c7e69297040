"""What the training entry point (``softmax_zoo.train``) needs from a task.

Every experiment is task × model × loss. A task module (classification, seq2seq, lm) exposes
``build_task(cfg, batches: Batches) -> Task`` (it reads ``cfg.task``, ``cfg.model`` and ``cfg.loss``;
the training settings it needs come as :class:`Batches`), named in its config as ``configs/task/<name>.yaml: builder``; the
entry point then trains ``Task.model`` with the transformers ``Trainer``, calls ``Task.evaluate``
on each split and writes what it returns (:class:`Evaluation`): the metrics into the run record,
the per-example rows into a file beside it. Tasks never write files themselves. New fields may be
added with defaults; existing ones stay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from ..data.layout import missing_split_message, prepare_command


@dataclass(frozen=True)
class Batches:
    """The batch sizes a task builds its datasets and evaluation with (the engine's, from ``cfg.train``).

    Attributes:
        train: examples (a language model: streams) per device per training step.
        eval: examples (streams) per evaluation batch.
    """

    train: int
    eval: int


@dataclass
class Evaluation:
    """What a task's evaluation of one split returns.

    Attributes:
        metrics: named with their split, e.g. ``{"test/micro_f1": 0.95}``.
        rows: optional per-example rows (JSON-serialisable dicts, e.g. predictions and their
            scores), written by the engine to ``<run>.<split>.predictions.jsonl`` beside the record.
    """

    metrics: dict[str, float]
    rows: list[dict[str, Any]] | None = None


def first_examples(dataset: torch.utils.data.Dataset, n: int) -> torch.utils.data.Dataset:
    """The first ``n`` examples of a map-style dataset (all of them when it has fewer)."""
    return torch.utils.data.Subset(dataset, range(min(n, len(dataset))))


@dataclass
class Task:
    """A task ready to train.

    Attributes:
        model: ``forward(**batch) -> {"loss": scalar, ...}`` (Trainer-compatible); its output
            layer is a loss head from :mod:`softmax_zoo.losses`.
        train_dataset: map-style or iterable dataset of examples the collator understands.
        eval_datasets: split name ("validation", "test") -> dataset.
        collator: list of examples -> batch dict of tensors.
        evaluate: (model, split, dataset) -> :class:`Evaluation`.
        data_meta: the prepared data's meta.json (counts, source, sha256), copied into the record.
        info: anything else worth recording (tokenizer, truncation counts, ...).
        callbacks: extra ``transformers.TrainerCallback``s the task needs during training
            (e.g. the LM's validation-perplexity-against-time curve).
        subset: (dataset, n) -> the dataset's first n examples, what ``train.eval_subset``
            evaluates (:func:`first_examples` for a map-style dataset).
    """

    model: nn.Module
    train_dataset: torch.utils.data.Dataset
    eval_datasets: dict[str, torch.utils.data.Dataset]
    collator: Callable[[list[Any]], dict[str, torch.Tensor]]
    evaluate: Callable[[nn.Module, str, torch.utils.data.Dataset], Evaluation]
    data_meta: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    callbacks: list[Any] = field(default_factory=list)
    subset: Callable[[Any, int], Any] = first_examples


def split_prefix(split: str) -> str:
    """The metric prefix of a split: "validation" -> "val"; "test" and "train" stay as they are."""
    return "val" if split == "validation" else split


def require_prepared(data_dir: str | Path, task: str, files: tuple[str, ...] = ("meta.json",)) -> Path:
    """Return ``data_dir`` as a Path if it holds ``files``; otherwise say how to prepare it.

    Task builders call this first so that a missing dataset fails before any model is built.

    Raises:
        FileNotFoundError: naming the missing files and the ``make data TASK=<task>`` command, or, for a
            split the release lacks, what is missing and what the task can do instead.
    """
    path = Path(data_dir)
    missing = [name for name in files if not (path / name).is_file()]
    if missing:
        why = missing_split_message(path, task, missing)  # a release that lacks the split: preparing again cannot help
        if why:
            raise FileNotFoundError(why)
        raise FileNotFoundError(
            f"prepared data for task {task!r} not found: {', '.join(missing)} missing in {path.resolve()}; "
            f"run `{prepare_command(task, path)}` first"
        )
    return path
