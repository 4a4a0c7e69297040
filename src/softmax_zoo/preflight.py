"""Checks before training, so that a run fails in seconds rather than after hours of compute.

- :func:`check_config`: the composed config's values that need no data: the seed, the logger and the
  loss options (``loss.k=0``); ``python -m softmax_zoo.train`` runs it before it imports the training stack.
- :func:`check_provenance`: a reproduction (``reproduction: true`` at cpu or paper scale, whose
  records are committed) starts only from committed code, or with ``allow_dirty=true``; returns
  what the record keeps about the code's commit.
- :func:`check_writable`: ``results_dir`` and ``output_dir`` can be written (nothing is created).
- :func:`verify_prepared`: the prepared files a task reads still match the sha256 its meta.json
  holds (``make data`` wrote both); returns what the record keeps about the files read.
- :func:`resume_checkpoint`: for ``resume=true``, the newest checkpoint of ``output_dir`` that
  loads, written under the same config (:data:`CONFIG_FILE` inside it, see :class:`softmax_zoo.trainer.SaveRunConfig`)
  but for the keys that only extend a run (:data:`EXTENDS_A_RUN`); with no checkpoint there, an
  unfinished run beside it that this command asks to change (``resume=true loss.k=10`` after an
  interrupted ``loss.k=5``) is refused by name rather than silently started afresh, and a new run
  that starts says so in a warning naming the nearest run beside it and the keys that differ.
- :func:`check_run`: all of these but :func:`check_config`, in one call (:class:`Checked`: what they found).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import math
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import hydra
from omegaconf import DictConfig, OmegaConf

from . import provenance, records, tracking
from .config import COMMITTED_SCALES, hydra_job
from .data.layout import prepare_command, read_meta
from .files import sha256_file
from .run_identity import COMPUTES_NOTHING, EXTENDS_A_RUN, RESUME_IGNORED

log = logging.getLogger(__name__)
CONFIG_FILE = "run_config.json"  # the resolved config, written into every checkpoint folder
TRAINER_STATE = "trainer_state.json"
# The keys a resumed run may change (a longer budget: the schedule then follows the new length from the step resumed)
# and those that change nothing computed: the run-identity table's (softmax_zoo.run_identity), which run names read too.
REPLICATE_KEY = "seed"  # another seed is another replicate, never a changed setting of the same run
ABSENT = "<absent>"  # a key one of two compared configs lacks


# ---------------------------------------------------------------- the config's values


def check_seed(seed: Any) -> int:
    """``seed`` as an int; a ValueError naming ``seed`` otherwise (``seed=abc``, ``seed=1.5``, ``seed=true``)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0 (e.g. seed=0), got seed={seed!r}")
    return seed


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# The training values checked before anything is built: key of cfg.train -> (is it valid, what a valid one is).
TRAINING_VALUES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "lr": (lambda v: _number(v) and v > 0, "a number > 0 (e.g. train.lr=1e-3)"),
    "max_steps": (lambda v: _integer(v) and (v == -1 or v >= 1), "-1 (run train.epochs epochs) or an integer >= 1"),
    "epochs": (lambda v: _number(v) and v > 0, "a number > 0"),
    "batch_size": (lambda v: _integer(v) and v >= 1, "an integer >= 1"),
    "eval_batch_size": (lambda v: _integer(v) and v >= 1, "an integer >= 1"),
    "grad_accum": (lambda v: _integer(v) and v >= 1, "an integer >= 1"),
    "warmup_ratio": (lambda v: _number(v) and 0 <= v < 1, "a fraction of the total steps in [0, 1)"),
    "weight_decay": (lambda v: _number(v) and v >= 0, "a number >= 0"),
    "max_grad_norm": (lambda v: v is None or (_number(v) and v >= 0), "a number >= 0 (0: no clipping) or null"),
    "logging_steps": (lambda v: _integer(v) and v >= 1, "an integer >= 1"),
    "save_steps": (lambda v: v == "epoch" or (_integer(v) and v >= 0), "an integer >= 0 (0: no checkpoints) or 'epoch'"),
    "save_total_limit": (lambda v: v is None or (_integer(v) and v >= 1), "an integer >= 1 or null (keep all)"),
    "eval_subset": (lambda v: v is None or (_integer(v) and v >= 1), "an integer >= 1 or null (every example)"),
    "eval_each_epoch": (lambda v: isinstance(v, bool), "true or false"),
    "precision": (lambda v: v in ("auto", "fp32", "bf16", "fp16"), "auto, fp32, bf16 or fp16"),
}


