"""The transformers ``Trainer`` as the engine runs it: a subclass that saves tied weights once, the
callbacks every run gets (among them :class:`ResumeState`, what a checkpoint keeps beyond the
Trainer's own files, and :class:`SaveOnRequest`, the checkpoint on SIGTERM/SIGINT and every
``train.save_minutes``), and ``TrainingArguments`` from ``cfg.train`` (names as in transformers 5.x)."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import hydra
import safetensors.torch
import torch
import torch.distributed as dist
from omegaconf import DictConfig, OmegaConf
from transformers import PreTrainedModel, Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_callback import ProgressCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
from transformers.utils import SAFE_WEIGHTS_NAME

from . import files, progress, tracking, vocab_parallel_training
from .preflight import CONFIG_FILE
from .tasks.base import Task

log = logging.getLogger(__name__)
TRAINING_ARGS_NAME = "training_args.bin"
RESUME_STATE = "resume_state_{process}.pt"  # ResumeState's file, one per process in each checkpoint folder


class NonFiniteLossError(FloatingPointError):
    """Training stopped because the loss (or a parameter) became NaN or infinite."""


class ZooTrainer(Trainer):
    """``Trainer`` for plain ``nn.Module`` models whose output layer may be tied to another tensor.

    A model whose head is split over ranks (``train.vocab_parallel``) clips to the norm over every
    rank's shard (:func:`softmax_zoo.vocab_parallel_training.clip_grad_norm_`).

    The stock Trainer saves a non-``PreTrainedModel`` with ``safetensors.torch.save_file``, which
    refuses tensors shared under two names (a head tied to an embedding). Here such models are
    saved with ``safetensors.torch.save_model`` (each shared tensor stored once) and loaded back
    with ``safetensors.torch.load_model`` (strict: every parameter must be restored).

    ``validate`` (model -> metrics such as ``{"val/perplexity": ...}``) is what :meth:`evaluate` runs
    when ``train.eval_steps > 0`` (:func:`eval_flags`): the Trainer's own machinery then keeps the
    checkpoint best by ``train.metric_for_best_model`` and loads it at the end of training.
    """

    def __init__(self, *args: Any, validate: Callable[[torch.nn.Module], dict[str, float]] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.validate = validate

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix: str = "eval") -> dict[str, float]:
        """``validate``'s metrics as ``eval_<name>`` with ``eval_runtime`` (seconds), logged into ``state.log_history``.

        The seconds are left out of the model's training tokens/second (``exclude_time``, where it has one);
        callbacks get them in ``on_evaluate``'s metrics.
        """
        if self.validate is None:
            return super().evaluate(eval_dataset, ignore_keys, metric_key_prefix)
        model = self.accelerator.unwrap_model(self.model)
        t0 = time.perf_counter()
        metrics = {f"{metric_key_prefix}_{k}": v for k, v in self.validate(model).items()}
        seconds = time.perf_counter() - t0
        metrics[f"{metric_key_prefix}_runtime"] = seconds
        if hasattr(model, "exclude_time"):
            model.exclude_time(seconds)
        log.info("validation at step %d (%.1f s): %s", self.state.global_step, seconds,
                 ", ".join(f"{k}={v:.5g}" for k, v in metrics.items()))
        self.log(metrics)
        self.control = self.callback_handler.on_evaluate(self.args, self.state, self.control, metrics)
        return metrics

    def _save(self, output_dir: str | None = None, state_dict: dict | None = None) -> None:
        if isinstance(self.accelerator.unwrap_model(self.model), PreTrainedModel):
            return super()._save(output_dir, state_dict)
        output_dir = output_dir or self.args.output_dir
        if not self.args.should_save:
            return
        os.makedirs(output_dir, exist_ok=True)
        model = self.accelerator.unwrap_model(self.model)
        safetensors.torch.save_model(model, os.path.join(output_dir, SAFE_WEIGHTS_NAME), metadata={"format": "pt"})
        torch.save(self.args, os.path.join(output_dir, TRAINING_ARGS_NAME))

    def _clip_grad_norm(self, model):
        if not vocab_parallel_training.has_sharded_head(model):
            return super()._clip_grad_norm(model)
        return vocab_parallel_training.clip_grad_norm_(model, self.args.max_grad_norm)

    def _get_grad_norm(self, model, grad_norm=None):
        if grad_norm is None and vocab_parallel_training.has_sharded_head(model):
            grad_norm = vocab_parallel_training.clip_grad_norm_(model, float("inf"))
        return super()._get_grad_norm(model, grad_norm)

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: torch.nn.Module | None = None) -> None:
        model = model if model is not None else self.model
        path = os.path.join(resume_from_checkpoint, SAFE_WEIGHTS_NAME)
        if isinstance(self.accelerator.unwrap_model(model), PreTrainedModel) or not os.path.isfile(path):
            return super()._load_from_checkpoint(resume_from_checkpoint, model)
        safetensors.torch.load_model(self.accelerator.unwrap_model(model), path, strict=True, device="cpu")


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)  # a scheduler's stop (or `kill`), Ctrl-C


class TrainingInterrupted(KeyboardInterrupt):
    """The run stopped on SIGTERM or SIGINT at an optimiser-step boundary, its checkpoint saved there
    (where it saves any): the message says where and how to resume. A ``KeyboardInterrupt``, so that
    ``except Exception`` (a chain of runs, a sweep) lets it through as it would Ctrl-C.

    Attributes:
        signum: the signal (the same on every process of the run).
        step: the optimiser step it stopped after.
        checkpoint: the checkpoint folder saved at that step (None: the run saves none).
        exit_code: ``128 + signum`` (130 for SIGINT, 143 for SIGTERM), the shell's code of a process
            ended by that signal: what ``python -m softmax_zoo.train`` exits with.
    """

    def __init__(self, message: str, signum: int, step: int, checkpoint: str | None) -> None:
        super().__init__(message)
        self.signum, self.step, self.checkpoint = signum, step, checkpoint
        self.exit_code = 128 + signum


def interrupted_message(signum: int, step: int, checkpoint: str | None, resume: bool) -> str:
    """The one line a run stopped by ``signum`` ends with (:class:`TrainingInterrupted`)."""
    name = signal.Signals(signum).name
    if checkpoint is None:
        return (f"interrupted by {name} after step {step}, no checkpoint saved (train.vocab_parallel=true writes none): "
                "rerunning the command starts from step 0")
    again = "rerun the same command" if resume else "rerun the same command with resume=true"
    return f"interrupted by {name}: checkpoint saved at step {step} ({checkpoint}); {again} to resume"


def save_interval(save_minutes: Any) -> float:
    """``train.save_minutes`` as seconds (0: no time-based checkpoint); a ValueError naming a bad value."""
    if isinstance(save_minutes, bool) or not isinstance(save_minutes, (int, float)) or not 0 <= save_minutes < math.inf:
        raise ValueError(f"train.save_minutes must be a number >= 0 (0: no time-based checkpoints), got {save_minutes!r}")
    return 60.0 * save_minutes


def max_over_processes(values: list[int]) -> list[int]:
    """Each of ``values``' largest value over the run's processes (one all_reduce); ``values`` alone without a process group."""
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return values
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    agreed = torch.tensor(values, dtype=torch.int64, device=device)
    dist.all_reduce(agreed, op=dist.ReduceOp.MAX)
    return agreed.tolist()


def wait_for_every_process() -> None:
    """A barrier over the run's processes (nothing without a process group)."""
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        dist.barrier()


