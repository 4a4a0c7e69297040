"""Checks before training, so that a run fails in seconds rather than after hours of compute.

- :func:`check_writable`: ``results_dir`` and ``output_dir`` can be written (nothing is created).
- :func:`verify_prepared`: the prepared files a task reads still match the sha256 its meta.json
  holds (``make data`` wrote both); returns what the record keeps about the files read.
- :func:`resume_checkpoint`: for ``resume=true``, the newest checkpoint of ``output_dir`` that
  loads, written under the same config (:data:`CONFIG_FILE` inside it, see :class:`SaveRunConfig`).
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from . import records
from .data.layout import sha256_file

log = logging.getLogger(__name__)
CONFIG_FILE = "run_config.json"  # the resolved config, written into every checkpoint folder
TRAINER_STATE = "trainer_state.json"
# Keys that may differ between a checkpoint's run and the run resuming it: the name (made from the
# other keys), and where results, logs and checkpoints go and how progress is shown, which change
# nothing that is computed.
RESUME_IGNORED = (
    "resume", "results_dir", "run_name", "logger", "logger.*", "reproduction",
    "train.progress", "train.num_workers", "train.save_steps", "train.save_total_limit",
)


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
    expected = json.loads(meta_path.read_text(encoding="utf-8")).get("outputs_sha256") or {}
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
            f"prepared data changed since make data: rerun make data TASK={task} ({data_dir}: {'; '.join(changed)})"
        )
    return {"dir": str(data_dir), "files": files}


# ---------------------------------------------------------------- checkpoints


class SaveRunConfig(TrainerCallback):
    """Write the run's resolved config into each checkpoint folder, last, once the checkpoint is saved."""

    def __init__(self, cfg: DictConfig) -> None:
        self.config = OmegaConf.to_container(cfg, resolve=True)

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            records.write_text(folder / CONFIG_FILE, json.dumps(self.config, indent=1, default=str))
        return control


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


def config_differences(saved: dict[str, Any], current: dict[str, Any], ignored=RESUME_IGNORED) -> list[str]:
    """``"key: saved -> current"`` for every key whose value differs, keys of ``ignored`` left out."""
    a, b = flatten(saved), flatten(current)
    keys = sorted(k for k in a.keys() | b.keys() if not any(fnmatch.fnmatchcase(k, p) for p in ignored))
    return [f"{k}: {a.get(k, '<absent>')!r} -> {b.get(k, '<absent>')!r}" for k in keys if a.get(k, "<absent>") != b.get(k, "<absent>")]


def resume_checkpoint(cfg: DictConfig, output_dir: str | Path) -> str | None:
    """The checkpoint ``resume=true`` continues from (None: start fresh).

    Checkpoints are tried newest first; one that would not load (:func:`checkpoint_problem`, e.g. a
    truncated model.safetensors after a killed save) is skipped with a warning naming it.

    Raises:
        ValueError: the checkpoint found was written under another config; the message names the
            keys that differ.
    """
    if not cfg.resume:
        return None
    folder = Path(output_dir)
    found = sorted(
        (p for p in folder.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if p.is_dir() and p.name.split("-")[-1].isdigit()),
        key=lambda p: int(p.name.split("-")[-1]),
        reverse=True,
    ) if folder.is_dir() else []
    for checkpoint in found:
        problem = checkpoint_problem(checkpoint)
        if problem:
            log.warning("resume: skipping %s, it does not load: %s", checkpoint, problem)
            continue
        config_file = checkpoint / CONFIG_FILE
        if not config_file.is_file():
            log.warning("resume: %s keeps no %s, so its config cannot be compared with this run's", checkpoint, CONFIG_FILE)
            return str(checkpoint)
        diff = config_differences(json.loads(config_file.read_text()), OmegaConf.to_container(cfg, resolve=True))
        if diff:
            raise ValueError(
                f"resume=true: {checkpoint} was written under another config ({'; '.join(diff)}); "
                "rerun with its values, or without resume=true (or with another output_dir) to start afresh"
            )
        log.info("resume: continuing from %s", checkpoint)
        return str(checkpoint)
    log.warning("resume=true but no loadable checkpoint in %s: starting from scratch", folder)
    return None