def check_training(train: DictConfig) -> None:
    """Raise ``ValueError`` naming the first bad value of ``cfg.train`` (:data:`TRAINING_VALUES`: the learning rate,
    steps, epochs, batch sizes, warmup, save and evaluation settings), e.g. "train.lr must be a number > 0 (e.g.
    train.lr=1e-3), got train.lr=-1", before the model is loaded. A key the config does not set is left alone."""
    for key, (valid, what) in TRAINING_VALUES.items():
        if key in train and not valid(value := train[key]):
            raise ValueError(f"train.{key} must be {what}, got train.{key}={value!r}")


def check_config(cfg: DictConfig) -> None:
    """Raise ``ValueError`` naming a bad ``seed``, ``logger``, training value (``train.lr=-1``) or loss option
    (``loss.k=0``) of the composed config.

    These checks need no data, no model and no Trainer; the loss options are the head's own checks
    (:func:`softmax_zoo.models.heads.check_loss_options`), which import torch, so they come last.
    """
    check_seed(cfg.seed)
    tracking.check_logger(cfg)
    check_training(cfg.train)
    from .models.heads import check_loss_options

    check_loss_options(cfg.loss)


# ---------------------------------------------------------------- provenance

SHOWN_PATHS = 5  # changed files a refusal names


def is_reproduction(cfg: DictConfig) -> bool:
    """Whether the run is a reproduction: its experiment sets ``reproduction: true`` and the scale is cpu or paper."""
    return bool(cfg.get("reproduction")) and cfg.scale.name in COMMITTED_SCALES


def dirty_refusal(state: dict[str, Any]) -> str:
    """The message refusing a reproduction from uncommitted code (a :func:`softmax_zoo.provenance.git_state`),
    naming the first changed files."""
    paths, total = state["dirty_paths"], len(state["dirty_paths"]) + state["dirty_paths_more"]
    shown = ", ".join(paths[:SHOWN_PATHS]) + (f" and {total - SHOWN_PATHS} more" if total > SHOWN_PATHS else "")
    return (
        f"a reproduction starts from committed code, and {total} file(s) under "
        f"{', '.join(provenance.RUN_INPUTS)} are not as in commit {state['commit'][:7]} (changed or untracked): {shown}; "
        "nothing was trained: commit them (or remove the untracked ones), or add allow_dirty=true "
        "(the record keeps git.allow_dirty and the changed paths)"
    )


def check_provenance(cfg: DictConfig) -> dict[str, Any]:
    """The record's ``git``: the code's commit (:func:`softmax_zoo.provenance.git_state`) and ``allow_dirty``.

    Only files under :data:`softmax_zoo.provenance.RUN_INPUTS` count, tracked ones that changed and
    untracked ones alike: pages and records that other runs write never stop a run. Outside a git
    checkout there is no commit to compare with, and no refusal.

    Raises:
        ValueError: a reproduction (:func:`is_reproduction`) without ``allow_dirty=true`` from code
            that differs from its commit; the message names the changed files.
    """
    state = provenance.git_state()
    allow_dirty = bool(cfg.get("allow_dirty", False))
    if is_reproduction(cfg) and state["dirty"] and not allow_dirty:
        raise ValueError(dirty_refusal(state))
    return {**state, "allow_dirty": allow_dirty}