class SaveOnRequest(TrainerCallback):
    """A checkpoint at the next optimiser-step boundary when one is asked for, through the Trainer's
    own ``control.should_save`` (saved as its periodic checkpoints are):

    - a stop signal (SIGTERM, SIGINT) received inside :meth:`catching_signals`: the checkpoint is
      saved, then ``control.should_training_stop`` ends training (:func:`softmax_zoo.engine.run`
      then raises :class:`TrainingInterrupted`); a second SIGINT stops at once (``KeyboardInterrupt``);
    - ``train.save_minutes`` passed since the last checkpoint (or the start): a checkpoint only, so a
      run killed without a signal (``kill -9``, a lost node) loses at most that much training.

    Every process of the run takes part in one all_reduce (MAX) of the pair (signal, time is up) per
    step (:func:`max_over_processes`), so a signal to one rank, or one rank's clock, makes every rank
    save and stop at the same step, and no rank is left waiting in a collective the others skipped.

    Args:
        save_minutes: ``train.save_minutes`` (0: no time-based checkpoint; :func:`save_interval`).
        can_save: whether the run saves checkpoints at all (a vocabulary-parallel run does not: it only stops).
    """

    clock = staticmethod(time.monotonic)  # seconds; a test replaces it

    def __init__(self, save_minutes: float, can_save: bool = True) -> None:
        self.interval = save_interval(save_minutes)
        self.can_save = can_save
        self.received = 0  # the stop signal this process received (0: none)
        self.signum = 0  # the stop signal the processes agreed on at stopped_at
        self.stopped_at: int | None = None
        self.last_save = self.clock()

    @contextmanager
    def catching_signals(self) -> Iterator[SaveOnRequest]:
        """Inside, SIGTERM and SIGINT ask for the checkpoint and stop; the handlers before are restored after.

        Python takes signal handlers in the main thread only: called from another thread this does
        nothing (the signals keep their handlers; the time-based checkpoint still runs).
        """
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        before = {s: signal.signal(s, self.on_signal) for s in STOP_SIGNALS}
        try:
            yield self
        finally:
            for s, handler in before.items():
                signal.signal(s, handler)

    def on_signal(self, signum: int, frame: Any) -> None:
        if self.received and signum == signal.SIGINT:
            raise KeyboardInterrupt(f"a second {signal.Signals(signum).name}: stopped at once, no checkpoint saved")
        self.received = self.received or signum  # told at the step boundary, not here (no logging inside a handler)

    def on_train_begin(self, args, state, control, **kwargs):
        self.last_save = self.clock()
        return control

    def on_step_end(self, args, state, control, **kwargs):
        time_up = self.interval > 0 and self.clock() - self.last_save >= self.interval
        signum, time_up = max_over_processes([self.received, int(time_up)])
        if signum:
            self.signum, self.stopped_at = signum, state.global_step
            control.should_save = control.should_save or self.can_save
            control.should_training_stop = True
            if state.is_world_process_zero:
                log.warning("%s: %s after step %d", signal.Signals(signum).name,
                            "saving a checkpoint and stopping" if self.can_save else "stopping", state.global_step)
        elif time_up and self.can_save:
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        self.last_save = self.clock()
        return control

    def on_epoch_end(self, args, state, control, **kwargs):
        if self.stopped_at is not None:  # saved at stopped_at already, which an epoch-end save would repeat
            control.should_save = False
        return control


