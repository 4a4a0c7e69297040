"""Run records and per-example prediction files.

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

The record's schema is :class:`softmax_zoo.run_record.RunRecord`'s (re-exported here with its loader
:func:`load_runs`, which pages and studies read typed); :func:`load_records` and :func:`get` read the
JSON as dicts. Every file is written atomically (:mod:`softmax_zoo.files`); the provenance a record
keeps (git, CPU, versions) is :mod:`softmax_zoo.provenance`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from .config import SCRATCH_DIR, register_resolvers
from .files import write_jsonl
from .run_record import RECORD_SCHEMA, GitState, RunRecord, finite, load_runs, record_path

__all__ = ["RECORD_SCHEMA", "RunRecord", "finite", "load_runs", "record_path"]  # re-exported from run_record


def runs_dir(results_dir: str | Path = "results") -> Path:
    """Folder of the run records: ``<results_dir>/runs``."""
    return Path(results_dir) / "runs"


def changed(record: RunRecord | dict[str, Any]) -> bool:
    """Whether ``record``'s run was made with uncommitted changes (:attr:`RunRecord.dirty`; of a dict, e.g. a measurement
    file, by its ``git`` entry)."""
    return record.dirty if isinstance(record, RunRecord) else GitState.of_file(record).changed


def changed_files(records: Sequence[RunRecord | dict[str, Any]]) -> str:
    """The changed files behind the runs of ``records`` made with uncommitted changes, as a page names them.

    ``"src/a.py, configs/b.yaml"`` (with ``", and 3 more"`` where a record kept only the first paths);
    ``"changed files not recorded"`` for records from before the files were kept, beside the named ones.
    A dict (a measurement file) is read by its ``git`` entry.
    """
    dirty = [g for g in (r.git if isinstance(r, RunRecord) else GitState.of_file(r) for r in records) if g.changed]
    paths = sorted({p for g in dirty for p in g.dirty_paths or ()})
    more = max((g.dirty_paths_more or 0 for g in dirty), default=0)
    named = ", ".join(paths) + (f", and {more} more" if more else "")
    unnamed = "changed files not recorded" if any(g.dirty_paths is None for g in dirty) else ""
    return "; ".join(part for part in (named, unnamed) if part)


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
    None: :func:`softmax_zoo.provenance.git_state` now); ``selection`` the checkpoint a run chose by validation and evaluated
    (:func:`softmax_zoo.engine.selection`; absent from a record that evaluated its last weights).
    """
    return RunRecord.of_config(cfg, metrics=metrics, train_loss=train_loss, history=history, data=data_meta, task_info=task_info,
                               model=model_info, timing=timing, device=device, command=command, choices=choices, job=job,
                               wandb=wandb, git=git, selection=selection).to_dict()


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
    return RunRecord.new(experiment=experiment, run_name=run_name, seed=seed, choices=choices, config=config, metrics=metrics,
                         history=history, timing=timing, command=command).to_dict()


def write_record(record: RunRecord | dict[str, Any], runs: str | Path) -> Path:
    """Write ``record`` to ``runs/<experiment>/<run_name>.json`` atomically; return the path.

    Strict JSON: non-finite floats (a sparse head's NLL of a gold class outside its top-k is
    inf) are written as the strings "inf", "-inf", "nan"; ``float()`` reads them back.
    """
    return RunRecord.of(record).save(runs)


def record_files(folders: Iterable[str | Path]) -> list[Path]:
    """The record files under ``folders``, each once: a record's identity is its resolved file, so a folder reached by
    two spellings (``scratch/runs`` and ``/abs/scratch/runs``, a link) or inside another of ``folders`` counts once.
    In the order of ``folders``, each folder's files sorted by path."""
    seen: dict[Path, Path] = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.json")):
            seen.setdefault(path.resolve(), path)
    return list(seen.values())


def load_records(runs: str | Path = "results/runs", experiment: str | None = None) -> list[dict[str, Any]]:
    """Every record under ``runs`` (only ``runs/<experiment>/`` if given), sorted by path, each file once (:func:`record_files`)."""
    root = Path(runs) / experiment if experiment else Path(runs)
    return [json.loads(p.read_text()) for p in record_files([root])]


