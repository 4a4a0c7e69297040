"""Build a model's output head from the ``loss`` config group (configs/loss/*.yaml).

A loss config is a head's ``_target_`` plus its keyword arguments. Values the config cannot know
are written ``auto`` and filled here from the task:

- ``num_classes: auto`` (anywhere, e.g. ``UniformSampler``) -> the model's number of classes;
- ``counts: auto`` (e.g. ``UnigramSampler``) -> the task's class counts (frequencies in the
  training data, or the vocabulary counts of a language model);
- ``cutoffs: auto`` (``AdaptiveSoftmaxHead``) -> ``losses.optimal_cutoffs(counts, in_features,
  **cutoffs_search)`` (Grave et al. 2017's cost model), where ``cutoffs_search`` is a reserved
  key of the loss config (e.g. ``{num_clusters: 2, batch_size: 256, cost: null}``; ``cost`` may
  be a ``_target_: softmax_zoo.losses.methods.adaptive_cutoffs.MatmulCost`` node with fixed constants,
  else the matmul cost is measured on the running device) removed before the head is built.
  ``cutoffs`` may also be a list of class ids (ints) or of fractions of the number of
  classes (floats in (0, 1)); fractions are rounded to class ids, so the same config serves a
  50-class test task and a 100k-word vocabulary. Adaptive softmax assumes classes sorted by
  decreasing frequency (the data preparers number them that way).
- ``chunk_size: auto`` goes to the head as is (``losses.SoftmaxHead`` sizes its chunks itself).

:func:`check_loss_options` checks the options that are bad whatever the task (``loss.k=0``) before
any data or model is built (``preflight.check_config``, at the start of every run).

Which of a head's own options may be ``auto`` (``cutoffs``, ``chunk_size``) is what its variant
registered (``losses.registry.auto_options``); importing the ``_target_`` registers it.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import hydra
import torch
from hydra.errors import InstantiationException
from omegaconf import DictConfig, OmegaConf

from ..config import unknown_option
from ..losses import OutputHead, optimal_cutoffs
from ..losses.machinery.registry import auto_options

log = logging.getLogger(__name__)
AUTO = "auto"
SEARCH_KEY = "cutoffs_search"


def build_head(
    loss_cfg: DictConfig | dict,
    in_features: int,
    num_classes: int,
    *,
    weight: torch.Tensor | None = None,
    class_counts: Sequence[float] | torch.Tensor | None = None,
    objects: Mapping[str, Any] | None = None,
) -> OutputHead:
    """Instantiate the head described by ``loss_cfg``.

    Args:
        loss_cfg: ``_target_`` + keyword arguments (the composed ``cfg.loss``).
        in_features: d, the hidden size fed to the head.
        num_classes: C.
        weight: a (C, d) parameter to tie the projection to. Passing it demands tying: a head
            whose constructor takes no ``weight`` (adaptive softmax) raises ``ValueError``.
        class_counts: (C,) class frequencies, required by ``counts: auto`` / ``cutoffs: auto``.
        objects: constructor arguments a config cannot hold (e.g. a built ``Sampler``), passed as they are.

    Returns:
        The head, an :class:`~softmax_zoo.losses.OutputHead`.
    """
    plain = OmegaConf.to_container(loss_cfg, resolve=True) if isinstance(loss_cfg, DictConfig) else loss_cfg
    cfg = OmegaConf.create(plain)  # a private copy: auto values are filled in place
    if "_target_" not in cfg:
        raise ValueError(f"loss config needs a _target_ (a head class), got keys {sorted(cfg.keys())}")
    search = cfg.pop(SEARCH_KEY, None) or OmegaConf.create({})
    counts = None if class_counts is None else torch.as_tensor(class_counts)
    if counts is not None and counts.shape != (num_classes,):
        raise ValueError(f"class_counts must have shape ({num_classes},), got {tuple(counts.shape)}")
    head_cls = hydra.utils.get_class(cfg._target_)  # importing it registers its variant
    overrides = _fill_auto(cfg, num_classes, counts, where="loss", own=auto_options(head_cls))
    if "cutoffs" in cfg:
        cfg.cutoffs = _cutoffs(cfg.cutoffs, num_classes, in_features, counts, search)
        log.info("%s: cutoffs %s", cfg._target_, list(cfg.cutoffs))
    kwargs: dict[str, Any] = {"in_features": in_features, "num_classes": num_classes, **overrides, **(objects or {})}
    if weight is not None:
        if not _accepts(head_cls, "weight"):
            raise ValueError(
                f"{cfg._target_} cannot tie its output weight to another parameter, but a tied weight was "
                "demanded (set the model's tie_weights=false, or choose a head with one (C, d) projection)"
            )
        kwargs["weight"] = weight
    try:
        return hydra.utils.instantiate(cfg, **kwargs)
    except InstantiationException as e:
        if isinstance(e.__cause__, (ValueError, TypeError)):
            raise e.__cause__  # the losses module's own message ("k must be <= ...")
        raise


def check_loss_options(loss_cfg: DictConfig | dict) -> None:
    """Raise ``ValueError`` for an option of ``loss_cfg`` that is bad whatever the task (``loss.k=0``) or that the
    head does not take (``+loss.kk=3``: :func:`softmax_zoo.config.unknown_option`), before any data or model is
    built: the head class's ``check_options`` (:meth:`~softmax_zoo.losses.OutputHead.check_options`) with the
    options known now (not ``auto``, not a nested config such as a sampler). A ``_target_`` that is no
    :class:`OutputHead` is left to :func:`build_head`.
    """
    plain = OmegaConf.to_container(loss_cfg, resolve=True) if isinstance(loss_cfg, DictConfig) else dict(loss_cfg)
    target = plain.pop("_target_", None)
    head_cls = hydra.utils.get_class(target) if target else None
    if not (isinstance(head_cls, type) and issubclass(head_cls, OutputHead)):
        return
    plain.pop(SEARCH_KEY, None)
    for key in plain:  # +loss.kk=3: the head's own words, before the model is built
        if message := unknown_option(target, key, "loss"):
            raise ValueError(message)
    head_cls.check_options(**{k: v for k, v in plain.items() if v != AUTO and not isinstance(v, dict)})


def _fill_auto(
    node: DictConfig, num_classes: int, counts: torch.Tensor | None, where: str, own: tuple[str, ...]
) -> dict[str, Any]:
    """Replace ``num_classes: auto`` in place; return nested overrides holding the counts tensor.

    ``own``: the head's options whose ``auto`` is left for the head (or ``_cutoffs``) to resolve.
    """
    overrides: dict[str, Any] = {}
    for key in list(node.keys()):
        value = node[key]
        if isinstance(value, DictConfig):
            sub = _fill_auto(value, num_classes, counts, f"{where}.{key}", own)
            if sub:
                overrides[key] = sub
        elif value == AUTO and key == "num_classes":
            node[key] = num_classes
        elif value == AUTO and key == "counts":
            if counts is None:
                raise ValueError(f"{where}.counts is auto but no class counts were given (class_counts)")
            node[key] = None
            overrides[key] = counts
        elif value == AUTO and key not in own:
            understood = ", ".join(("num_classes", "counts", *own))
            raise ValueError(f"{where}.{key}: auto is only understood for {understood} (this head)")
    return overrides


def _cutoffs(
    value: Any, num_classes: int, in_features: int, counts: torch.Tensor | None, search: DictConfig
) -> list[int]:
    """``auto`` -> ``optimal_cutoffs``; fractions of C -> class ids; ints stay (checked by the head)."""
    if value == AUTO:
        if counts is None:
            raise ValueError("loss.cutoffs is auto but no class counts were given (class_counts)")
        search = hydra.utils.instantiate(search, _convert_="all")  # e.g. a MatmulCost under cost:
        return [int(c) for c in optimal_cutoffs(counts, in_features, **search)]
    out = []
    for c in value:
        if isinstance(c, float):
            if not 0.0 < c < 1.0:
                raise ValueError(f"a fractional cutoff must be in (0, 1), got {c}")
            c = round(c * num_classes)  # fraction of the classes -> class id
        out.append(int(c))
    return out


def _accepts(cls: type, name: str) -> bool:
    """Whether ``cls(...)`` takes a keyword argument ``name`` (explicitly or through ``**kwargs``)."""
    params = inspect.signature(cls).parameters
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

