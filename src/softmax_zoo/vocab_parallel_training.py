"""Training with the output head's vocabulary split over the processes of ``torchrun`` (``train.vocab_parallel=true``).

::

    torchrun --nproc_per_node 2 -m softmax_zoo.train task=lm1b model=transformer_lm loss=sparse_softmax \\
        train.vocab_parallel=true train.save_steps=0 train.save_minutes=0

Every process runs the whole model on the same batches (the same seed, hence the same
initialisation and data order) except the output head, whose weight rows are split evenly over
the processes (:class:`~softmax_zoo.losses.parallel.vocab_parallel_head.VocabParallelHead`): this is tensor
parallelism of the head alone, not data parallelism. The hidden states' gradient is summed over the
ranks inside the head, so the body's gradients are the same on every rank, and the optimiser
(elementwise) keeps the bodies equal; the global batch is ``train.batch_size``, as in one process.

So that the Trainer runs one process's loop on each rank (no DistributedDataParallel, no split of
the data), :func:`start` joins the process group from torchrun's variables and then removes them
from the environment. Gradient clipping uses the norm over every rank's shard
(:func:`clip_grad_norm_`). Only rank 0 writes the record; checkpoints are refused (each rank would
hold another shard of the head), so SIGTERM or SIGINT stops every rank at the same step without one.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist
from omegaconf import DictConfig
from torch import nn

from .losses import OutputHead
from .losses.parallel.vocab_parallel import VocabShard
from .losses.parallel.vocab_parallel_head import VocabParallelHead

# torchrun's variables that make accelerate set up data parallelism.
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
                      "ROLE_RANK", "ROLE_WORLD_SIZE")


def enabled(cfg: DictConfig) -> bool:
    return bool(cfg.train.get("vocab_parallel", False))


def start(cfg: DictConfig) -> None:
    """Join torchrun's process group for a vocabulary-parallel run, then hide it from the Trainer.

    Raises:
        ValueError: not launched by torchrun, or checkpoints asked for.
    """
    if "WORLD_SIZE" not in os.environ and not dist.is_initialized():
        raise ValueError("train.vocab_parallel=true needs several processes: torchrun --nproc_per_node <n> -m softmax_zoo.train ...")
    for key in ("save_steps", "save_minutes"):
        if cfg.train[key] != 0:
            raise ValueError(
                f"train.vocab_parallel=true writes no checkpoints (each rank holds another shard of the head): "
                f"set train.save_steps=0 train.save_minutes=0, got train.{key}={cfg.train[key]}"
            )
    if not dist.is_initialized():
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    for name in LAUNCHER_VARIABLES:
        os.environ.pop(name, None)


def shard_heads(model: nn.Module) -> None:
    """Replace each output head among ``model``'s children by its even vocabulary shard on this rank."""
    for name, child in list(model.named_children()):
        if not isinstance(child, OutputHead):
            continue
        shared = [n for n, p in model.named_parameters(remove_duplicate=False)
                  if p is getattr(child, "weight", None) and not n.startswith(f"{name}.")]
        if shared:
            raise ValueError(
                f"the head's weight is tied to {shared[0]}, which would need its own vocabulary split: "
                "set model.tie_weights=false for train.vocab_parallel=true"
            )
        setattr(model, name, VocabParallelHead(child, VocabShard.even(child.num_classes)))


def has_sharded_head(model: nn.Module) -> bool:
    return any(isinstance(m, VocabParallelHead) for m in model.modules())


def describe(model: nn.Module) -> dict[str, int]:
    """The record's note of a vocabulary-parallel run: {"vocab_parallel_ranks": n}, else nothing."""
    return {"vocab_parallel_ranks": dist.get_world_size()} if has_sharded_head(model) else {}


def is_writer() -> bool:
    """Whether this process writes the run's files: rank 0 of a vocabulary-parallel run, any other run's."""
    return not dist.is_initialized() or dist.get_rank() == 0


def clip_grad_norm_(model: nn.Module, max_norm: float) -> torch.Tensor:
    """Clip to the gradient norm of the whole model: the replicated parameters' once, plus every
    rank's head shard (an all_reduce of their squared norms). Returns the norm before clipping."""
    sharded = {id(p) for m in model.modules() if isinstance(m, VocabParallelHead) for p in m.parameters()}
    params = [p for p in model.parameters() if p.grad is not None]
    squares = torch.zeros(2, dtype=torch.float64, device=params[0].device)  # replicated, sharded
    for p in params:
        squares[int(id(p) in sharded)] += p.grad.detach().double().pow(2).sum()
    dist.all_reduce(squares[1:])
    total = squares.sum().sqrt()
    torch.nn.utils.clip_grads_with_norm_(params, max_norm, total)
    return total