# ---------------------------------------------------------------- writable outputs


def check_writable(**dirs: str | Path) -> None:
    """Raise unless each folder can be written: a file is created and removed in it, or in its nearest existing parent.

    Args:
        **dirs: config key -> folder, e.g. ``results_dir=results/runs/default``.

    Raises:
        OSError: naming the key, the folder and the reason; raised before anything is trained.
    """
    for key, folder in dirs.items():
        folder = Path(folder).absolute()
        existing = next(p for p in (folder, *folder.parents) if p.exists())
        try:
            if not existing.is_dir():
                raise NotADirectoryError(f"{existing} is a file")
            with tempfile.TemporaryFile(dir=existing) as f:
                f.write(b"\0" * 4096)
                f.flush()
                os.fsync(f.fileno())
        except OSError as e:
            raise OSError(f"{key}={folder} is not writable ({e}); nothing was trained: point {key}= at a writable folder") from None


# ---------------------------------------------------------------- a finished run's record


class DoneAlready(NamedTuple):
    """The run's record exists, written by the same config at the same commit: nothing to train."""

    path: Path
    record: dict[str, Any]


def check_record(cfg: DictConfig, runs: Path, git: dict[str, Any]) -> DoneAlready | None:
    """What to do when this run's record (``<runs>/<experiment>/<run>.json``) exists: None to train, else
    :class:`DoneAlready`.

    ``overwrite=true`` replaces it (a warning names it). The same config (the run-identity table's keys that change
    nothing computed left out, :mod:`softmax_zoo.run_identity`: another ``logger=`` is the same run) at the same
    commit (and the same uncommitted files, ``git.dirty_paths``) is done already. ``resume=true`` with only a
    longer budget or another evaluation (``EXTENDS_A_RUN``) continues the run and replaces its record. Anything else is refused.

    Raises:
        ValueError: naming the record, the keys that differ (or the commits), and ``overwrite=true``.
    """
    path = records.record_path(runs, cfg.experiment_name, cfg.run_name)
    if not path.is_file():
        return None
    if cfg.get("overwrite"):
        log.warning("overwrite=true: this run replaces the record %s", path)
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    saved, current = record.get("config") or {}, OmegaConf.to_container(cfg, resolve=True)
    keys = differing_keys(saved, current, COMPUTES_NOTHING)
    extends = [k for k in keys if k in EXTENDS_A_RUN]
    computed = [k for k in keys if k not in EXTENDS_A_RUN]
    commit = (record.get("git") or {}).get("commit")
    if not computed and extends and cfg.get("resume"):
        log.info("resume=true: continuing the run of %s (%s); its record will be replaced", path, ", ".join(extends))
        return None
    dirty = (record.get("git") or {}).get("dirty_paths") or []
    same_code = commit is not None and commit == git.get("commit") and dirty == (git.get("dirty_paths") or [])
    if not keys and same_code:
        return DoneAlready(path, record)
    if keys:
        a, b = flatten(saved), flatten(current)
        why = f"written with {', '.join(setting(k, a) for k in keys)}, this run asks {', '.join(setting(k, b) for k in keys)}"
    elif commit == git.get("commit"):
        why = f"written at commit {str(commit)[:7]} with other uncommitted changes"
    else:
        why = f"written at commit {str(commit)[:7]}, this code is at {str(git.get('commit'))[:7]}"
    hint = "; resume=true continues it" if extends and not computed else ""
    raise ValueError(
        f"this run's record exists: {path} ({why}); nothing was trained: overwrite=true replaces it{hint}, "
        "or give the run another experiment_name= or results_dir="
    )


# ---------------------------------------------------------------- prepared data


