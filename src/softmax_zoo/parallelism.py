"""How a training run spreads over processes: one strategy object that the engine asks (:func:`of`).

- :class:`DataParallel`: one process, or DistributedDataParallel under ``torchrun`` (accelerate sets it up): each
  rank holds the whole model and trains on its share of the batches.
- :class:`VocabParallel`: ``train.vocab_parallel=true``: each rank runs the whole body on the same batches and holds
  an even share of the output head's vocabulary (:mod:`softmax_zoo.vocab_parallel_training`).

What does not depend on the strategy is decided by the model or the process group: a model holding a sharded head
clips to the norm over every shard (:class:`softmax_zoo.trainer.ZooTrainer`), and rank 0 writes the run's files
(:func:`softmax_zoo.vocab_parallel_training.is_writer`).
"""

from __future__ import annotations

import logging
from typing import ClassVar, Protocol

from omegaconf import DictConfig
from torch import nn
from transformers import TrainingArguments

from . import memory_plan, vocab_parallel_training
from .losses.methods.sampled import seed_samplers

log = logging.getLogger(__name__)


class Parallelism(Protocol):
    can_checkpoint: ClassVar[bool]  # whether a checkpoint holds the whole run (one on request, one every N minutes)

    def start(self, cfg: DictConfig) -> None:
        """Set up the processes before the model is built."""

    def prepare(self, model: nn.Module, cfg: DictConfig, args: TrainingArguments, precision: str) -> None:
        """Fit the built model, its weights loaded (``init_from``), to the processes before the Trainer is made."""


class DataParallel:
    can_checkpoint: ClassVar[bool] = True

    def start(self, cfg: DictConfig) -> None:
        """Nothing: accelerate joins torchrun's process group when the Trainer is made."""

    def prepare(self, model: nn.Module, cfg: DictConfig, args: TrainingArguments, precision: str) -> None:
        """On CUDA, refuse a run that cannot fit the free memory (:func:`softmax_zoo.memory_plan.check_run`), before
        any step. With several ranks, each rank's samplers draw with ``seed + rank``: every rank starts from
        ``cfg.seed``, and the ranks' negatives must differ."""
        plan = memory_plan.check_run(model, cfg, args.device, precision)
        if plan is not None:
            log.info("memory plan (%s rows per head per step): %s", f"{plan.rows:,}", plan.describe())
        if args.world_size > 1:
            seed_samplers(model, cfg.seed + args.process_index, args.device)


class VocabParallel:
    can_checkpoint: ClassVar[bool] = False  # each rank holds another shard of the head

    def start(self, cfg: DictConfig) -> None:
        vocab_parallel_training.start(cfg)

    def prepare(self, model: nn.Module, cfg: DictConfig, args: TrainingArguments, precision: str) -> None:
        """Each output head becomes this rank's shard of its rows (the whole head's, ``init_from`` loaded before).
        The samplers keep one seed: the shards' candidates must be the same draws on every rank. No memory plan:
        it counts a whole head."""
        vocab_parallel_training.shard_heads(model)


def of(cfg: DictConfig) -> Parallelism:
    """The strategy ``cfg.train`` asks for."""
    return VocabParallel() if vocab_parallel_training.enabled(cfg) else DataParallel()
