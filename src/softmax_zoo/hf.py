"""Train any Hugging Face language model with a softmax_zoo head, in one line::

    from softmax_zoo.hf import use_head
    model = use_head(model, "sparse_softmax", k=20, chunk_size="auto")
    model(input_ids, labels=labels).loss.backward()     # never holds the (tokens, vocabulary) logits

The head is tied to the model's own output layer (``get_output_embeddings()``: its weight, and
its bias if it has one), so the model keeps its parameters, its state dict and its checkpoints.
``model(..., labels=...)`` then computes its ``loss`` with the head:

- causal LMs: position t predicts label t + 1 (labels shifted as transformers shifts them,
  or the ``shift_labels`` given); masked LMs: every labelled position, after the model's own
  head transform (e.g. BERT's ``cls.predictions.transform``); ``ignore_index`` (-100) ignored;
- the mean over the labelled tokens, or their sum / ``num_items_in_batch`` when the Trainer
  passes it (gradient accumulation), as transformers' own losses; with ``class_weight`` the mean
  is Σ w_t·ℓ / Σ w_t over the labelled tokens (``num_items_in_batch``, a count, divides as given);
- the head's loss options (``z_loss``, ``softcap``, ``class_weight``, ``temperature``,
  ``return_lse``, ``return_token_accuracy``, ``return_entropy``, ``return_target_log_prob``;
  ``softmax_zoo.losses.machinery.options``) as head options; the output then also carries ``lse``,
  ``entropy``, ``target_log_prob`` (batch, positions) and ``token_accuracy``; ``shift`` is use_head's own;
- models that scale their logits after the output layer (Cohere's ``logit_scale``, Granite's
  ``logits_scaling``) train through the head with that scale as its temperature
  (:func:`model_temperature`), and soft-capping models (Gemma 2/3) with their cap as its ``softcap``;
- in training mode the head reads the hidden states inside the output layer's call, in place of
  its logits, and the output's ``logits`` is None; with ``chunk_size`` set the logits are never
  held. In eval mode the model computes its logits as usual and the loss is the head's on them
  (for sampled softmax: the full softmax), so evaluation returns logits for metrics.
- the head uses the weight the output layer applies at that moment: under FSDP2
  (``fully_shard``) the gathered weight, which the layer's own hooks gather for the call and
  again for the backward; with a peft LoRA adapter on the output layer, ``W + scaling · B A``
  (:func:`projection`).

Without labels the forward is the model's own, so ``generate()`` is unchanged.

The seam: the model's ``forward`` and its output layer's ``forward`` are replaced on the
instances (their classes, parameters and state dict stay as they are); in training with labels
the output layer returns the head's summed loss in place of its logits, so whatever the model
does between its body and the output layer (final norm, head transform) runs unchanged, hooks on
the layer (FSDP2's gather and reshard) wrap the loss, and no architecture is patched by hand.
transformers' ``model.loss_function`` hook is not used: it is handed the logits, already
materialised, and BERT-style models do not call it. The variant and its options are kept in
``model.config.softmax_zoo_head`` (an extra config.json key that plain transformers loads and
ignores), so ``use_head(model)`` after ``from_pretrained`` restores the same head.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import sys
import types
from typing import Any

from .extras import require

require("hf", "softmax_zoo.hf")  # before omegaconf, transformers: one line naming the extra

import torch  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402
from torch import nn  # noqa: E402

from .config import accepted_arguments, compose_option, group_options, unknown_name  # noqa: E402
from .losses import LinearHead, variants  # noqa: E402
from .losses.machinery.options import HeadOutput, check_loss_options, mean_count, reshape_output  # noqa: E402

__all__ = ["head_of", "model_temperature", "projection", "remove_head", "tied_variants", "use_head"]

# Registered variants that cannot share the model's output layer, and why.
REFUSED = {
    "adaptive_softmax": (
        "adaptive softmax has its own projections (a head over the frequent words and clusters, then "
        "smaller tail projections), so it cannot reuse the model's (vocabulary, hidden) output layer: "
        "the model would no longer generate or save with its own weights. Train it in softmax_zoo's "
        "own models (python -m softmax_zoo.train loss=adaptive_softmax)"
    ),
}
SET_BY_USE_HEAD = ("bias", "reduction", "weight", "in_features", "num_classes", "shift")
# Config fields of models that scale their logits after the output layer, and the temperature T
# (z ← z / T) that scale is: Cohere multiplies its logits by ``logit_scale`` (T = 1 / s), Granite
# divides them by ``logits_scaling`` (T = s). The head applies it as its ``temperature``, times any
# temperature given to use_head. Gemma 2/3's soft-capping, ``final_logit_softcapping``, becomes the
# head's ``softcap`` (``losses/machinery/options.py``); it is applied before the temperature.
LOGIT_SCALES = {"logit_scale": lambda s: 1.0 / s, "logits_scaling": lambda s: s}
SOFTCAP_FIELD = "final_logit_softcapping"
CONFIG_KEY = "softmax_zoo_head"


def tied_variants() -> dict[str, type[LinearHead]]:
    """Registered variant names (those of configs/loss/*.yaml) -> heads with one (C, d) projection,
    which can share the model's output layer (a variant registered outside the package included)."""
    return {name: v.head for name, v in variants().items() if issubclass(v.head, LinearHead) and name not in REFUSED}


def use_head(model: nn.Module, loss: str | dict | DictConfig | None = None, **head_options) -> nn.Module:
    """Compute ``model``'s loss with a softmax_zoo head tied to its output layer; returns ``model``.

    Args:
        model: a transformers ``PreTrainedModel``, causal LM or masked LM, whose
            ``get_output_embeddings()`` is its (C, d) output layer.
        loss: a variant name (``"softmax"``, ``"stable_softmax"``, ``"sparse_softmax"``,
            ``"sampled_softmax"``): its loss config configs/loss/<name>.yaml, composed (for
            ``sampled_softmax`` its ``defaults:`` list picks the uniform sampler and m = 16); or a
            loss config (``_target_`` + keyword arguments, e.g. a configs/loss/*.yaml file loaded
            with OmegaConf, a ``defaults:`` list composed as Hydra would; ``auto`` values are filled
            as :func:`softmax_zoo.models.heads.build_head` fills them). None: the head recorded in
            ``model.config.softmax_zoo_head`` by an earlier ``use_head`` (e.g. before
            ``save_pretrained``).
        **head_options: the head's keyword arguments (``chunk_size``, ``k``, ``label_smoothing``,
            ``ignore_index``, ``sampler``, ``num_samples``, the loss options ``z_loss``, ``softcap``,
            ``class_weight`` (a list is recorded in the config, a tensor is not), ``return_lse``,
            ``return_token_accuracy``, ``temperature``, ``return_entropy``, ``return_target_log_prob``,
            ...), over the config's; an unknown one
            is a ``ValueError`` naming it and listing the head's. ``sampler`` is a ``Sampler``, a
            sampler config, or the name of one of configs/loss/sampler/*.yaml (``"uniform"``,
            ``"unigram"``, ``"quadratic"``, ``"quadratic_centred"``, ``"softmax"``).
            ``class_counts`` (C,) goes to ``build_head`` for ``counts: auto`` (``sampler="unigram"``).
            ``bias``, ``reduction`` and ``shift`` are the model's (its output bias; the transformers
            mean; the causal shift use_head makes) and refused.

    Calling it again replaces the head. For ``SparseSoftmaxHead(full_softmax_steps=...)`` give
    the Trainer ``softmax_zoo.trainer.TrainingStepToHeads(head_of(model))``.
    """
    if loss is None:
        recorded = getattr(model.config, CONFIG_KEY, None)
        if recorded is None:
            raise ValueError(f"no loss given and model.config has no {CONFIG_KEY} recorded by use_head")
        loss, head_options = recorded["loss"], {**recorded["options"], **head_options}
    objective = _objective(model)
    layer = model.get_output_embeddings()
    if not isinstance(getattr(layer, "weight", None), torch.Tensor) or layer.weight.dim() != 2:
        raise ValueError(
            f"{type(model).__name__}.get_output_embeddings() is {type(layer).__name__}, not a (C, d) linear layer"
        )
    for option in SET_BY_USE_HEAD:
        if option in head_options:
            raise ValueError(
                f"{option} is set by use_head (the model's own output layer, the transformers mean and the causal shift)"
            )
    model_cap = getattr(model.config, SOFTCAP_FIELD, None)
    if model_cap is not None:  # the model caps its logits: so does the head, with its value
        if head_options.get("softcap", model_cap) != model_cap:
            raise ValueError(
                f"softcap={head_options['softcap']} differs from the model's {SOFTCAP_FIELD}={model_cap}, "
                "which the head applies"
            )
        head_options = {**head_options, "softcap": model_cap}
    scale = model_temperature(model.config)
    if "forward" in vars(model):
        remove_head(model)
    loss = _plain(loss)
    built = dict(head_options)
    if scale != 1.0:  # the model's logit scale, inside the head: its temperature times the one given
        check_loss_options(temperature=head_options.get("temperature", 1.0))
        built["temperature"] = scale * head_options.get("temperature", 1.0)
    build = functools.partial(_build_head, loss, built)
    head = build(layer)  # bad options fail here, not at the first forward
    model.__dict__["_softmax_zoo"] = {"build": build, "head": head, "objective": objective,
                                      "temperature": head_options.get("temperature", 1.0)}
    model.forward = types.MethodType(_forward_with(type(model).forward), model)
    layer.forward = types.MethodType(_output_layer_forward, layer)
    layer.softmax_zoo_loss = None
    record = {"loss": loss, "options": {k: v for k, v in head_options.items() if k != "class_counts"}}
    if _is_json(record):
        setattr(model.config, CONFIG_KEY, record)
    elif hasattr(model.config, CONFIG_KEY):
        delattr(model.config, CONFIG_KEY)
    return model


def remove_head(model: nn.Module) -> nn.Module:
    """Undo :func:`use_head`: the model's own forward, loss and config again; returns ``model``."""
    if "_softmax_zoo" not in vars(model):
        return model
    del model.__dict__["_softmax_zoo"], model.__dict__["forward"]
    layer = model.get_output_embeddings()
    for name in ("forward", "softmax_zoo_loss"):
        layer.__dict__.pop(name, None)
    if hasattr(model.config, CONFIG_KEY):
        delattr(model.config, CONFIG_KEY)
    return model


def head_of(model: nn.Module) -> LinearHead:
    """The head :func:`use_head` put on ``model`` (tied to its output layer's parameters)."""
    if "_softmax_zoo" not in vars(model):
        raise ValueError("the model has no softmax_zoo head (call use_head first)")
    return _current_head(model)


def model_temperature(config) -> float:
    """The temperature T (z ← z / T) of a model that scales its logits after the output layer
    (:data:`LOGIT_SCALES`), 1.0 for any other; ``ValueError`` for a scale that is not a finite number > 0."""
    temperature = 1.0
    for field, to_temperature in LOGIT_SCALES.items():
        value = getattr(config, field, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"the model's {field}={value!r} is not a finite scale > 0, which use_head can apply")
        temperature *= float(to_temperature(value))
    return temperature


def _objective(model: nn.Module) -> str:
    """The model's objective, "causal" or "masked", from transformers' ``loss_type`` (set from the class name)."""
    loss_type = getattr(model, "loss_type", None)
    if loss_type == "ForMaskedLM":
        return "masked"
    if loss_type == "ForCausalLM" or (loss_type is None and model.can_generate()):
        return "causal"  # e.g. GPT2LMHeadModel: no loss_type, the causal loss by default
    raise ValueError(
        f"use_head supports causal and masked language models; {type(model).__name__} has loss_type={loss_type!r}"
    )


def _build_head(loss: str | dict, options: dict, layer: nn.Module) -> LinearHead:
    """The head for ``loss`` tied to ``layer``'s weight (C, d) and bias (C,) or None, summing its loss."""
    from .models.heads import SEARCH_KEY, build_head  # imports hydra

    num_classes, in_features = layer.weight.shape
    options = dict(options)
    counts = options.pop("class_counts", None)
    cfg = _loss_config(loss)
    if str(cfg.get("_target_", "")).rsplit(".", 1)[-1] == "AdaptiveSoftmaxHead":
        raise ValueError(REFUSED["adaptive_softmax"])
    if isinstance(options.get("sampler"), str):
        options["sampler"] = compose_option("loss/sampler", options["sampler"])
    given = {k: v for k, v in options.items() if _is_json(v)}  # config values; objects (a Sampler) go as they are
    cfg = {**cfg, **given, "bias": False, "reduction": "sum"}
    cfg.pop(SEARCH_KEY, None)
    objects = {k: v for k, v in options.items() if k not in given}
    _check_options(cfg, options)
    for key in objects:
        cfg.pop(key, None)
    head = build_head(cfg, in_features, num_classes, weight=layer.weight, class_counts=counts, objects=objects)
    if not isinstance(head, LinearHead):
        raise ValueError(f"{type(head).__name__} has no single (C, d) projection to tie to the model's output layer")
    if getattr(layer, "bias", None) is not None:
        head.bias = layer.bias  # the same Parameter: trained once, saved once
    if head.class_weight is not None:  # the head is not a submodule: follow the layer, in its compute dtype
        head.class_weight = head.class_weight.to(layer.weight.device, torch.promote_types(layer.weight.dtype, torch.float32))
    return head


def _loss_config(loss: str | dict) -> dict:
    """The loss config of ``loss``: a variant's configs/loss/<name>.yaml (or, for a variant registered
    without one, its class alone), or the config given; its ``defaults:`` list composed."""
    if isinstance(loss, dict):
        return compose_option("loss", loss) if "defaults" in loss else dict(loss)
    if loss in REFUSED:
        raise ValueError(REFUSED[loss])
    if loss in group_options("loss"):
        return compose_option("loss", loss)
    heads = tied_variants()
    if loss not in heads:
        raise ValueError(unknown_name("variant", loss, heads) + "; or pass a loss config")
    return {"_target_": f"{heads[loss].__module__}.{heads[loss].__qualname__}"}


def _check_options(cfg: dict, options: dict) -> None:
    """Every key of the loss config and of ``options`` is an argument of the head (``class_counts`` aside)."""
    target = cfg.get("_target_")
    if not target:
        raise ValueError(f"the loss config needs a _target_ (a head class), got keys {sorted(cfg)}")
    accepted = accepted_arguments(target) | {"class_counts"}
    for key in [*cfg, *options]:
        hydra_key = key.startswith("_") and key.endswith("_")  # _target_, _convert_, ...
        if key not in accepted and not hydra_key:
            settable = accepted - {"in_features", "num_classes", *SET_BY_USE_HEAD}
            raise ValueError(unknown_name(f"option of {target.rpartition('.')[2]}", key, settable))


def _current_head(model: nn.Module) -> LinearHead:
    """The head, rebuilt if the output layer's parameters were replaced (e.g. resize_token_embeddings)."""
    state = model.__dict__["_softmax_zoo"]
    layer, head = model.get_output_embeddings(), state["head"]
    if head.weight is not layer.weight or head.bias is not getattr(layer, "bias", None):
        head = state["head"] = state["build"](layer)
    return head


def _output_layer_forward(self: nn.Module, hidden: torch.Tensor) -> torch.Tensor:
    """The output layer's forward; while the model's forward computes a head's loss, that loss (a scalar).

    The head's whole output (its loss, and lse / token accuracy when asked) is also kept on the layer
    (``softmax_zoo_output``), which the loss is read from: what the model does to its logits after the
    layer (Gemma 2's soft-capping) then never reaches it.
    """
    if self.softmax_zoo_loss is not None:
        output = self.softmax_zoo_output = self.softmax_zoo_loss(hidden)
        return output.loss if isinstance(output, HeadOutput) else output
    return type(self).forward(self, hidden)


def projection(layer: nn.Module) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The (C, d) weight and (C,) bias (or None) that ``layer``'s forward applies now, differentiable.

    A plain linear layer: its parameters (under FSDP2, inside the layer's call, the gathered
    ones). A peft LoRA layer with active, unmerged adapters: ``W + Σ_a scaling_a · B_a A_a``
    (Hu et al. 2021, "LoRA", eq. 3; peft's own ``get_delta_weight``), so the loss and its
    gradients reach A and B through the head.

    Raises:
        ValueError: another peft tuner on the output layer, a LoRA variant (e.g. DoRA), a LoRA bias
            on B, or LoRA dropout in training (a row-wise mask: no single weight applies to every row).
    """
    peft = sys.modules.get("peft")  # a peft layer exists only where peft is imported
    if peft is None or not isinstance(layer, peft.tuners.tuners_utils.BaseTunerLayer):
        return layer.weight, getattr(layer, "bias", None)
    from peft.tuners.lora import LoraLayer

    if not isinstance(layer, LoraLayer) or not isinstance(layer.base_layer, nn.Linear):
        raise ValueError(f"the output layer is a peft {type(layer).__name__}; use_head supports LoRA on a linear output layer")
    base = layer.base_layer
    weight = base.weight
    if layer.disable_adapters or layer.merged:  # merged: the base weight holds the adapters
        return weight, base.bias
    for name in layer.active_adapters:
        if name not in layer.lora_A:
            continue
        if name in getattr(layer, "lora_variant", {}) or layer.lora_B[name].bias is not None:
            raise ValueError(f"adapter {name!r} is a LoRA variant (e.g. DoRA) or has a bias on B; use_head supports plain LoRA")
        dropout = layer.lora_dropout[name]
        if layer.training and isinstance(dropout, nn.Dropout) and dropout.p > 0:
            raise ValueError(
                f"adapter {name!r} has lora_dropout={dropout.p} on the output layer: its row-wise mask has no single "
                "weight for a head to use; give the output layer lora_dropout=0"
            )
        weight = weight + layer.get_delta_weight(name).to(weight.dtype)  # (C, d)
    return weight, base.bias


def _head_loss(layer: nn.Module, head: LinearHead, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The head's summed loss on ``hidden`` (..., d) through the projection ``layer`` applies now."""
    weight, bias = projection(layer)
    if weight is head.weight and bias is head.bias:
        return head(hidden, target)
    params = {"weight": weight} if bias is None else {"weight": weight, "bias": bias}
    return torch.func.functional_call(head, params, (hidden, target))


def _forward_with(model_forward):
    """``model_forward`` with the loss of the head; the signature is the model's (the Trainer reads it)."""
    names = [p for p in inspect.signature(model_forward).parameters][1:]

    @functools.wraps(model_forward)
    def forward(self, *args, **kwargs):
        kwargs.update(zip(names, args))  # HF forwards take no *args: every argument has a name
        labels = kwargs.pop("labels", None)
        if labels is None:
            return model_forward(self, **kwargs)
        return _loss_forward(self, model_forward, labels, kwargs)

    return forward


def _loss_forward(model: nn.Module, model_forward, labels: torch.Tensor, kwargs: dict):
    state, head = model.__dict__["_softmax_zoo"], _current_head(model)
    num_items = kwargs.pop("num_items_in_batch", None)
    shift_labels = kwargs.pop("shift_labels", None)
    if head.training != model.training:
        head.train(model.training)  # the head is not a submodule: model.train() does not reach it
    if state["objective"] == "masked":
        target = labels
    elif shift_labels is not None:
        target = shift_labels
    else:  # position t predicts t + 1; the last position has nothing to predict
        target = nn.functional.pad(labels, (0, 1), value=head.ignore_index)[..., 1:]
    layer = model.get_output_embeddings()
    if model.training:
        layer.softmax_zoo_loss = lambda hidden: _head_loss(layer, head, hidden, target.to(hidden.device))
        try:
            out = model_forward(model, **kwargs)
        finally:
            layer.softmax_zoo_loss = None
            output = layer.__dict__.pop("softmax_zoo_output", None)
        total, logits = output, None  # the head's output, the loss of which the output layer returned
    else:
        out = model_forward(model, **kwargs)
        logits = out.logits  # (..., T, C)
        target = target.to(logits.device)
        total = reshape_output(_loss_of_logits(model, head, logits.reshape(-1, logits.shape[-1]), target.reshape(-1)),
                               target.shape, head.reduction)
    extras = total._asdict() if isinstance(total, HeadOutput) else {"loss": total}
    total = extras.pop("loss")
    if num_items is None:
        keep = target != head.ignore_index
        num_items = keep.sum() if head.class_weight is None else mean_count(head.class_weight, target * keep, keep)
    elif torch.is_tensor(num_items):
        num_items = num_items.to(total.device)
    fields = {k: v for k, v in out.items() if k not in ("loss", "logits")}
    result = type(out)(loss=total / num_items, logits=logits, **fields)
    for name, value in extras.items():  # lse, token_accuracy: beside the loss, as Liger's outputs carry them
        if value is not None:
            result[name] = value
    return result


def _loss_of_logits(model: nn.Module, head: LinearHead, logits: torch.Tensor, target: torch.Tensor):
    """The head's loss of the model's logits (N, C); those of a model that caps or scales them
    (Gemma 2/3, Cohere, Granite) are capped and scaled already, so the head's own softcap is off for
    them and its temperature is the one given to use_head alone."""
    given = model.__dict__["_softmax_zoo"]["temperature"]
    if getattr(model.config, SOFTCAP_FIELD, None) is None and head.options.temperature == given:
        return head.loss_from_logits(logits, target)
    options = head.options
    softcap = None if getattr(model.config, SOFTCAP_FIELD, None) is not None else options.softcap
    head.options = dataclasses.replace(options, softcap=softcap, temperature=given)
    try:
        return head.loss_from_logits(logits, target)
    finally:
        head.options = options


def _plain(loss: str | dict | DictConfig) -> str | dict:
    """A loss config as a plain dict (DictConfig -> dict); a name as is."""
    if isinstance(loss, str):
        return loss
    return OmegaConf.to_container(loss, resolve=True) if isinstance(loss, DictConfig) else dict(loss)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True
