"""What the training entry point (``softmax_zoo.train``) needs from a task.

Every experiment is task × model × loss. A task module (classification, seq2seq, lm) exposes
``build_task(cfg) -> Task``, named in its config as ``configs/task/<name>.yaml: builder``; the
entry point then trains ``Task.model`` with the transformers ``Trainer`` and calls
``Task.evaluate`` on each split. New fields may be added with defaults; existing ones stay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn


@dataclass
class Task:
    """A task ready to train.

    Attributes:
        model: ``forward(**batch) -> {"loss": scalar, ...}`` (Trainer-compatible); its output
            layer is a loss head from :mod:`softmax_zoo.losses`.
        train_dataset: map-style or iterable dataset of examples the collator understands.
        eval_datasets: split name ("validation", "test") -> dataset.
        collator: list of examples -> batch dict of tensors.
        evaluate: (model, split, dataset) -> metrics named with their split, e.g.
            ``{"test/micro_f1": 0.95}``.
        data_meta: the prepared data's meta.json (counts, source, sha256), copied into the record.
        info: anything else worth recording (tokenizer, truncation counts, ...).
    """

    model: nn.Module
    train_dataset: torch.utils.data.Dataset
    eval_datasets: dict[str, torch.utils.data.Dataset]
    collator: Callable[[list[Any]], dict[str, torch.Tensor]]
    evaluate: Callable[[nn.Module, str, torch.utils.data.Dataset], dict[str, float]]
    data_meta: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
