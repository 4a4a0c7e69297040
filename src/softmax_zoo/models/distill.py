"""Knowledge distillation from a finished run: ``distill=stable|standard distill.teacher=<checkpoint>``.

Hinton et al. 2015 with the KL of "A Fix for Softmax and Cross-Entropy" (its expm1 form): the
student's training loss becomes

    L = α·T²·KL(softmax(z_T/T) ‖ softmax(z_S/T)) + (1 − α)·L_head(z_S, y)

where L_head is the student head's own loss (softmax, stable, sparse, ...) and the KL is
:func:`softmax_zoo.losses.methods.distill.kd_loss` in the form ``distill.kl`` ("stable": the expm1 form,
exactly 0 at identical logits; "standard": kl_div of two log-softmaxes).

How it plugs in without changing models or tasks (:func:`maybe_distill`, which the training engine
applies to every task it builds):

1. The teacher is the model of a finished run: its checkpoint folder holds the weights and the
   resolved config (``run_config.json``). The teacher's own task is built from that config (its
   tokenizer, model and head) with the student's batch layout and its weights loaded, by the
   caller's ``build_teacher`` (the engine's task builder: this module builds no task itself), and its
   scores over the training rows are computed once, in order, and cached (atomic write) under a
   key of the weights' sha256, the student's data (meta.json fingerprints and the training
   labels), the layout and the cache format. A second build reads the cache; changed data or
   weights give another key. The teacher's labels must equal the student's row for row, so a
   teacher of another split or order is refused.
2. Scores: the head's logits (a linear head) or its log-probabilities (e.g. adaptive softmax).
   With ``distill.topk`` = k (for language models, whose (tokens × V) logits would not fit) each
   row keeps its k largest teacher logits and one bucket for the rest,
   T·logsumexp_{j∉top-k}(z_j/T); the student is compared on the same k + 1 buckets, so the KL is
   that of the coarse-grained distributions (a lower bound of the full KL, equal when the rest is
   negligible).
3. The training dataset yields each row with its cached ``teacher_logits`` (and ``teacher_ids``);
   a forward pre-hook on the model takes them out of the batch and a forward hook on its head
   replaces the head's loss by L above. Evaluation batches carry no teacher, so evaluation and
   the checkpoint (same module names, same state dict) are those of the plain student.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any, Callable

import torch
from omegaconf import DictConfig, OmegaConf
from torch import nn
from torch.utils.data import DataLoader, Dataset, IterableDataset

from ..files import cached_tensors, json_key, sha256_file
from ..losses import OutputHead
from ..losses.machinery.head import LinearHead
from ..losses.methods.distill import KL_FORMS, kd_loss
from .build import evaluating

log = logging.getLogger(__name__)
# (the teacher run's config, its weights file) -> the teacher's task (anything with .model, .train_dataset, .collator)
BuildTeacher = Callable[[DictConfig, str], Any]
TEACHER_KEYS = ("teacher_logits", "teacher_ids")
CACHE_FORMAT = 1


def output_head(model: nn.Module) -> OutputHead:
    """The one :class:`OutputHead` of ``model`` (a distilled model must have exactly one)."""
    heads = [m for m in model.modules() if isinstance(m, OutputHead)]
    if len(heads) != 1:
        raise ValueError(f"distillation needs a model with exactly one output head, {type(model).__name__} has {len(heads)}")
    return heads[0]


def head_scores(head: OutputHead, hidden: torch.Tensor) -> torch.Tensor:
    """(..., d) -> (..., C) scores whose softmax is the head's distribution: logits, or log-probabilities."""
    return head.logits(hidden) if isinstance(head, LinearHead) else head.log_probs(hidden)


