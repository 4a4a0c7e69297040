"""What each task family reads of its model: one :class:`typing.Protocol` per family, checked when the model is built.

A model of a family is any ``nn.Module`` whose instance has every member its family's protocol declares (an
attribute set in ``__init__`` counts), built from a ``configs/model/*.yaml`` that has the keys the family's task
reads. :func:`softmax_zoo.models.build_model` checks both and names what is missing, so a new model fails at build
time instead of deep inside training or evaluation. The README's "Extend it" table lists the same members
(``tests/models/test_contracts.py`` compares them).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import nn

from ..losses import OutputHead


class ClassifierModel(Protocol):
    """Text classification (:mod:`softmax_zoo.tasks.classification`), e.g. :class:`~softmax_zoo.models.classifier.TextClassifier`."""

    head: OutputHead
    num_classes: int  # C
    pooling: str  # "cls" or "mean", part of the feature cache's key
    feature_encoder: Callable[[], nn.Module] | None  # set: the task caches pooled features (B, d) and trains the top
    state_encoder: Callable[[], nn.Module] | None  # set: the task caches the lower layers' token states (B, T, d)

    def hidden(self, input_ids=None, attention_mask=None, features=None, states=None) -> torch.Tensor:
        """Token ids (B, T), cached ``states`` (B, T, d) or ``features`` (B, d) -> the head's input (B, d)."""


class LanguageModel(Protocol):
    """Language modelling (:mod:`softmax_zoo.tasks.lm`); :class:`~softmax_zoo.models.stream_lm.StreamLanguageModel` has it all."""

    head: OutputHead
    vocab_size: int  # V
    tokens_trained: int

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N, d) -> (N, V) log-probabilities."""

    def reset_eval_state(self) -> None:
        """Forget the evaluation streams' carried context."""

    def exclude_time(self, seconds: float) -> None:
        """Leave ``seconds`` spent outside training out of the tokens/second."""

    def throughput(self) -> dict[str, float]:
        """``train/tokens_per_second`` and ``train/tokens`` (or {})."""

    def resume_state(self) -> dict[str, Any]:
        """What a checkpoint keeps besides the weights."""

    def load_resume_state(self, state: dict[str, Any]) -> None:
        """Go on from a checkpoint's :meth:`resume_state`."""


class Seq2SeqModel(Protocol):
    """Sequence-to-sequence (:mod:`softmax_zoo.tasks.seq2seq`), e.g. :class:`~softmax_zoo.models.unilm.UniLM`."""

    head: OutputHead
    encoder: nn.Module  # its ``config.max_position_embeddings`` bounds source + target
    transform: nn.Module  # encoder states -> the head's input
    mask_prob: float  # share of target tokens masked in training
    max_pred: int  # at most this many predicted positions per example
    segment_ids: tuple[int, int]  # the token-type ids of source and target
    fresh: list[str]  # weights that start untrained (recorded)

    def run(self, input_ids, token_type_ids, position_ids, mask, cache=None) -> tuple[torch.Tensor, list]:
        """New positions (B, Lq), attending to ``cache`` -> states (B, Lq, d) and their keys/values."""

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., d) encoder states -> (..., V) log-probabilities."""


class FeatureModel(Protocol):
    """The generated classification task (:mod:`softmax_zoo.tasks.synthetic`), e.g. :class:`~softmax_zoo.models.mlp.MLPClassifier`."""

    head: OutputHead
    num_classes: int  # C

    def log_probs(self, features: torch.Tensor) -> torch.Tensor:
        """(B, D) features -> (B, C) log-probabilities."""


@dataclass(frozen=True)
class Contract:
    """A family's model contract: the protocol its model meets and the ``cfg.model`` keys its task reads.

    Attributes:
        family: the task family (``configs/families/<family>.yaml``).
        protocol: what the built model must have.
        config_keys: keys the model config must have besides ``_target_``.
        optional_keys: keys the task reads when present.
    """

    family: str
    protocol: type
    config_keys: tuple[str, ...] = ()
    optional_keys: tuple[str, ...] = ()

    @property
    def members(self) -> tuple[str, ...]:
        """The names the protocol declares, annotated attributes first, in declaration order."""
        methods = [name for name, value in vars(self.protocol).items() if inspect.isfunction(value) and not name.startswith("_")]
        return (*inspect.get_annotations(self.protocol), *methods)

    def check_config(self, keys: set[str] | Any, target: str) -> None:
        """``ValueError`` naming the model config keys of :attr:`config_keys` that ``keys`` lacks."""
        missing = [k for k in self.config_keys if k not in keys]
        if missing:
            raise ValueError(
                f"model {target} does not fit the {self.family} family: its config lacks {missing} "
                f"(the {self.family} task reads {list(self.config_keys)}; softmax_zoo.models.contracts)"
            )

    def check_model(self, model: nn.Module, target: str) -> None:
        """``ValueError`` naming the members of :attr:`protocol` that ``model`` lacks."""
        missing = [name for name in self.members if not hasattr(model, name)]
        if missing:
            raise ValueError(
                f"model {target} does not fit the {self.family} family: it lacks {missing} "
                f"(softmax_zoo.models.contracts.{self.protocol.__name__})"
            )


CLASSIFICATION = Contract("classification", ClassifierModel, ("tokenizer", "pretrained", "pooling"), ("cache_layers",))
LM = Contract("lm", LanguageModel)
SEQ2SEQ = Contract("seq2seq", Seq2SeqModel, ("tokenizer",), ("lowercase", "checkpoint"))
SYNTHETIC = Contract("synthetic", FeatureModel)
CONTRACTS = {c.family: c for c in (CLASSIFICATION, LM, SEQ2SEQ, SYNTHETIC)}  # by family name
