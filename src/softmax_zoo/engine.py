"""The training engine behind ``python -m softmax_zoo.train``: Task -> transformers Trainer -> record.

:func:`run` builds the task from the composed config (``cfg.task.builder``), trains
``task.model`` with the transformers ``Trainer`` (accelerate underneath: one process, or DDP
under ``torchrun --nproc_per_node=N -m softmax_zoo.train ...``), evaluates every split of
``task.eval_datasets`` with ``task.evaluate`` on the main process only (the trained model is the
same on every rank; the others end), in float32 whatever ``train.precision`` trained in, on each split's first \
``train.eval_subset`` examples where
that is set (``scale=smoke``: 200; the log line of each split says so), and writes on the main process the run record
(:class:`softmax_zoo.run_record.RunRecord`) and, for tasks whose evaluation returns per-example rows, one
``<run>.<split>.predictions.jsonl`` beside it (:func:`softmax_zoo.records.write_predictions`).

Checkpoints: ``cfg.output_dir/checkpoint-<step>`` every ``train.save_steps`` optimiser steps (the
newest ``train.save_total_limit`` kept), with model weights in safetensors (tied weights saved
once, see :class:`ZooTrainer`), optimiser, scheduler, RNG states and the trainer state (which
holds the per-step training loss), the resolved config (``run_config.json``) and
:class:`~softmax_zoo.trainer.ResumeState`'s file (state outside the weights, e.g. an LSTM's
carried hidden state, and the run's segments). ``resume=true`` continues from the newest one that
loads, to the same step losses and metrics as an uninterrupted run, also with a longer budget
(``train.max_steps``, ``train.epochs``: not part of run names), and refuses one written under
another config, naming each key that differs (:mod:`softmax_zoo.preflight`). The record of a
resumed run counts the whole run (:func:`training_timing`). A run that saves nothing leaves no ``output_dir``.
SIGTERM or SIGINT saves a checkpoint at the next optimiser step and stops the run there, and a
checkpoint is also saved every ``train.save_minutes`` (:class:`~softmax_zoo.trainer.SaveOnRequest`).

Before anything is built: the config's values are checked (seed, logger, loss options:
:func:`softmax_zoo.preflight.check_config`), a reproduction refuses uncommitted code (unless ``allow_dirty=true``), the
prepared data is checked against its meta.json, ``results_dir`` and
``output_dir`` are checked writable, and the checkpoint to resume is chosen. Once the model is built,
on CUDA, a run whose parameters, optimiser state and heads' buffers cannot fit the free memory is
refused with each part's size (:mod:`softmax_zoo.memory_plan`). The run log (config,
per-step loss, metrics, record path) goes through Python logging, which Hydra also writes to the
job's log file; the metrics are logged before the record is written.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

import hydra
import safetensors.torch
import torch
import transformers
from omegaconf import DictConfig
from transformers import TrainerCallback, TrainingArguments
from transformers.trainer_callback import PrinterCallback, ProgressCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR, get_last_checkpoint
from transformers.utils import SAFE_WEIGHTS_NAME

from . import parallelism, preflight, progress, records, tracking, vocab_parallel_training
from .config import command_line, hydra_choices, hydra_job
from .losses import OutputHead
from .models.distill import maybe_distill
from .provenance import cpu_info
from .run_record import RunRecord
from .tasks.base import Batches, Task
from .trainer import (
    BarsOnly,
    EpochEval,
    EpochToCollator,
    NonFiniteLossError,
    NonFiniteLossGuard,
    ResumeState,
    SaveOnRequest,
    SaveRunConfig,
    StepLog,
    TrainingInterrupted,
    TrainingStepToHeads,
    ZooTrainer,
    interrupted_message,
    resume_state_holders,
    segments_line,
    training_arguments,
    wait_for_every_process,
)

log = logging.getLogger(__name__)
def describe_model(model: torch.nn.Module) -> dict[str, Any]:
    """Parameter count and each output head as built (e.g. the cutoffs ``cutoffs: auto`` chose)."""
    heads = {
        name or "model": f"{type(m).__name__}({m.extra_repr()})"
        for name, m in model.named_modules()
        if isinstance(m, OutputHead)
    }
    return {"num_parameters": sum(p.numel() for p in model.parameters()), "heads": heads}


def build_task(cfg: DictConfig) -> Task:
    """``cfg.task.builder`` (a dotted path) applied to ``cfg`` and ``cfg.train``'s batch sizes, then
    distillation (``cfg.distill``) for every task.

    The teacher of ``distill.teacher=...`` is built by this same function from its run's config
    and loaded with :func:`initialise_from` (:func:`softmax_zoo.models.distill.maybe_distill`).
    """
    builder = hydra.utils.get_method(cfg.task.builder)
    task = builder(cfg, Batches(train=cfg.train.batch_size, eval=cfg.train.eval_batch_size))
    if not isinstance(task, Task):
        raise TypeError(f"{cfg.task.builder} must return a softmax_zoo.tasks.base.Task, got {type(task).__name__}")
    return maybe_distill(cfg, task, build_teacher)


def build_teacher(teacher_cfg: DictConfig, weights: str) -> Task:
    """The teacher's task, from its run's config, with the weights of ``weights`` (distillation's teacher)."""
    task = build_task(teacher_cfg)
    initialise_from(task.model, weights)
    return task


def initialise_from(model: torch.nn.Module, path: str) -> str:
    """Load a finished run's weights into ``model`` before training (``init_from=``; not a resume).

    The run starts at step 0 with a fresh optimiser; only the weights are taken. ``path`` is a
    checkpoint folder (``checkpoints/<experiment>/<run>/checkpoint-N``), a run's output folder (its
    newest checkpoint), or a ``model.safetensors`` file. Every parameter must match (strict).

    Returns:
        The weights file read (logged; the record keeps ``init_from`` as given in the config).

    Raises:
        FileNotFoundError: no weights file there.
        ValueError: the file does not load (e.g. truncated) or does not fit the model; naming the file.
    """
    weights = Path(path)
    if weights.is_dir() and not (weights / SAFE_WEIGHTS_NAME).is_file():
        last = get_last_checkpoint(str(weights))
        weights = Path(last) if last else weights
    if weights.is_dir():
        weights = weights / SAFE_WEIGHTS_NAME
    if not weights.is_file():
        raise FileNotFoundError(f"init_from={path!r}: no {SAFE_WEIGHTS_NAME} there (nor in a checkpoint-N folder under it)")
    try:
        missing, unexpected = safetensors.torch.load_model(model, str(weights), strict=False, device="cpu")
    except (safetensors.SafetensorError, OSError) as e:
        raise ValueError(f"init_from={path!r}: {weights} does not load ({e}); is it whole (a finished save)?") from e
    if missing or unexpected:
        raise ValueError(
            f"init_from={path!r} does not fit this model: missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]} "
            "(it must come from a run of the same model and loss head shape)"
        )
    log.info("initialised the model from %s", weights)
    return str(weights)


def dataset_sizes(task: Task) -> dict[str, int]:
    """Examples of each split as the task holds them (an unsized stream is left out)."""
    splits = {"train": task.train_dataset, **task.eval_datasets}
    sizes = {}
    for split, dataset in splits.items():
        try:
            sizes[split] = len(dataset)
        except TypeError:
            continue
    return sizes


def validator(task: Task, eval_datasets: dict[str, Any], subset: int | None = None) -> Callable[[torch.nn.Module], dict[str, float]]:
    """What the Trainer validates with (``train.eval_steps > 0``): the task's evaluation of the validation
    split as the run's final evaluation sees it, or of its first ``subset`` examples (``train.validation_subset``,
    with ``task.subset``), its ``val/`` metrics only."""
    if "validation" not in eval_datasets:
        raise ValueError(f"train.eval_steps > 0 needs a validation split in task.eval_splits, got {sorted(eval_datasets)}")
    dataset = evaluation_datasets(task, subset, {"validation": eval_datasets["validation"]}, "train.validation_subset")["validation"]

    def validate(model: torch.nn.Module) -> dict[str, float]:
        metrics = task.evaluate(model, "validation", dataset).metrics
        return {k: v for k, v in metrics.items() if k.startswith("val/")}

    return validate


def make_trainer(task: Task, args: TrainingArguments, callbacks: list[TrainerCallback],
                 eval_datasets: dict[str, Any] | None = None, validation_subset: int | None = None) -> ZooTrainer:
    """The Trainer of ``task``: bars without printouts on a terminal, nothing printed otherwise; with
    evaluation during training (``args.eval_strategy``), validating on ``eval_datasets``' validation split
    (its first ``validation_subset`` examples unless None)."""
    validate = validator(task, eval_datasets or {}, validation_subset) if args.eval_strategy != "no" else None
    if validate is not None and args.world_size > 1:
        raise ValueError("train.eval_steps > 0 validates on one process; under torchrun set train.eval_steps=0")
    trainer = ZooTrainer(model=task.model, args=args, train_dataset=task.train_dataset, data_collator=task.collator, callbacks=callbacks,
                         eval_dataset=(eval_datasets or {}).get("validation") if validate else None, validate=validate)
    trainer.remove_callback(PrinterCallback)
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(BarsOnly)
    return trainer


def evaluation_datasets(task: Task, subset: int | None, datasets: dict[str, Any] | None = None,
                        key: str = "train.eval_subset") -> dict[str, Any]:
    """The splits to evaluate: ``datasets`` (default ``task.eval_datasets``), each cut to its first ``subset``
    examples (``key``: ``train.eval_subset`` or ``train.validation_subset``, with ``task.subset``) unless ``subset`` is None."""
    datasets = task.eval_datasets if datasets is None else datasets
    if subset is None:
        return dict(datasets)
    if isinstance(subset, bool) or not isinstance(subset, int) or subset < 1:
        raise ValueError(f"{key} must be an integer >= 1 or null, got {subset!r}")
    return {split: task.subset(dataset, subset) for split, dataset in datasets.items()}


class Evaluated(NamedTuple):
    """Every split's evaluation: the metrics of all splits, and per split its timing and (for tasks that keep them) its rows."""

    metrics: dict[str, float]
    timing: dict[str, Any]
    rows: dict[str, Any]


def evaluate_splits(task: Task, model: torch.nn.Module, eval_datasets: dict[str, Any], on_main: bool,
                    subset: int | None = None) -> Evaluated | None:
    """Evaluate every split on the main process.

    Only the main process evaluates (under DDP the model is the same on every rank after training,
    so one evaluation gives every metric); the others return None at once. ``subset`` (the
    ``train.eval_subset`` the datasets were cut to) is named in the log line of each split.
    """
    if not on_main:
        log.info("evaluation runs on the main process (rank 0) only")
        return None
    metrics, timing, rows = {}, {}, {}
    full = dataset_sizes(task)
    for split, dataset in eval_datasets.items():
        t0 = time.perf_counter()
        evaluation = task.evaluate(model, split, dataset)
        seconds = time.perf_counter() - t0
        metrics.update(evaluation.metrics)
        timing[split] = {"seconds": seconds, "examples_per_s": len(dataset) / seconds}
        on = f"; the first {len(dataset)} of {full.get(split, '?')} examples, train.eval_subset={subset}" if subset is not None else ""
        log.info("%s (%.1f s%s): %s", split, seconds, on, ", ".join(f"{k}={v:.4g}" for k, v in evaluation.metrics.items()))
        if evaluation.rows is not None:
            rows[split] = evaluation.rows
    return Evaluated(metrics, timing, rows)


def training_timing(segments: list[dict[str, Any]], examples_per_step: int) -> dict[str, Any]:
    """The record's timing over the whole run, every segment (:class:`~softmax_zoo.trainer.ResumeState`) counted.

    ``wall_s`` (each earlier segment until its last checkpoint, the last one until now),
    ``train_s`` and ``train_examples_per_s`` (examples per optimiser step x steps / seconds, the
    last, partial batch counted whole) count the segments whose time is known; ``segments`` lists
    them all, ``resumed_from_step`` is where the last one started (0: never interrupted).
    """
    timed = [s for s in segments if s["train_s"] is not None]
    seconds = sum(s["train_s"] for s in timed)
    steps = sum(s["to_step"] - s["from_step"] for s in timed)
    return {
        "wall_s": sum(s["wall_s"] for s in segments if s["wall_s"] is not None),
        "train_s": seconds,
        "train_examples_per_s": steps * examples_per_step / seconds if seconds > 0 else None,
        "resumed_from_step": segments[-1]["from_step"],
        "segments": segments,
    }


def first_missing(folder: Path) -> Path | None:
    """The outermost folder of ``folder`` and its parents that does not exist yet (None: it exists)."""
    missing = None
    for path in (folder, *folder.parents):
        if path.exists():
            return missing
        missing = path
    return missing


def remove_if_empty(folder: Path, up_to: Path | None) -> None:
    """Remove ``folder`` and its parents up to ``up_to`` (inclusive) while they are empty folders.

    The Trainer creates ``output_dir`` on start; a run that saves nothing (``train.save_steps=0``)
    thus leaves no empty checkpoint folder behind. Nothing happens when ``up_to`` is None (the
    folder existed before the run). Every process of a run may call it: a folder another one removed
    first ends the walk here, as one that is not empty does (that process goes on upwards).
    """
    if up_to is None:
        return
    for path in (folder, *folder.parents):
        try:
            path.rmdir()  # an empty folder only
        except OSError:  # not empty, not a folder, or gone already
            return
        if path == up_to:
            return


class Trained(NamedTuple):
    """A finished training: the Trainer (its model, state and arguments), the run's segments
    (:class:`~softmax_zoo.trainer.ResumeState`) and the splits to evaluate, cut to ``subset`` examples unless None."""

    trainer: ZooTrainer
    segments: list[dict[str, Any]]
    eval_datasets: dict[str, Any]
    subset: int | None


def run(cfg: DictConfig, callbacks: Iterable[TrainerCallback] = ()) -> dict[str, Any] | None:
    """Train, evaluate and record one run of the composed config.

    Args:
        cfg: the composed training config (configs/train.yaml).
        callbacks: extra ``TrainerCallback``s (tests use them to interrupt a run).

    Returns:
        The record written (None on processes other than rank 0).

    Raises:
        NonFiniteLossError, TrainingInterrupted: from :func:`fit`; no record is written.
        OSError: ``results_dir`` or ``output_dir`` is not writable (before any training).
        torch.OutOfMemoryError: on CUDA, the memory plan exceeds the free memory (before any training).
        ValueError: a reproduction from uncommitted code without ``allow_dirty=true``, the prepared
            data changed since ``make data``, or ``resume=true`` found a checkpoint of another
            config (before any training: :func:`softmax_zoo.preflight.check_run`).
    """
    start = time.perf_counter()
    preflight.check_config(cfg)
    mode = parallelism.of(cfg)
    on_request = SaveOnRequest(cfg.train.save_minutes, can_save=mode.can_checkpoint)
    start_run_log(cfg)
    checked = preflight.check_run(cfg)
    if checked.done is not None:
        log.info("done already: %s (the same config at commit %s); nothing was trained: overwrite=true runs it again",
                 checked.done.path, str(checked.git.get("commit"))[:7])
        return checked.done.record
    created = first_missing(checked.output_dir)
    mode.start(cfg)
    transformers.set_seed(cfg.seed)
    task = build_task(cfg)
    if cfg.get("init_from"):
        initialise_from(task.model, cfg.init_from)
    args = training_arguments(cfg)
    mode.prepare(task.model, cfg, args, precision_of(args))
    choices = hydra_choices()
    tracker = tracking.start(cfg, choices, args.to_dict())
    try:
        trained = fit(cfg, task, args, checked, tracker, on_request, list(callbacks), created, start)
        # Evaluation runs in float32 for every task: accelerate's autocast wrapper of the forward
        # (bf16/fp16 training) is removed, as the seq2seq and classification evaluations never used it.
        model = trained.trainer.accelerator.unwrap_model(trained.trainer.model, keep_fp32_wrapper=False)
        evaluated = evaluate_splits(task, model, trained.eval_datasets, trained.trainer.is_world_process_zero(), trained.subset)
        if evaluated is not None:
            for split, split_rows in evaluated.rows.items() if vocab_parallel_training.is_writer() else ():
                records.write_predictions(split_rows, checked.runs, cfg.experiment_name, cfg.run_name, split)
            tracking.log_metrics(tracker, evaluated.metrics, trained.trainer.state.global_step)
    except BaseException:
        tracking.finish(tracker, exit_code=1)
        raise
    finally:
        remove_if_empty(checked.output_dir, created)
    tracking.finish(tracker)
    if evaluated is None or not vocab_parallel_training.is_writer():
        return None
    record = run_record(cfg, task, model, trained, evaluated, checked, choices, tracker, wall_s=time.perf_counter() - start)
    return write_record(record, checked.runs)


def start_run_log(cfg: DictConfig) -> None:
    """Progress bars as ``train.progress`` asks, the Trainer's own logging into the run log, and the run's first line."""
    progress.configure(cfg.train.progress)
    transformers.utils.logging.disable_default_handler()
    transformers.utils.logging.enable_propagation()  # the Trainer's warnings go to the run log too
    log.info("run %s/%s: %s", cfg.experiment_name, cfg.run_name, " ".join(command_line()[3:]) or "(defaults)")


def precision_of(args: TrainingArguments) -> str:
    """The precision the Trainer trains in: bf16, fp16 or fp32."""
    return "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"


def fit(cfg: DictConfig, task: Task, args: TrainingArguments, checked: preflight.Checked, tracker: Any,
        on_request: SaveOnRequest, callbacks: list[TrainerCallback], created: Path | None, start: float) -> Trained:
    """Make the Trainer with every run's callbacks, then ``callbacks``, and train from ``checked.checkpoint`` when there
    is one. ``created``: the outermost folder of ``output_dir`` this run made (:func:`first_missing`); ``start``: when the
    run began (its first segment's wall time).

    Raises:
        TrainingInterrupted: SIGTERM or SIGINT during training: every process saved a checkpoint at
            the next optimiser step and stopped there (:class:`~softmax_zoo.trainer.SaveOnRequest`);
            ``resume=true`` continues from that checkpoint.
        NonFiniteLossError: the loss became NaN/inf, naming the last good checkpoint.
    """
    guard = NonFiniteLossGuard()
    resume = ResumeState(resume_state_holders(task.model, task.callbacks), checked.checkpoint, started=start)
    subset = cfg.train.get("eval_subset")
    eval_datasets = evaluation_datasets(task, subset)
    # on_request before guard, whose step end may still cancel a save of non-finite weights
    extra = [on_request, guard, resume, StepLog(tracker), SaveRunConfig(cfg), TrainingStepToHeads(task.model),
             EpochToCollator(task.collator), *task.callbacks, *callbacks]
    extra += [EpochEval(task, eval_datasets, tracker)] if cfg.train.eval_each_epoch else []
    with on_request.catching_signals():
        trainer = make_trainer(task, args, extra, eval_datasets, cfg.train.get("validation_subset"))
        wait_for_every_process()  # every rank's Trainer has made output_dir before any rank removes it
        remove_if_empty(checked.output_dir, created)  # made by the Trainer at once; the first checkpoint makes it again
        trainer.train(resume_from_checkpoint=checked.checkpoint)
    segments = resume.segments(trainer.state.global_step)
    log.info("trained in %s", segments_line(segments))
    if guard.bad_step is None and on_request.stopped_at is not None:
        wait_for_every_process()  # every rank's share of the checkpoint is written before any rank exits
        raise interrupted(cfg, on_request, args.output_dir)
    if guard.bad_step is not None:
        last = get_last_checkpoint(args.output_dir) if os.path.isdir(args.output_dir) else None
        raise NonFiniteLossError(
            f"{guard.what} at optimiser step {guard.bad_step}: training stopped; last good checkpoint: "
            f"{last or 'none (no checkpoint had been saved)'}. Try a lower train.lr or train.max_grad_norm, "
            "train.precision=fp32, or loss=stable_softmax."
        )
    return Trained(trainer, segments, eval_datasets, subset)


def run_record(cfg: DictConfig, task: Task, model: torch.nn.Module, trained: Trained, evaluated: Evaluated,
               checked: preflight.Checked, choices: dict[str, str], tracker: Any, wall_s: float) -> RunRecord:
    """The record of a finished run; ``wall_s`` is this process's time from the start of :func:`run` to now."""
    trainer, args, segments = trained.trainer, trained.trainer.args, trained.segments
    effective_batch = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    return RunRecord.of_config(
        cfg,
        metrics=evaluated.metrics,
        train_loss=records.train_loss_curve(trainer.state.log_history),
        history=[h for h in trainer.state.log_history if any(k.startswith(("val/", "eval_")) for k in h)],
        data={**task.data_meta, "read": checked.data_read, "examples": dataset_sizes(task)},
        task_info=task.info,
        model=describe_model(model),
        timing={
            # this process's wall time runs on to the record, its training time ended with fit()
            **training_timing([*segments[:-1], {**segments[-1], "wall_s": wall_s}], effective_batch),
            "global_steps": trainer.state.global_step,
            "eval": evaluated.timing,
        },
        device={
            "type": args.device.type,
            "name": torch.cuda.get_device_name(args.device) if args.device.type == "cuda" else "cpu",
            "world_size": args.world_size,
            **vocab_parallel_training.describe(model),
            "precision": precision_of(args),
            "cpu": cpu_info(),
        },
        command=command_line(),
        choices=choices,
        job=hydra_job(),
        wandb=tracking.run_info(tracker),
        git=checked.git,
        selection=selection(trainer.state, args),
    )


def interrupted(cfg: DictConfig, on_request: SaveOnRequest, output_dir: str) -> TrainingInterrupted:
    """The error a run stopped by a signal raises, naming the checkpoint saved at its last step (if it saves any)."""
    step = on_request.stopped_at
    folder = Path(output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{step}"
    checkpoint = str(folder) if folder.is_dir() else None
    return TrainingInterrupted(interrupted_message(on_request.signum, step, checkpoint, bool(cfg.resume)),
                               on_request.signum, step, checkpoint)


def selection(state: transformers.TrainerState, args: TrainingArguments) -> dict[str, Any] | None:
    """Which checkpoint the run evaluated when it chose one by validation (``train.eval_steps > 0``), else None:
    ``{"metric", "greater_is_better", "step", "value", "last_step"}``, ``step`` the best checkpoint's optimiser step."""
    if not args.load_best_model_at_end:
        return None
    return {"metric": args.metric_for_best_model, "greater_is_better": args.greater_is_better,
            "step": state.best_global_step, "value": state.best_metric, "last_step": state.global_step}


def write_record(record: RunRecord, runs: Path) -> dict[str, Any]:
    """Write ``record``; should that fail, the whole record goes to the run log first, then the error is raised. Returns its JSON."""
    try:
        path = records.write_record(record, runs)
    except (OSError, ValueError):
        log.error("the record could not be written; here it is whole:\n%s", json.dumps(record.to_dict(), indent=1, default=str))
        raise
    log.info("record %s", path)
    return record.to_dict()