def bucket_scores(scores: torch.Tensor, ids: torch.Tensor, temperature: float) -> torch.Tensor:
    """(N, C) scores and (N, k) class ids -> (N, k + 1): the k scores and T·logsumexp_{j∉ids}(z_j/T).

    softmax(buckets/T) gives the probabilities of the k classes and of the rest, exactly.
    """
    rest = scores.scatter(1, ids, float("-inf"))  # (N, C), the k classes removed
    tail = torch.logsumexp(rest / temperature, dim=1, keepdim=True) * temperature  # (N, 1)
    return torch.cat([scores.gather(1, ids), tail], dim=1)


@dataclasses.dataclass
class DistillSpec:
    """``cfg.distill`` checked. ``teacher``: a run's output folder or checkpoint folder."""

    teacher: str
    kl: str = "stable"
    alpha: float = 0.5
    temperature: float = 1.0
    topk: int | None = None
    cache_dir: str = "data/teacher_cache"

    def __post_init__(self) -> None:
        if self.kl not in KL_FORMS:
            raise ValueError(f"distill.kl must be one of {KL_FORMS}, got {self.kl!r}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"distill.alpha must be in [0, 1], got {self.alpha}")
        if not self.temperature > 0:
            raise ValueError(f"distill.temperature must be > 0, got {self.temperature}")
        if self.topk is not None and self.topk < 1:
            raise ValueError(f"distill.topk must be >= 1 or null, got {self.topk}")


class Distiller:
    """Hooks that turn a model's head loss into the distillation loss while a batch carries teacher scores."""

    def __init__(self, model: nn.Module, spec: DistillSpec) -> None:
        self.spec = spec
        self.head = output_head(model)
        if self.head.reduction != "mean":
            raise ValueError(f"distillation needs a head with reduction='mean', got {self.head.reduction!r}")
        self.pending: tuple[torch.Tensor, torch.Tensor | None] | None = None
        model.register_forward_pre_hook(self.take_teacher, with_kwargs=True)
        model.register_forward_hook(self.clear)
        self.head.register_forward_hook(self.distil)

    def take_teacher(self, module, args, kwargs):
        logits, ids = kwargs.pop("teacher_logits", None), kwargs.pop("teacher_ids", None)
        self.pending = None if logits is None else (logits, ids)
        return args, kwargs

    def clear(self, module, args, output):
        self.pending = None

    def distil(self, head: OutputHead, args, head_loss: torch.Tensor) -> torch.Tensor | None:
        """α·KD + (1 − α)·head loss over the labelled rows of this batch (None: leave the loss as is)."""
        if self.pending is None or not self.head.training:
            return None
        hidden, target = args[0], args[1]  # (..., d), (...)
        teacher, ids = self.pending
        keep = target.reshape(-1) != self.head.ignore_index  # (N,)
        scores = head_scores(self.head, hidden).reshape(keep.numel(), -1)[keep]  # (n, C)
        teacher = teacher.reshape(keep.numel(), -1)[keep].to(scores.device)  # (n, C) or (n, k + 1)
        if ids is not None:
            scores = bucket_scores(scores, ids.reshape(keep.numel(), -1)[keep].to(scores.device), self.spec.temperature)
        s = self.spec
        kd = kd_loss(scores, teacher.to(scores.dtype), temperature=s.temperature, form=s.kl)
        return s.alpha * kd + (1.0 - s.alpha) * head_loss if s.alpha < 1 else kd + 0.0 * head_loss


class TeacherRows(Dataset):
    """A map-style training set whose row i carries the cached teacher scores of row i."""

    def __init__(self, base: Dataset, cache: dict[str, torch.Tensor]) -> None:
        self.base, self.cache = base, cache

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {**self.base[i], **{k: self.cache[k][i] for k in TEACHER_KEYS if k in self.cache}}


class TeacherStream(IterableDataset):
    """A stream of training rows (the same order every epoch) whose k-th row carries cached row k.

    It ends where the cache ends: the whole epoch, or the rows of ``train.max_steps`` steps.
    """

    def __init__(self, base: IterableDataset, cache: dict[str, torch.Tensor]) -> None:
        self.base, self.cache = base, cache

    def __len__(self) -> int:
        return len(self.base)

    def __iter__(self):
        rows = len(self.cache["teacher_logits"])
        for k, row in enumerate(self.base):
            if k >= rows:  # the cache holds the rows of train.max_steps steps; the Trainer may look one batch ahead
                return
            yield {**row, **{key: self.cache[key][k] for key in TEACHER_KEYS if key in self.cache}}


class TeacherCollator:
    """The task's collator, with the teacher entries stacked beside its batch."""

    def __init__(self, base) -> None:
        self.base = base

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        present = [k for k in TEACHER_KEYS if k in examples[0]]
        batch = self.base([{k: v for k, v in e.items() if k not in TEACHER_KEYS} for e in examples])
        return {**batch, **{k: torch.stack([e[k] for e in examples]) for k in present}}


def weights_file(path: str | Path) -> Path:
    """model.safetensors of a checkpoint folder, or of the newest checkpoint of a run folder."""
    from transformers.trainer_utils import get_last_checkpoint

    folder = Path(path)
    if folder.is_dir() and not (folder / "model.safetensors").is_file():
        last = get_last_checkpoint(str(folder))
        folder = Path(last) if last else folder
    weights = folder / "model.safetensors"
    if not weights.is_file():
        raise FileNotFoundError(f"distill.teacher={str(path)!r}: no model.safetensors there (nor in a checkpoint-N folder under it)")
    return weights


def training_rows(dataset: Dataset, collator, batch_size: int, rows: int | None = None):
    """Batches of the training rows in order (a stream in its own batch layout), at most ``rows`` rows."""
    seen = 0
    for batch in DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=collator):
        yield batch
        seen += len(batch["labels"])
        if rows is not None and seen >= rows:
            return