def verify_prepared(data_dir: str | Path, task: str) -> dict[str, Any] | None:
    """Check the files ``make data`` wrote into ``data_dir`` against the sha256 in its meta.json.

    Returns:
        ``{"dir": ..., "files": {name: {"sha256", "bytes"}}}`` of the files checked (the record's
        ``data.read``), or None when ``data_dir`` has no meta.json (the task builder then says how
        to prepare it).

    Raises:
        ValueError: "prepared data changed since make data: rerun make data TASK=<task>", naming
            each changed or missing file.
    """
    data_dir = Path(data_dir)
    meta_path = data_dir / "meta.json"
    if not meta_path.is_file():
        return None
    expected = read_meta(data_dir, task=task).get("outputs_sha256") or {}
    files, changed = {}, []
    for name, sha in sorted(expected.items()):
        path = data_dir / name
        if not path.is_file():
            changed.append(f"{name} is missing")
            continue
        files[name] = {"sha256": sha256_file(path), "bytes": path.stat().st_size}
        if files[name]["sha256"] != sha:
            changed.append(f"{name} has sha256 {files[name]['sha256'][:12]}…, meta.json {sha[:12]}…")
    if changed:
        raise ValueError(
            f"prepared data changed since make data: rerun {prepare_command(task, data_dir)} ({data_dir}: {'; '.join(changed)})"
        )
    return {"dir": str(data_dir), "files": files}


# ---------------------------------------------------------------- checkpoints


def checkpoint_problem(folder: Path) -> str | None:
    """Why a checkpoint folder would not load (None: it looks whole).

    Cheap checks of every file a resume reads: the trainer state parses, each safetensors file's
    header covers its data, each ``torch.save`` file (optimizer, scheduler, RNG) is a whole zip.
    """
    state = folder / TRAINER_STATE
    if not state.is_file():
        return f"no {TRAINER_STATE}"
    try:
        json.loads(state.read_text())
    except (ValueError, OSError) as e:
        return f"{TRAINER_STATE} does not parse ({e})"
    from safetensors import safe_open

    for path in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(path), "pt"):
                pass
        except Exception as e:  # noqa: BLE001 - safetensors raises its own error type
            return f"{path.name}: {e}"
    for path in sorted([*folder.glob("*.pt"), *folder.glob("*.pth"), *folder.glob("*.bin")]):
        if not zipfile.is_zipfile(path):
            return f"{path.name} is not a whole torch.save file"
    return None


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"train.lr": 0.001, ...}`` of a nested dict (lists stay whole)."""
    if not isinstance(value, dict):
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, sub in value.items():
        flat.update(flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
    return flat


def differing_keys(saved: dict[str, Any], current: dict[str, Any], ignored=RESUME_IGNORED) -> list[str]:
    """The flattened keys whose value differs between two resolved configs, keys of ``ignored`` left out."""
    a, b = flatten(saved), flatten(current)
    keys = sorted(k for k in a.keys() | b.keys() if not any(fnmatch.fnmatchcase(k, p) for p in ignored))
    return [k for k in keys if a.get(k, ABSENT) != b.get(k, ABSENT)]


def setting(key: str, flat: dict[str, Any]) -> str:
    """``key=value`` as typed on the command line (``loss.k=5``; ``key`` absent: ``no key``)."""
    if key not in flat:
        return f"no {key}"
    value = flat[key]
    shown = value if isinstance(value, str) else json.dumps(value)
    return f"{key}={shown}"


def refusal(checkpoint: Path, saved: dict[str, Any], current: dict[str, Any], keys: list[str]) -> str:
    """The message refusing to resume ``checkpoint``: each key with its value there and in this run."""
    a, b = flatten(saved), flatten(current)
    there = ", ".join(setting(k, a) for k in keys)
    here = ", ".join(setting(k, b) for k in keys)
    back = " ".join(setting(k, a) if k in a else f"~{k}" for k in keys)
    return (
        f"resume=true: {checkpoint.name} in {checkpoint.parent} was written with {there}, this run asks {here}; "
        f"use a new run (drop resume=true) or set {back}"
    )


def checkpoints_newest_first(folder: Path) -> list[Path]:
    """The ``checkpoint-<step>`` folders of ``folder``, the highest step first ([] when there is none)."""
    if not folder.is_dir():
        return []
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    found = (p for p in folder.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if p.is_dir() and p.name.split("-")[-1].isdigit())
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]), reverse=True)


def asked_keys(overrides: list[str]) -> list[str]:
    """The config keys a job's command-line overrides set (a group choice such as ``loss=...``: its package, ``loss``)."""
    keys = []
    for line in overrides:
        key = line.split("=", 1)[0].lstrip("+~").split("@")[0]
        keys.append(key.replace("/", "."))
    return keys