RESULTS_DIRS = ("results", SCRATCH_DIR)  # where an experiment's records are looked up by default


def find_records(target: str, results_dirs: Sequence[str | Path] = RESULTS_DIRS) -> list[dict[str, Any]]:
    """The records ``target`` names: a folder of records, an experiment (``<results_dir>/runs/<experiment>``, in the first of
    ``results_dirs`` holding it), or a Hydra multirun folder (the records whose ``job.sweep_dir`` it is, where its jobs wrote
    them). Each record file counts once, however many of those folders reach it (:func:`record_files`). Raises
    FileNotFoundError, listing where it looked, if nothing matches."""
    path = Path(target)
    if path.is_dir() and any(path.glob("*.json")):
        return load_records(path)
    looked = [str(path)]
    for results_dir in () if path.is_absolute() else results_dirs:  # an experiment is a name, never an absolute path
        folder = runs_dir(results_dir) / target
        looked.append(str(folder))
        if folder.is_dir():
            return load_records(folder)
    if path.is_dir():  # a Hydra multirun folder
        sweep = path.resolve()
        folders = list(dict.fromkeys(f.resolve() for f in [*job_runs_dirs(path), *(runs_dir(d) for d in results_dirs)]))
        looked += [f"{f} (records of the multirun)" for f in folders]
        found = [r for p in record_files(f for f in folders if f.is_dir())
                 if (d := get(r := json.loads(p.read_text()), "job.sweep_dir")) and Path(d).resolve() == sweep]
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


def get(record: RunRecord | dict[str, Any], key: str) -> Any:
    """A dotted key of a record: ``"config.loss.k"``, ``"metrics.test/micro_f1"``, ``"seed"``.

    Metric names contain "/", so only "." separates levels. A missing key gives None. Pages and studies read a
    :class:`RunRecord`'s attributes instead (``r.option("loss", "k")``, ``r.metrics["test/micro_f1"]``).
    """
    value: Any = record.to_dict() if isinstance(record, RunRecord) else record
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def choice(record: RunRecord | dict[str, Any], group: str) -> str | None:
    """Hydra's choice of ``group`` (a key of ``config.CHOICE_GROUPS``) for the run: ``"loss"`` -> ``"sparse_softmax"``
    (:meth:`RunRecord.choice`).

    Raises:
        KeyError: the record does not keep that choice (a record written without Hydra).
    """
    if isinstance(record, RunRecord):
        return record.choice(group)
    choices = record.get("choices") or {}
    if group not in choices:
        raise KeyError(f"record {record.get('run_name')!r} keeps no choices[{group!r}] (its choices: {choices})")
    return choices[group]


def group_by(records: Iterable[Any], keys: Sequence[str]) -> dict[tuple, list[Any]]:
    """Records grouped by the values of dotted ``keys`` (e.g. ``["choices.loss", "config.loss.k"]``)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(tuple(get(r, k) for k in keys), []).append(r)
    return groups


def seeds_of(records: Iterable[RunRecord | dict[str, Any]]) -> list[int]:
    """The distinct seeds of ``records``, ascending."""
    return sorted({r.seed if isinstance(r, RunRecord) else r["seed"] for r in records})


# ---------------------------------------------------------------- per-example predictions


def predictions_path(runs: str | Path, experiment: str, run_name: str, split: str) -> Path:
    """``runs/<experiment>/<run_name>.<split>.predictions.jsonl``, beside the run's record."""
    return Path(runs) / experiment / f"{run_name}.{split}.predictions.jsonl"


def write_predictions(rows: Iterable[dict[str, Any]], runs: str | Path, experiment: str, run_name: str, split: str) -> Path:
    """Write one split's per-example rows (JSON Lines) beside the run's record, atomically."""
    return write_jsonl(predictions_path(runs, experiment, run_name, split), rows)


def read_predictions(record: RunRecord | dict[str, Any], runs: str | Path, split: str = "test") -> list[dict[str, Any]]:
    """The per-example rows of ``split`` written beside ``record``."""
    record = RunRecord.of(record)
    path = predictions_path(runs, str(record.experiment), str(record.run_name), split)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: rerun {record.run_name} (its evaluation writes the predictions)")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]