def training_labels(dataset: Dataset, collator, batch_size: int, rows: int | None) -> torch.Tensor:
    """(R, ...) labels of the training rows in order: what the teacher's rows must match."""
    return torch.cat([b["labels"] for b in training_rows(dataset, collator, batch_size, rows)])[:rows]


def teacher_pass(model: nn.Module, dataset, collator, batch_size: int, rows: int | None, spec: DistillSpec) -> dict[str, torch.Tensor]:
    """The teacher's scores over the training rows in order: {"teacher_logits", ["teacher_ids"], "labels"}."""
    head = output_head(model)
    out: dict[str, list[torch.Tensor]] = {"teacher_logits": [], "teacher_ids": [], "labels": []}
    if hasattr(model, "reset_eval_state"):
        model.reset_eval_state()  # a stateful model starts its streams from zero, as in training
    with evaluating(model):
        for batch in training_rows(dataset, collator, batch_size, rows):
            inputs = {k: v for k, v in batch.items() if k != "labels"}
            scores = head_scores(head, model(**inputs)["hidden"]).float()  # (B, [T,] C)
            if spec.topk is not None:
                flat = scores.reshape(-1, scores.shape[-1])
                ids = flat.topk(min(spec.topk, flat.shape[1] - 1), dim=1).indices
                out["teacher_ids"].append(ids.reshape(*scores.shape[:-1], -1))
                scores = bucket_scores(flat, ids, spec.temperature).reshape(*scores.shape[:-1], -1)
            out["teacher_logits"].append(scores)
            out["labels"].append(batch["labels"])
    return {k: torch.cat(v)[:rows] for k, v in out.items() if v}


def teacher_config(weights: Path, cfg: DictConfig) -> DictConfig:
    """The teacher run's resolved config, given the student's batch layout and no distillation of its own."""
    path = weights.parent / "run_config.json"
    if not path.is_file():
        raise FileNotFoundError(f"distill.teacher: {path} is missing; the teacher must be a checkpoint written by softmax_zoo.train")
    tcfg = OmegaConf.create(json.loads(path.read_text()))
    tcfg.distill = {"teacher": None}
    tcfg.train.batch_size = cfg.train.batch_size
    if "bptt" in cfg.task:
        tcfg.task.bptt = cfg.task.bptt
    tcfg.task.data_dir = cfg.task.data_dir
    return tcfg


