"""Run records, per-example prediction files, and the one atomic writer for every file the project writes.

Records: each run writes ``<results_dir>/runs/<experiment_name>/<run_name>.json``. A record holds
the resolved config and Hydra's group choices (``choices``: task, model, loss, sampler, scale,
experiment, start), the Hydra job (``job``: overrides, sweep folder), the wandb run (``wandb``:
path, id, group), git (commit, dirty flag, the changed and untracked files the run is made from, allow_dirty), seed,
data (meta.json, and under ``data.read`` the sha256 of each prepared file read, checked against meta.json;
``data.examples`` per split), metrics, the heads as built
and the parameter count, per-step training loss, timings (wall, train, examples/s for training
and each evaluated split), device, versions and command line, and for a run that evaluated the checkpoint it
chose by validation (``train.eval_steps``) that choice (``selection``) (:func:`make_record`). Per-example
rows of an evaluated split go beside it, ``<run_name>.<split>.predictions.jsonl``
(:func:`predictions_path`). Reading: :func:`load_records` of a folder, :func:`find_records` of a
folder, an experiment or a Hydra multirun folder, :func:`get` of a dotted key.

Writing: :func:`atomic_write` hands a temporary sibling of the target to a writer (text, a
figure, ``torch.save``), fsyncs it and renames it onto the target, so a crash leaves the old file
or none, never half of one; :func:`write_text` is the text case. The file gets the mode a plain
``open(path, "w")`` would give it (:data:`FILE_MODE`, 0644 under the usual umask 022), not the
owner-only 0600 of a temporary file, so a group sharing a results folder can read it.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shlex
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from .config import SCRATCH_DIR, hydra_choices, register_resolvers

RECORD_SCHEMA = 1
REPO_ROOT = Path(__file__).resolve().parents[2]


def _umask() -> int:
    """The process's umask (read by setting it and restoring it at once: there is no read-only call)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# The mode of a file created by open(path, "w"): 0o666 less the umask, read once at import.
FILE_MODE = 0o666 & ~_umask()