class NonFiniteLossGuard(TrainerCallback):
    """Stop at the first NaN/inf training loss, and never checkpoint non-finite weights.

    The loss is checked at every logging step (``train.logging_steps``, 1 by default: every
    step); before each checkpoint the parameters are checked too, so that with a larger logging
    interval a checkpoint is still never written after a NaN. :func:`run` then raises
    :class:`NonFiniteLossError` naming the step and the last good checkpoint.
    """

    def __init__(self) -> None:
        self.bad_step: int | None = None
        self.what = ""

    def _stop(self, control, step: int, what: str):
        self.bad_step, self.what = step, what
        control.should_save = False
        control.should_evaluate = False
        control.should_training_stop = True
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        loss = (logs or {}).get("loss")
        if self.bad_step is None and loss is not None and not math.isfinite(loss):
            return self._stop(control, state.global_step, f"training loss {loss}")
        return control

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if self.bad_step is None and control.should_save and model is not None:
            if not all(torch.isfinite(p).all() for p in model.parameters()):
                return self._stop(control, state.global_step, "non-finite parameters")
        return control


class TrainingStepToHeads(TrainerCallback):
    """Tells every module with a ``training_step`` attribute (e.g. ``SparseSoftmaxHead`` with
    ``full_softmax_steps``) the optimiser steps done, before each step (resumed runs included)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.modules = [m for m in model.modules() if hasattr(m, "training_step")]

    def on_step_begin(self, args, state, control, **kwargs):
        for m in self.modules:
            m.training_step = state.global_step


class EpochToCollator(TrainerCallback):
    """Tells a collator with an ``epoch`` attribute (``UniLMTrainCollator``, whose masks depend on
    it) the epoch before each one starts, a resumed run's included. The Trainer builds each epoch's
    data loader after this, so its workers (``train.num_workers``) copy the new value."""

    def __init__(self, collator: Any) -> None:
        self.collator = collator

    def on_epoch_begin(self, args, state, control, **kwargs):
        if hasattr(self.collator, "epoch"):
            self.collator.epoch = math.floor(state.epoch)


def resume_state_holders(model: torch.nn.Module, callbacks: Iterable[Any]) -> dict[str, Any]:
    """What holds state outside the weights that a checkpoint must keep, by name: each module of
    ``model`` and each of ``callbacks`` with ``resume_state()`` and ``load_resume_state(state)``
    (a stream LM's carried context and token counts, the LM validation curve's training time)."""
    holders = {f"model.{name}" if name else "model": m for name, m in model.named_modules() if hasattr(m, "resume_state")}
    holders.update({f"callback.{type(c).__name__}": c for c in callbacks if hasattr(c, "resume_state")})
    return holders


def segments_line(segments: list[dict[str, Any]]) -> str:
    """``"2 segments: steps 1-3 (0.4 s), steps 4-6 (0.3 s)"``: the optimiser steps and training time of each."""
    def one(segment: dict[str, Any]) -> str:
        start, end, seconds = segment["from_step"], segment["to_step"], segment["train_s"]
        steps = f"steps {start + 1}-{end}" if end > start else "no step"
        return f"{steps} ({'time unknown' if seconds is None else f'{seconds:.1f} s'})"

    return f"{len(segments)} segment{'s' if len(segments) != 1 else ''}: " + ", ".join(one(s) for s in segments)


class ResumeState(TrainerCallback):
    """What a checkpoint keeps beyond the Trainer's own files, so that a resumed run goes on as the
    uninterrupted one would and its record counts the whole run.

    The Trainer's checkpoint restores the weights, optimiser, scheduler, RNG states and the data
    position (it skips the batches already trained). This callback adds, in
    :data:`RESUME_STATE` (one file per process: each carries its own streams):

    - ``holders``: the ``resume_state()`` of each holder (:func:`resume_state_holders`), given
      back to its ``load_resume_state`` before the resumed run's first step;
    - ``segments``: ``{"from_step", "to_step", "train_s", "wall_s"}`` of each process run
      (``train()`` call) whose steps the checkpoint holds: one unless the run was resumed;
      ``train_s`` from the start of training, ``wall_s`` from ``started``, until the checkpoint.

    Args:
        holders: name -> holder (:func:`resume_state_holders`).
        checkpoint: the checkpoint the run resumes from (None: a fresh run).
        started: when this process started the run (a ``time.perf_counter()``).
    """

    def __init__(self, holders: dict[str, Any], checkpoint: str | None, started: float) -> None:
        self.holders = holders
        self.checkpoint = checkpoint
        self.started = started
        self.earlier: list[dict[str, Any]] = []  # the run's segments before this one
        self.start_step, self.t0 = 0, time.perf_counter()

    def on_train_begin(self, args, state, control, **kwargs):
        self.start_step, self.t0 = state.global_step, time.perf_counter()
        if self.checkpoint is not None:
            self.earlier = self.load(Path(self.checkpoint) / RESUME_STATE.format(process=args.process_index), state.global_step)
            log.info("resume: step %d of the run, after %s", state.global_step, segments_line(self.earlier))
        return control

    def load(self, path: Path, step: int) -> list[dict[str, Any]]:
        """Give each holder its state from ``path``; return the earlier segments (one of unknown time without the file)."""
        if not path.is_file():
            log.warning("resume: %s is missing, so the carried states start afresh and the time of the first %d steps is unknown",
                        path, step)
            return [{"from_step": 0, "to_step": step, "train_s": None, "wall_s": None}]
        saved = torch.load(path, map_location="cpu", weights_only=True)
        for name, holder in self.holders.items():
            if name in saved["holders"]:
                holder.load_resume_state(saved["holders"][name])
        return list(saved["segments"])

    def segments(self, step: int) -> list[dict[str, Any]]:
        """The run's segments up to optimiser step ``step``, this one last (timed until now)."""
        now = time.perf_counter()
        return [*self.earlier, {"from_step": self.start_step, "to_step": step, "train_s": now - self.t0, "wall_s": now - self.started}]

    def on_save(self, args, state, control, **kwargs):
        folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        saved = {"segments": self.segments(state.global_step), "holders": {n: h.resume_state() for n, h in self.holders.items()}}
        files.atomic_write(folder / RESUME_STATE.format(process=args.process_index), lambda tmp: torch.save(saved, tmp))
        return control


