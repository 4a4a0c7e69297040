"""How a task turns the ``model`` and ``loss`` configs into a model, and one evaluation-mode helper."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import hydra
import torch
from hydra.errors import InstantiationException
from omegaconf import DictConfig, OmegaConf
from torch import nn

from ..losses import OutputHead
from .contracts import Contract
from .heads import build_head

MakeHead = Callable[..., OutputHead]  # (in_features, weight=None) -> OutputHead
# Keys of a model config that describe it to the task instead of being constructor arguments:
# its name (for people), the tokenizer the task loads to encode the data, and whether that
# tokenizer lower-cases (null: as its own files say).
DESCRIPTIVE_KEYS = ("name", "tokenizer", "lowercase")


def head_factory(
    loss_cfg: DictConfig | dict,
    num_classes: int,
    class_counts: Sequence[float] | torch.Tensor | None = None,
) -> MakeHead:
    """The ``make_head(in_features, weight=None)`` hook every model receives.

    Args:
        loss_cfg: the composed ``cfg.loss``.
        num_classes: C, what the task predicts (classes, vocabulary).
        class_counts: (C,) training frequencies for ``auto`` head settings.
    """

    def make_head(in_features: int, weight: torch.Tensor | None = None) -> OutputHead:
        return build_head(loss_cfg, in_features, num_classes, weight=weight, class_counts=class_counts)

    return make_head


def model_target(model_cfg: DictConfig | dict) -> str:
    """The model a config names, as errors name it: "softmax_zoo.models.mlp.MLPClassifier (model=mlp)"."""
    return f"{model_cfg.get('_target_')} (model={model_cfg.get('name')})"


def build_model(model_cfg: DictConfig, make_head: MakeHead, *, contract: Contract | None = None, **sizes: Any) -> nn.Module:
    """``hydra.utils.instantiate(cfg.model, make_head=..., **sizes)`` without the descriptive keys.

    Args:
        model_cfg: the composed ``cfg.model`` (``_target_`` + constructor arguments).
        make_head: the output-layer hook (:func:`head_factory`).
        contract: the task family's (:mod:`softmax_zoo.models.contracts`): its config keys are checked before the
            model is built, its members after; None checks neither.
        sizes: what the task provides (e.g. ``vocab_size``, ``num_classes``, ``in_features``).

    Raises:
        ValueError: the config has no ``_target_``, its target does not accept what this task
            provides (a model of another task family), or the config or the model lacks what ``contract``
            names; the message names the model and what is missing.
    """
    plain = OmegaConf.to_container(model_cfg, resolve=True) if isinstance(model_cfg, DictConfig) else dict(model_cfg)
    if "_target_" not in plain:
        raise ValueError(f"model config needs a _target_ (a model class or builder), got keys {sorted(plain)}")
    if contract is not None:
        contract.check_config(plain, model_target(plain))
    model = _instantiate(plain, make_head, sizes)
    if contract is not None:
        contract.check_model(model, model_target(plain))
    return model


def _instantiate(plain: dict[str, Any], make_head: MakeHead, sizes: dict[str, Any]) -> nn.Module:
    args = {k: v for k, v in plain.items() if k not in DESCRIPTIVE_KEYS}
    try:
        return hydra.utils.instantiate(args, make_head=make_head, **sizes)
    except InstantiationException as e:
        cause = e.__cause__
        if isinstance(cause, TypeError):
            raise ValueError(
                f"model {model_target(plain)} does not fit this task, which provides "
                f"make_head and {sorted(sizes)}: {cause}"
            ) from cause
        if isinstance(cause, ValueError):
            raise cause  # the model's own message ("dropout must be in [0, 1), got 2")
        raise


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """Eval mode and no gradients inside the block; the model's training mode is restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)