def cached_teacher(cfg: DictConfig, task, spec: DistillSpec, rows: int | None,
                   build_teacher: BuildTeacher) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Load or compute (and save atomically) the teacher's scores over ``task``'s first ``rows`` training rows."""
    import hydra

    weights = weights_file(hydra.utils.to_absolute_path(spec.teacher))
    batch_size = cfg.train.batch_size
    labels = training_labels(task.train_dataset, task.collator, batch_size, rows)
    what = {
        "format": CACHE_FORMAT,
        "weights": sha256_file(weights),
        "data": task.data_meta,
        "labels": hashlib.sha256(labels.numpy().tobytes()).hexdigest(),
        "batch_size": batch_size if isinstance(task.train_dataset, IterableDataset) else None,
        "topk": spec.topk,
        "temperature": spec.temperature if spec.topk is not None else None,
    }
    tcfg = teacher_config(weights, cfg)
    path = Path(hydra.utils.to_absolute_path(spec.cache_dir)) / f"{tcfg.run_name}_{json_key(what)}.pt"
    info: dict[str, Any] = {"path": str(path), "hit": None}

    def compute() -> dict[str, torch.Tensor]:
        t0 = time.perf_counter()
        teacher_task = build_teacher(tcfg, str(weights))
        scores = teacher_pass(teacher_task.model, teacher_task.train_dataset, teacher_task.collator, batch_size, rows, spec)
        info["seconds"] = time.perf_counter() - t0
        log.info("cached the teacher's scores of %d training rows in %s (%.1f s)", len(labels), path, info["seconds"])
        return scores

    cache, info["hit"] = cached_tensors(path, compute, what="teacher cache")
    if not torch.equal(cache["labels"], labels):
        raise ValueError(
            f"the teacher run {tcfg.run_name} reads other training rows than this run (its labels differ row for row); "
            "distil on the same task, split and subset"
        )
    teacher = {"checkpoint": str(weights), "teacher_run": tcfg.run_name, "teacher_experiment": tcfg.get("experiment_name"),
               "teacher_loss": tcfg.loss.get("_target_"), "teacher_model": tcfg.model.get("_target_")}
    return cache, {**teacher, "cache": info}


def maybe_distill(cfg: DictConfig, task, build_teacher: BuildTeacher):
    """``task`` unchanged when ``cfg.distill.teacher`` is null; else its model and training set distil from the teacher.

    ``build_teacher(teacher_cfg, weights)`` builds the teacher run's task with its weights loaded
    (:func:`softmax_zoo.engine.build_teacher`); it is called only when the teacher's scores are not cached.
    """
    d = cfg.get("distill")
    if d is None or d.get("teacher") is None:
        return task
    spec = DistillSpec(**OmegaConf.to_container(d, resolve=True))
    stream = isinstance(task.train_dataset, IterableDataset)
    rows = None
    if stream:
        if cfg.train.num_workers:
            raise ValueError(
                f"distilling a streamed task needs train.num_workers=0 (rows are matched in order), got {cfg.train.num_workers}"
            )
        steps = cfg.train.max_steps
        per_epoch = len(task.train_dataset)
        rows = per_epoch if steps <= 0 else min(per_epoch, steps * cfg.train.batch_size * cfg.train.grad_accum)
    cache, info = cached_teacher(cfg, task, spec, rows, build_teacher)
    Distiller(task.model, spec)
    wrap = TeacherStream if stream else TeacherRows
    info = {**info, **dataclasses.asdict(spec)}
    return dataclasses.replace(task, train_dataset=wrap(task.train_dataset, cache), collator=TeacherCollator(task.collator),
                               info={**task.info, "distill": info})