class EpochEval(TrainerCallback):
    """``train.eval_each_epoch``: evaluate the validation split after each epoch, on the main process.

    The metrics go into ``state.log_history`` (saved with checkpoints, so a resumed run keeps
    them) and to the tracker; per-example rows, if any, are not kept (only the final evaluation's are).
    Under DDP the other processes go on to the next step and wait there for the main one.
    """

    def __init__(self, task: Task, eval_datasets: dict[str, Any], tracker: Any | None) -> None:
        self.task = task
        self.eval_datasets = eval_datasets
        self.tracker = tracker

    def on_epoch_end(self, args, state, control, model=None, **kwargs):
        if "validation" not in self.eval_datasets or not state.is_world_process_zero:
            return control
        metrics = self.task.evaluate(model, "validation", self.eval_datasets["validation"]).metrics
        state.log_history.append({"epoch": state.epoch, "step": state.global_step, **metrics})
        tracking.log_metrics(self.tracker, metrics, state.global_step)
        return control


class StepLog(TrainerCallback):
    """Each Trainer log (the training loss of every ``train.logging_steps`` steps) into the run log and wandb.

    The run log is Python logging, which Hydra writes to the job's ``<job>.log`` (multirun/ or
    outputs/) as well as to the terminal.
    """

    def __init__(self, run: Any | None) -> None:
        self.run = run

    def on_log(self, args, state, control, logs=None, **kwargs):
        values = {k: v for k, v in (logs or {}).items() if k in tracking.STEP_KEYS}
        if set(values) - {"epoch"} and state.is_world_process_zero:  # not the end-of-training summary
            tracking.log.info("step %d/%d: %s", state.global_step, state.max_steps, ", ".join(f"{k}={v:.5g}" for k, v in values.items()))
            if self.run is not None:
                self.run.log({**{f"train/{k}": v for k, v in values.items()}, "train/global_step": state.global_step})
        return control


