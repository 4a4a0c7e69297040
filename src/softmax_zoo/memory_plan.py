"""The device memory a training run needs, part by part, checked before its first step.

:func:`plan` adds up, for a built model and the rows its output heads see per step:

- the parameters (as built: float32), the gradients of the trainable ones and the optimiser's state
  (:data:`OPTIMIZER_STATES` copies of them: AdamW 2, Adagrad 1, plain SGD 0), kept in float32 by the
  Trainer whatever ``train.precision``;
- under bf16/fp16 autocast, the half-precision copies of the weights autocast caches for the forward
  (2 bytes a parameter, an upper bound: only the weights of matmuls are cast);
- each output head's largest per-step buffers, by what they hold (``OutputHead.step_buffers``: the
  (rows, C) logits or one chunk of them, the sampled head's candidate logits or gathered rows, the
  kernel sampler's tree and h⊗h): the sizes the heads' own ``memory.check_fits`` refuse at their
  first forward, so the plan and the heads cannot disagree.

The activations of the model's body are not estimated (they depend on the architecture and on what
autograd keeps); the plan is thus a lower bound of the run's peak memory, and a run it refuses cannot fit.

:func:`check` refuses a plan larger than the device's free memory with each part's size; the engine
runs it on CUDA before ``Trainer.train`` (:func:`check_run`). :func:`head_rows` is the number of
rows a head sees per optimiser step and device, from the config.
"""

from __future__ import annotations

import dataclasses

import torch
from omegaconf import DictConfig

from .losses import OutputHead
from .losses.machinery import memory

# Tensors of the optimiser's state per trainable parameter, by TrainingArguments.optim.
OPTIMIZER_STATES = {"adamw_torch": 2, "adamw_torch_fused": 2, "adamw_hf": 2, "adam": 2, "adagrad": 1, "sgd": 0}
HALF_PRECISIONS = ("bf16", "fp16")
ACTIVATIONS = "not estimated"


@dataclasses.dataclass(frozen=True)
class Plan:
    """The bytes a run needs, by part (``parts``: what -> bytes, heads' buffers named by head)."""

    parts: dict[str, int]
    rows: int  # rows each output head sees per step
    optim: str
    precision: str

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def head_bytes(self) -> int:
        """The heads' per-step buffers (the parts named ``head ...``)."""
        return sum(v for k, v in self.parts.items() if k.startswith("head"))

    def describe(self) -> str:
        """``parameters 6.1 GiB, gradients 6.1 GiB, ...``: every part with its size."""
        return ", ".join(f"{what} {memory.gib(nbytes)}" for what, nbytes in self.parts.items())


def float_bytes(params: list[torch.nn.Parameter]) -> int:
    return sum(p.numel() * p.element_size() for p in params)


def plan(model: torch.nn.Module, rows: int, optim: str, precision: str, free: int | None = None) -> Plan:
    """The :class:`Plan` of training ``model`` with ``rows`` rows per head per step.

    Args:
        model: the built model (on any device, ``meta`` included: only shapes are read).
        rows: rows each output head sees per step and device (:func:`head_rows`).
        optim: ``train.optim`` (a key of :data:`OPTIMIZER_STATES`).
        precision: the precision trained in (fp32, bf16, fp16; ``train.precision=auto`` resolved).
        free: the device's free bytes, for heads whose chunks follow it (None: a CPU's budget).

    Raises:
        ValueError: an optimiser whose state size is not known, named.
    """
    if optim not in OPTIMIZER_STATES:
        raise ValueError(f"train.optim={optim!r}: its state size is not known to the memory plan (known: {sorted(OPTIMIZER_STATES)})")
    params = list(model.parameters())  # shared (tied) parameters once
    trainable = [p for p in params if p.requires_grad]
    states = OPTIMIZER_STATES[optim]
    parts = {
        "parameters": float_bytes(params),
        "gradients": float_bytes(trainable),
        f"optimiser state ({optim}: {states} per parameter)": states * float_bytes(trainable),
    }
    if precision in HALF_PRECISIONS:
        parts[f"{precision} weight copies"] = 2 * sum(p.numel() for p in params if p.is_floating_point())
    for name, head in model.named_modules():
        if isinstance(head, OutputHead):
            for what, nbytes in head.step_buffers(rows, free).items():
                parts[f"head {name or 'model'}: {what}"] = nbytes
    return Plan(parts, rows, optim, precision)


def head_rows(cfg: DictConfig) -> int:
    """Rows each output head sees per optimiser step and device: a language model's batch × bptt, a
    UniLM's batch × its masked positions (``model.max_pred``), a classifier's batch."""
    batch = int(cfg.train.batch_size)
    if "bptt" in cfg.task:
        return batch * int(cfg.task.bptt)
    if "max_pred" in cfg.model:
        return batch * int(cfg.model.max_pred)
    return batch


def refusal(plan: Plan, free: int, device: torch.device | str) -> str:
    return (
        f"the run needs at least {memory.gib(plan.total)} on {device}, which has {memory.gib(free)} free "
        f"(activations {ACTIVATIONS}; {plan.rows:,} rows per head per step): {plan.describe()}. Nothing was trained: "
        "lower train.batch_size, set loss.chunk_size=auto (softmax heads), or make the head's buffer smaller "
        "(e.g. loss.sampler.leaf_size for the kernel tree)"
    )


def check(plan: Plan, free: int, device: torch.device | str) -> None:
    """Raise ``torch.OutOfMemoryError`` naming every part's size and the free memory if ``plan`` exceeds ``free`` bytes."""
    if plan.total > free:
        raise torch.OutOfMemoryError(refusal(plan, free, device))


def check_run(model: torch.nn.Module, cfg: DictConfig, device: torch.device, precision: str) -> Plan | None:
    """:func:`check` of the run ``cfg`` on ``device`` in ``precision`` (resolved: fp32, bf16, fp16) before
    training, on CUDA only; returns the plan (None elsewhere)."""
    free = memory.free_bytes(device)
    if free is None:
        return None
    found = plan(model, head_rows(cfg), cfg.train.optim, precision, free)
    check(found, free, device)
    return found