def is_under(key: str, asked: list[str]) -> bool:
    """Whether ``key`` is one of ``asked`` or inside one (``loss.k`` is under ``loss``)."""
    return any(key == a or key.startswith(a + ".") for a in asked)


class Sibling(NamedTuple):
    """Another run folder of the same experiment, as its newest loadable checkpoint tells it."""

    checkpoint: Path
    saved: dict[str, Any]  # the config it was written with
    keys: list[str]  # the keys whose value differs from this run's (names, folders and EXTENDS_A_RUN left out)
    record: Path  # its record, written once it finished


def siblings(cfg: DictConfig, output_dir: Path) -> list[Sibling]:
    """The other run folders beside ``output_dir`` of the same replicate (the same seed), by folder name.

    Each is represented by its newest checkpoint that loads and keeps its config (:data:`CONFIG_FILE`);
    a folder without one is left out.
    """
    if not output_dir.parent.is_dir():
        return []
    current = OmegaConf.to_container(cfg, resolve=True)
    found = []
    for folder in sorted(output_dir.parent.iterdir()):
        if folder == output_dir or not folder.is_dir():
            continue
        checkpoint = next((c for c in checkpoints_newest_first(folder) if not checkpoint_problem(c) and (c / CONFIG_FILE).is_file()), None)
        if checkpoint is None:
            continue
        saved = json.loads((checkpoint / CONFIG_FILE).read_text())
        keys = differing_keys(saved, current, (*RESUME_IGNORED, "output_dir"))
        if keys and REPLICATE_KEY not in keys:
            runs = records.runs_dir(saved.get("results_dir", ""))
            record = records.record_path(runs, str(saved.get("experiment_name")), str(saved.get("run_name")))
            found.append(Sibling(checkpoint, saved, keys, record))
    return found


def changed_run(cfg: DictConfig, found: list[Sibling]) -> Sibling | None:
    """The unfinished run of ``found`` (:func:`siblings`) that this single run's overrides change (the run meant to be resumed).

    One is returned when its record is not written (an interrupted run) and every key that differs is a
    key this job sets on the command line, e.g. only ``loss.k`` for ``resume=true loss.k=10`` after
    ``loss.k=5``. Sweeps (``-m``) are left alone: a new value there is a new job. None when nothing fits.
    """
    job = hydra_job()
    if job.get("mode") == "MULTIRUN":
        return None
    asked = [k for k in asked_keys(job.get("overrides") or []) if k != "resume"]
    return next((s for s in found if not s.record.is_file() and all(is_under(k, asked) for k in s.keys)), None)


def new_run_warning(folder: Path, nearest: Sibling | None, current: dict[str, Any]) -> str:
    """What ``resume=true`` says when it starts a new run: that it does, and the nearest run beside it with its differing keys."""
    message = f"resume=true found no checkpoint in {folder}: this is a NEW run, from step 0"
    if nearest is None:
        return message
    a, b = flatten(nearest.saved), flatten(current)
    state = f"finished, record {nearest.record}" if nearest.record.is_file() else "unfinished"
    back = " ".join(setting(k, a) if k in a else f"~{k}" for k in nearest.keys)
    return (
        f"{message}. The nearest run beside it, {nearest.checkpoint.parent.name} ({state}), has {nearest.checkpoint.name} "
        f"written with {', '.join(setting(k, a) for k in nearest.keys)}, this run asks {', '.join(setting(k, b) for k in nearest.keys)}; "
        f"to continue that run instead, set {back}"
    )