class SaveRunConfig(TrainerCallback):
    """Write the run's resolved config into each checkpoint folder, last, once the checkpoint is saved
    (:func:`softmax_zoo.preflight.resume_checkpoint` compares it with the config resuming it)."""

    def __init__(self, cfg: DictConfig) -> None:
        self.config = OmegaConf.to_container(cfg, resolve=True)

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            files.write_text(folder / CONFIG_FILE, json.dumps(self.config, indent=1, default=str))
        return control


class BarsOnly(ProgressCallback):
    """The Trainer's progress bars without its per-step printout (:class:`StepLog` logs each step)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        return control


def precision_flags(precision: str) -> dict[str, bool]:
    """``train.precision`` -> TrainingArguments ``bf16``/``fp16``.

    auto: bf16 on a CUDA GPU that supports it, fp16 on an older GPU, fp32 on CPU.
    """
    if precision == "auto":
        if not torch.cuda.is_available():
            precision = "fp32"
        else:
            precision = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    if precision not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"train.precision must be auto, fp32, bf16 or fp16, got {precision!r}")
    return {"bf16": precision == "bf16", "fp16": precision == "fp16"}


def save_flags(save_steps: int | str) -> dict[str, Any]:
    """``train.save_steps`` -> TrainingArguments ``save_strategy``/``save_steps``.

    N > 0: a checkpoint every N optimiser steps; 0: none; ``"epoch"``: one at the end of each epoch
    (named ``checkpoint-<step>`` like the others; its ``trainer_state.json`` holds the epoch).
    """
    if save_steps == "epoch":
        return {"save_strategy": "epoch"}
    if not isinstance(save_steps, int) or save_steps < 0:
        raise ValueError(f"train.save_steps must be an integer >= 0 or 'epoch', got {save_steps!r}")
    return {"save_strategy": "steps" if save_steps > 0 else "no", "save_steps": save_steps if save_steps > 0 else 500}


def eval_flags(train: DictConfig) -> dict[str, Any]:
    """``train.eval_steps`` -> TrainingArguments' evaluation and best-checkpoint flags.

    0: no evaluation during training (the run evaluates its last weights). N > 0: validation every N
    optimiser steps and the checkpoint best by ``train.metric_for_best_model`` (``train.greater_is_better``)
    loaded at the end of training, so that the run evaluates that one; ``train.save_steps`` must then
    be a multiple of N (the Trainer keeps the best checkpoint beyond ``train.save_total_limit``).
    """
    steps = train.get("eval_steps", 0)
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ValueError(f"train.eval_steps must be an integer >= 0, got {steps!r}")
    if steps == 0:
        return {"eval_strategy": "no"}
    save = train.save_steps
    if isinstance(save, bool) or not isinstance(save, int) or save <= 0 or save % steps:
        raise ValueError(f"train.eval_steps={steps} needs train.save_steps a positive multiple of it (the best checkpoint "
                         f"must be saved), got {save!r}")
    return {
        "eval_strategy": "steps",
        "eval_steps": steps,
        "load_best_model_at_end": True,
        "metric_for_best_model": train.metric_for_best_model,
        "greater_is_better": bool(train.greater_is_better),
    }


def training_arguments(cfg: DictConfig) -> TrainingArguments:
    """TrainingArguments from ``cfg.train`` (names as in transformers 5.x)."""
    t = cfg.train
    if t.grad_accum < 1:
        raise ValueError(f"train.grad_accum must be >= 1, got {t.grad_accum}")
    if not 0.0 <= t.warmup_ratio < 1.0:
        raise ValueError(f"train.warmup_ratio must be in [0, 1), got {t.warmup_ratio}")
    return TrainingArguments(
        output_dir=str(Path(hydra.utils.to_absolute_path(cfg.output_dir))),
        num_train_epochs=t.epochs,
        max_steps=t.max_steps,
        per_device_train_batch_size=t.batch_size,
        per_device_eval_batch_size=t.eval_batch_size,
        learning_rate=t.lr,
        weight_decay=t.weight_decay,
        warmup_steps=float(t.warmup_ratio),  # a float in [0, 1) is a fraction of the total steps
        lr_scheduler_type=t.lr_scheduler,
        optim=t.optim,
        gradient_accumulation_steps=t.grad_accum,
        max_grad_norm=t.max_grad_norm,
        logging_strategy="steps",
        logging_steps=t.logging_steps,
        logging_nan_inf_filter=False,  # a NaN loss must reach NonFiniteLossGuard, not be averaged away
        **eval_flags(t),  # the final evaluation is Task.evaluate, called by run()
        **save_flags(t.save_steps),
        save_total_limit=t.save_total_limit,
        seed=cfg.seed,
        report_to=[],  # wandb is driven by softmax_zoo.tracking, not the Trainer's WandbCallback
        run_name=cfg.run_name,
        remove_unused_columns=False,  # the task's collator already gives exactly the forward's inputs
        dataloader_num_workers=t.num_workers,
        dataloader_pin_memory=torch.cuda.is_available(),
        # Without CUDA run on the CPU explicitly: only then does accelerate set up multi-process
        # CPU training (gloo) under torchrun instead of N independent copies.
        use_cpu=not torch.cuda.is_available(),
        ddp_find_unused_parameters=t.ddp_find_unused_parameters,
        disable_tqdm=not progress.enabled(),
        **precision_flags(t.precision),
    )