# ---------------------------------------------------------------- writing files


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Create ``path`` atomically: ``write(tmp)`` fills a temporary sibling, then fsync and rename.

    Args:
        path: the file to create or replace (parent folders are made).
        write: fills the file it is given, e.g. ``lambda tmp: torch.save(obj, tmp)``.

    Returns:
        ``path``, with mode :data:`FILE_MODE`. On any exception the temporary file is removed and
        ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0600
    os.close(fd)
    try:
        os.chmod(tmp, FILE_MODE)
        write(Path(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write ``rows`` as JSON Lines (UTF-8 kept as is, one object a line) atomically."""
    return write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


# ---------------------------------------------------------------- records


def runs_dir(results_dir: str | Path = "results") -> Path:
    """Folder of the run records: ``<results_dir>/runs``."""
    return Path(results_dir) / "runs"


# The files a run is made from: its code, its configs and its dependencies. Pages and records
# (results/) and every other file are not among them.
RUN_INPUTS = ("src", "configs", "pyproject.toml")
DIRTY_PATHS_KEPT = 20  # a record keeps the first 20 changed paths of RUN_INPUTS, and the count of the rest


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def git_state(repo: Path = REPO_ROOT, cap: int | None = DIRTY_PATHS_KEPT) -> dict[str, Any]:
    """The commit of the code: ``{"commit", "dirty", "dirty_paths", "dirty_paths_more"}`` of the git checkout ``repo``.

    ``dirty_paths``: the files under :data:`RUN_INPUTS` that are not the commit's, sorted: tracked
    files that differ from it (staged or not, deleted ones too) and untracked files that git does not
    ignore (a new module the code imports); the first ``cap`` (None: all), and ``dirty_paths_more``
    counts the rest. ``dirty``: there is one, so a dirty record always names its changed files;
    changes elsewhere (README, results/) change nothing a run computes and do not count. When
    ``repo`` is not the top of a git checkout (an installed package, a source tarball, or one
    inside somebody else's checkout): commit and dirty None, dirty_paths empty.
    """
    unknown = {"commit": None, "dirty": None, "dirty_paths": [], "dirty_paths_more": 0}
    try:
        if Path(_git(repo, "rev-parse", "--show-toplevel").strip()).resolve() != repo.resolve():
            return unknown
        commit = _git(repo, "rev-parse", "HEAD").strip()
        changed = _git(repo, "diff", "--name-only", "-z", "HEAD", "--", *RUN_INPUTS).split("\0")
        untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "-z", "--", *RUN_INPUTS).split("\0")
    except (OSError, subprocess.CalledProcessError):
        return unknown
    paths = sorted({p for p in (*changed, *untracked) if p})
    kept = paths if cap is None else paths[:cap]
    return {"commit": commit, "dirty": bool(paths), "dirty_paths": kept, "dirty_paths_more": len(paths) - len(kept)}


def changed(record: dict[str, Any]) -> bool:
    """Whether ``record``'s run was made with uncommitted changes: it lists changed files the run is made from
    (``git.dirty_paths``), or, in a record from before those were kept, any tracked file was changed (``git.dirty``)."""
    paths = get(record, "git.dirty_paths")
    return bool(paths) if paths is not None else bool(get(record, "git.dirty"))


def changed_files(records: Sequence[dict[str, Any]]) -> str:
    """The changed files behind the runs of ``records`` made with uncommitted changes, as a page names them.

    ``"src/a.py, configs/b.yaml"`` (with ``", and 3 more"`` where a record kept only the first paths);
    ``"changed files not recorded"`` for records from before the files were kept, beside the named ones.
    """
    dirty = [r for r in records if changed(r)]
    paths = sorted({p for r in dirty for p in get(r, "git.dirty_paths") or []})
    more = max((get(r, "git.dirty_paths_more") or 0 for r in dirty), default=0)
    named = ", ".join(paths) + (f", and {more} more" if more else "")
    unnamed = "changed files not recorded" if any(get(r, "git.dirty_paths") is None for r in dirty) else ""
    return "; ".join(part for part in (named, unnamed) if part)


def cpu_info() -> dict[str, str]:
    """The CPU a run computed on: its model name and the instruction set torch's CPU kernels chose
    (``torch.backends.cpu.get_cpu_capability()``: "AVX2", "AVX512", ...). CPU results can depend on
    it: oneDNN picks its kernels, and so its rounding, by the instruction set."""
    import torch

    model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return {"model": model or "unknown", "capability": torch.backends.cpu.get_cpu_capability()}


def versions() -> dict[str, str]:
    """Python, torch, transformers and softmax_zoo versions."""
    import torch
    import transformers

    from . import __version__

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "softmax_zoo": __version__,
    }


def train_loss_curve(log_history: Iterable[dict[str, Any]]) -> dict[str, list]:
    """``{"step": [...], "loss": [...]}`` from the Trainer's ``state.log_history``.

    Each entry is the mean loss over the optimiser steps since the previous log (every step with
    ``train.logging_steps=1``).
    """
    entries = [h for h in log_history if "loss" in h and "step" in h]
    return {"step": [int(h["step"]) for h in entries], "loss": [float(h["loss"]) for h in entries]}


def make_record(
    cfg: DictConfig,
    *,
    metrics: dict[str, float],
    train_loss: dict[str, list],
    history: list[dict[str, Any]],
    data_meta: dict[str, Any],
    task_info: dict[str, Any],
    model_info: dict[str, Any],
    timing: dict[str, Any],
    device: dict[str, Any],
    command: Sequence[str],
    choices: dict[str, str | None] | None = None,
    job: dict[str, Any] | None = None,
    wandb: dict[str, Any] | None = None,
    git: dict[str, Any] | None = None,
    selection: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble a run record (JSON-serialisable; see the module docstring).

    ``choices`` defaults to the running Hydra composition's (:func:`softmax_zoo.config.hydra_choices`);
    ``job`` is the Hydra job (its overrides, and for a multirun the sweep folder and job number,
    :func:`softmax_zoo.config.hydra_job`); ``wandb`` the wandb run's path, id and group (None
    without wandb); ``git`` the code's commit as the run started (:func:`softmax_zoo.preflight.check_provenance`;
    None: :func:`git_state` now); ``selection`` the checkpoint a run chose by validation and evaluated
    (:func:`softmax_zoo.engine.selection`; absent from a record that evaluated its last weights).
    """
    return finite({
        "schema": RECORD_SCHEMA,
        "experiment": cfg.experiment_name,
        "run_name": cfg.run_name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed": cfg.seed,
        "choices": hydra_choices() if choices is None else choices,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "git": git_state() if git is None else git,
        "data": data_meta,
        "metrics": metrics,
        "model": model_info,
        "train_loss": train_loss,
        "history": history,
        "timing": timing,
        "device": device,
        "versions": versions(),
        "command": shlex.join(command),  # quoted so that it can be pasted into a shell
        "task_info": _jsonable(task_info),
        "job": job or {},
        "wandb": wandb,
        **({"selection": selection} if selection is not None else {}),
    })


def study_record(
    *,
    experiment: str,
    run_name: str,
    seed: int,
    choices: dict[str, str | None],
    config: dict[str, Any],
    metrics: dict[str, Any],
    history: list[dict[str, Any]],
    timing: dict[str, Any],
    command: Sequence[str],
) -> dict[str, Any]:
    """The record of a run made outside the training pipeline (a study's own loop), in the training records' schema.

    The same keys as :func:`make_record` where the run has them: ``choices`` are the study's own
    arms (e.g. study, form, dtype), ``config`` every setting of the run, ``metrics`` its final
    numbers, ``history`` its logged steps, ``job`` empty and ``wandb`` None.
    """
    return finite({
        "schema": RECORD_SCHEMA,
        "experiment": experiment,
        "run_name": run_name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed": seed,
        "choices": choices,
        "config": config,
        "git": git_state(),
        "metrics": metrics,
        "history": history,
        "timing": timing,
        "versions": versions(),
        "command": shlex.join(command),
        "job": {},
        "wandb": None,
    })


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its ``repr`` (task.info may hold tokenizers etc.)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def finite(value: Any) -> Any:
    """``value`` with each non-finite float replaced by its string ("inf", "-inf", "nan")."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def record_path(runs: str | Path, experiment: str, run_name: str) -> Path:
    """``runs/<experiment>/<run_name>.json``."""
    return Path(runs) / experiment / f"{run_name}.json"


def write_record(record: dict[str, Any], runs: str | Path) -> Path:
    """Write ``record`` to ``runs/<experiment>/<run_name>.json`` atomically; return the path.

    Strict JSON: non-finite floats (a sparse head's NLL of a gold class outside its top-k is
    inf) are written as the strings "inf", "-inf", "nan"; ``float()`` reads them back.
    """
    record = finite(record)
    text = json.dumps(record, indent=1, allow_nan=False)  # raises before anything is written
    return write_text(record_path(runs, record["experiment"], record["run_name"]), text)


def load_records(runs: str | Path = "results/runs", experiment: str | None = None) -> list[dict[str, Any]]:
    """Every record under ``runs`` (only ``runs/<experiment>/`` if given), sorted by path."""
    root = Path(runs) / experiment if experiment else Path(runs)
    return [json.loads(p.read_text()) for p in sorted(root.rglob("*.json"))]


RESULTS_DIRS = ("results", SCRATCH_DIR)  # where an experiment's records are looked up by default


def find_records(target: str, results_dirs: Sequence[str | Path] = RESULTS_DIRS) -> list[dict[str, Any]]:
    """The records ``target`` names: a folder of records, an experiment (``<results_dir>/runs/<experiment>``, in the first of
    ``results_dirs`` holding it), or a Hydra multirun folder (the records whose ``job.sweep_dir`` it is, where its jobs wrote
    them). Raises FileNotFoundError, listing where it looked, if nothing matches."""
    path = Path(target)
    if path.is_dir() and any(path.glob("*.json")):
        return load_records(path)
    looked = [str(path)]
    for results_dir in results_dirs:
        folder = runs_dir(results_dir) / target
        looked.append(str(folder))
        if folder.is_dir():
            return load_records(folder)
    if path.is_dir():  # a Hydra multirun folder
        sweep = path.resolve()
        folders = list(dict.fromkeys([*job_runs_dirs(path), *(runs_dir(d) for d in results_dirs)]))
        looked += [f"{f} (records of the multirun)" for f in folders]
        found = [r for f in folders if f.is_dir() for r in load_records(f) if (d := get(r, "job.sweep_dir")) and Path(d).resolve() == sweep]
        if found:
            return found
    raise FileNotFoundError(f"no run records for {target!r}: looked in {', '.join(looked)}")


def job_runs_dirs(multirun: Path) -> list[Path]:
    """The records folders the jobs of the Hydra multirun folder ``multirun`` wrote to, in job order: each job's
    ``results_dir`` (``.hydra/config.yaml``) from where it was launched (``hydra.runtime.cwd`` of ``.hydra/hydra.yaml``);
    a job whose ``results_dir`` only a running job resolves is skipped."""
    register_resolvers()  # a saved results_dir may be ${zoo.results_dir:...}
    folders = []
    for saved in sorted(multirun.glob("*/.hydra/config.yaml")):
        try:
            results_dir = OmegaConf.select(OmegaConf.load(saved), "results_dir", throw_on_resolution_failure=True)
        except Exception:  # noqa: BLE001 - an interpolation only a running job resolves: look elsewhere
            continue
        hydra_file = saved.with_name("hydra.yaml")
        cwd = OmegaConf.select(OmegaConf.load(hydra_file), "hydra.runtime.cwd") if hydra_file.is_file() else None
        if results_dir is not None:
            folders.append(runs_dir(Path(cwd or ".") / str(results_dir)))
    return list(dict.fromkeys(folders))


def get(record: dict[str, Any], key: str) -> Any:
    """A dotted key of a record: ``"config.loss.k"``, ``"metrics.test/micro_f1"``, ``"seed"``.

    Metric names contain "/", so only "." separates levels. A missing key gives None.
    """
    value: Any = record
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def choice(record: dict[str, Any], group: str) -> str | None:
    """Hydra's choice of ``group`` (a key of ``config.CHOICE_GROUPS``) for the run: ``"loss"`` -> ``"sparse_softmax"``.

    Raises:
        KeyError: the record does not keep that choice (a record written without Hydra).
    """
    choices = record.get("choices") or {}
    if group not in choices:
        raise KeyError(f"record {record.get('run_name')!r} keeps no choices[{group!r}] (its choices: {choices})")
    return choices[group]


def group_by(records: Iterable[dict[str, Any]], keys: Sequence[str]) -> dict[tuple, list[dict[str, Any]]]:
    """Records grouped by the values of dotted ``keys`` (e.g. ``["choices.loss", "config.loss.k"]``)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(tuple(get(r, k) for k in keys), []).append(r)
    return groups


def seeds_of(records: Iterable[dict[str, Any]]) -> list[int]:
    """The distinct seeds of ``records``, ascending."""
    return sorted({r["seed"] for r in records})


# ---------------------------------------------------------------- per-example predictions


def predictions_path(runs: str | Path, experiment: str, run_name: str, split: str) -> Path:
    """``runs/<experiment>/<run_name>.<split>.predictions.jsonl``, beside the run's record."""
    return Path(runs) / experiment / f"{run_name}.{split}.predictions.jsonl"


def write_predictions(rows: Iterable[dict[str, Any]], runs: str | Path, experiment: str, run_name: str, split: str) -> Path:
    """Write one split's per-example rows (JSON Lines) beside the run's record, atomically."""
    return write_jsonl(predictions_path(runs, experiment, run_name, split), rows)


def read_predictions(record: dict[str, Any], runs: str | Path, split: str = "test") -> list[dict[str, Any]]:
    """The per-example rows of ``split`` written beside ``record``."""
    path = predictions_path(runs, record["experiment"], record["run_name"], split)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: rerun {record['run_name']} (its evaluation writes the predictions)")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]