def resume_checkpoint(cfg: DictConfig, output_dir: str | Path) -> str | None:
    """The checkpoint ``resume=true`` continues from (None: start fresh).

    Checkpoints are tried newest first; one that would not load (:func:`checkpoint_problem`, e.g. a
    truncated model.safetensors after a killed save) is skipped with a warning naming it.

    With no checkpoint to resume, the run starts afresh, and a warning says so and names the
    nearest run beside it (:func:`siblings`: the fewest differing keys) with the keys that differ
    and how to continue it instead (:func:`new_run_warning`): a finished run beside a new job of a
    sweep or a study's chain is no run to resume.

    Raises:
        ValueError: the checkpoint found was written under another config, or there is none and an
            unfinished run beside it differs from this one only in keys this command sets
            (:func:`changed_run`); the message names each key with both values.
    """
    if not cfg.resume:
        return None
    folder = Path(output_dir)
    current = OmegaConf.to_container(cfg, resolve=True)
    for checkpoint in checkpoints_newest_first(folder):
        problem = checkpoint_problem(checkpoint)
        if problem:
            log.warning("resume: skipping %s, it does not load: %s", checkpoint, problem)
            continue
        config_file = checkpoint / CONFIG_FILE
        if not config_file.is_file():
            log.warning("resume: %s keeps no %s, so its config cannot be compared with this run's", checkpoint, CONFIG_FILE)
            return str(checkpoint)
        saved = json.loads(config_file.read_text())
        keys = differing_keys(saved, current)
        if keys:
            raise ValueError(refusal(checkpoint, saved, current, keys))
        log.info("resume: continuing from %s", checkpoint)
        return str(checkpoint)
    found = siblings(cfg, folder)
    changed = changed_run(cfg, found)
    if changed is not None:
        raise ValueError(refusal(changed.checkpoint, changed.saved, current, changed.keys))
    nearest = min(found, key=lambda s: len(s.keys), default=None)
    log.warning("%s", new_run_warning(folder, nearest, current))
    return None


# ---------------------------------------------------------------- every check of a run, in one call


class Checked(NamedTuple):
    """What the checks before a run found: what the record keeps, where the run writes, what it continues."""

    git: dict[str, Any]  # :func:`check_provenance`
    data_read: dict[str, Any] | None  # :func:`verify_prepared` (None: a task generated in memory)
    runs: Path  # the records' folder, ``<results_dir>/runs``
    output_dir: Path  # the checkpoints' folder
    done: DoneAlready | None  # :func:`check_record`: the run is done already
    checkpoint: str | None  # :func:`resume_checkpoint`: the checkpoint to continue from


def check_run(cfg: DictConfig) -> Checked:
    """Every check before anything is built, in order: the code's commit (:func:`check_provenance`), the prepared
    data (:func:`verify_prepared`), writable folders (:func:`check_writable`), an existing record
    (:func:`check_record`) and the checkpoint to resume (:func:`resume_checkpoint`, not looked for when the run is done).

    Raises:
        ValueError: from each check (uncommitted code, changed data, a record or checkpoint of another config).
        OSError: ``results_dir`` or ``output_dir`` not writable.
    """
    git = check_provenance(cfg)
    data_dir = cfg.task.get("data_dir")
    data_read = verify_prepared(hydra.utils.to_absolute_path(data_dir), cfg.task.name) if data_dir else None
    runs = records.runs_dir(hydra.utils.to_absolute_path(cfg.results_dir))
    output_dir = Path(hydra.utils.to_absolute_path(cfg.output_dir))
    check_writable(results_dir=runs / cfg.experiment_name, output_dir=output_dir)
    done = check_record(cfg, runs, git)
    checkpoint = resume_checkpoint(cfg, output_dir) if done is None else None
    return Checked(git, data_read, runs, output_dir, done, checkpoint)
