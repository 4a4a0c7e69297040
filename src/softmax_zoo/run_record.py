"""The run record, typed: :class:`RunRecord` is the one home of the record's schema.

A run writes ``<results_dir>/runs/<experiment_name>/<run_name>.json`` (:meth:`RunRecord.save`); pages and studies
read its fields as attributes::

    r = RunRecord.load(path)
    r.metrics["test/rouge1"], r.choice("loss"), r.option("loss", "k"), r.setting("train", "lr")
    r.seed, r.git.commit, r.dirty, r.timing["wall_s"], r.task_info["vocab_size"]
    r.arm("k")  # ("sparse_softmax", 20): what the run's loss is, its choice and the options that tell arms apart

The JSON keeps the resolved config and Hydra's group choices (``choices``: task, model, loss, sampler, scale,
experiment, start; a study's own arms for a run made outside the training pipeline), the Hydra job, the wandb run, git
(commit, dirty flag, the changed files the run is made from, allow_dirty), seed, data (meta.json and the sha256 of
each prepared file read), metrics, the heads as built, per-step training loss, history, timings, device, versions and
command line. Committed records are evidence: an older record is upgraded as it is read (:meth:`RunRecord.of`: a
field it lacks reads as absent, e.g. ``git.dirty_paths`` None, "not recorded"), never rewritten.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from . import provenance
from .config import hydra_choices
from .files import write_text

RECORD_SCHEMA = 1
OPTIONAL = ("data", "model", "train_loss", "device", "task_info", "choices_from", "selection")  # left out of the JSON when None


@dataclass(frozen=True)
class GitState:
    """The code a run was made from: its commit, whether it had uncommitted changes and which files they were.

    ``dirty_paths`` (the changed files the run is made from, the first of them) and ``dirty_paths_more`` (how many more)
    are None in a record from before they were kept; ``allow_dirty`` None in one from before it was kept.
    """

    commit: str | None = None
    dirty: bool | None = None
    dirty_paths: tuple[str, ...] | None = None
    dirty_paths_more: int | None = None
    allow_dirty: bool | None = None

    @classmethod
    def of(cls, git: Mapping[str, Any] | None) -> GitState:
        git = git or {}
        paths = git.get("dirty_paths")
        return cls(git.get("commit"), git.get("dirty"), None if paths is None else tuple(paths), git.get("dirty_paths_more"),
                   git.get("allow_dirty"))

    @classmethod
    def of_file(cls, data: Mapping[str, Any]) -> GitState:
        """The code a measurement file (a JSON that is not a run record) was made from, by its ``git`` entry."""
        return cls.of(data.get("git"))

    @property
    def changed(self) -> bool:
        """Made with uncommitted changes: changed files are named, or (a record that names none) any tracked file changed."""
        return bool(self.dirty_paths) if self.dirty_paths is not None else bool(self.dirty)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commit": self.commit, "dirty": self.dirty}
        if self.dirty_paths is not None:
            out["dirty_paths"] = list(self.dirty_paths)
        for name in ("dirty_paths_more", "allow_dirty"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out


@dataclass(frozen=True)
class RunRecord:
    """One run's record (see the module docstring); the fields are the JSON's top-level keys, in its order."""

    schema: int = RECORD_SCHEMA
    experiment: str | None = None
    run_name: str | None = None
    created: str | None = None
    seed: int | None = None
    choices: dict[str, str | None] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)  # the resolved config; read it by setting() and option()
    git: GitState = field(default_factory=GitState)
    data: dict[str, Any] | None = None
    metrics: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] | None = None
    train_loss: dict[str, list] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    timing: dict[str, Any] = field(default_factory=dict)
    device: dict[str, Any] | None = None
    versions: dict[str, str] = field(default_factory=dict)
    command: str = ""
    task_info: dict[str, Any] | None = None
    job: dict[str, Any] = field(default_factory=dict)
    wandb: dict[str, Any] | None = None
    choices_from: str | None = None  # how choices were filled in a record written before they were kept
    selection: dict[str, Any] | None = None  # the checkpoint a run chose by validation and evaluated (None: its last weights)

    # ------------------------------------------------------------------ reading

    @classmethod
    def of(cls, record: RunRecord | Mapping[str, Any]) -> RunRecord:
        """``record`` typed: a RunRecord as it is, a record's JSON (of any schema up to :data:`RECORD_SCHEMA`) upgraded.

        Raises:
            ValueError: a newer schema than this code reads, or a key that no schema has.
        """
        if isinstance(record, RunRecord):
            return record
        schema = record.get("schema", RECORD_SCHEMA)
        if schema > RECORD_SCHEMA:
            raise ValueError(f"record {record.get('run_name')!r} has schema {schema}; this code reads up to {RECORD_SCHEMA}")
        known = {f.name for f in fields(cls)}
        if unknown := sorted(set(record) - known):
            raise ValueError(f"record {record.get('run_name')!r} has keys no record schema has: {unknown} (known: {sorted(known)})")
        given = {k: v for k, v in record.items() if v is not None}  # a field a record holds as null reads as its default
        return cls(**given | {"schema": schema, "git": GitState.of(record.get("git"))})

    @classmethod
    def of_row(cls, row: Mapping[str, Any]) -> RunRecord:
        """The run a measurement's row stands for, by the choices and config it keeps (a head of the side-by-side speed
        measurement, studies/lm_speed.py), its other entries left out."""
        return cls(choices=dict(row.get("choices") or {}), config=dict(row.get("config") or {}))

    @classmethod
    def load(cls, path: str | Path) -> RunRecord:
        """The record in the JSON file ``path``, upgraded to this schema (the file is left as it is)."""
        return cls.of(json.loads(Path(path).read_text(encoding="utf-8")))

    def choice(self, group: str) -> str | None:
        """The run's choice of ``group``: Hydra's (``"loss"`` -> ``"sparse_softmax"``) or a study's arm.

        Raises:
            KeyError: the record keeps no choice of ``group`` (a record written without Hydra).
        """
        if group not in self.choices:
            raise KeyError(f"record {self.run_name!r} keeps no choices[{group!r}] (its choices: {self.choices})")
        return self.choices[group]

    def setting(self, *keys: str) -> Any:
        """The resolved config's value under ``keys`` (``setting("train", "lr")``); None where the run's config has none."""
        return below(self.config, keys)

    def info(self, *keys: str) -> Any:
        """What the task reported under ``keys`` (``info("sizes", "train")``); None where it reported none."""
        return below(self.task_info, keys)

    def option(self, group: str, name: str) -> Any:
        """Option ``name`` of the run's choice of ``group`` (``option("loss", "k")`` -> 20); None where it has none."""
        return self.setting(group, name)

    def arm(self, *options: str, group: str = "loss") -> tuple:
        """What the run's ``group`` is, as pages key arms: its choice and the values of ``options`` (``("sparse_softmax", 20)``)."""
        return (self.choices.get(group), *(self.option(group, name) for name in options))

    @property
    def dirty(self) -> bool:
        """Made with uncommitted changes (:attr:`GitState.changed`)."""
        return self.git.changed

    # ------------------------------------------------------------------ writing

    def to_dict(self) -> dict[str, Any]:
        """The record's JSON (strict: non-finite floats as "inf", "-inf", "nan"); a study's absent fields left out."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["git"] = self.git.to_dict()
        return finite({k: v for k, v in out.items() if v is not None or k not in OPTIONAL})

    def path(self, runs: str | Path) -> Path:
        """``runs/<experiment>/<run_name>.json``."""
        return record_path(runs, str(self.experiment), str(self.run_name))

    def save(self, runs: str | Path) -> Path:
        """Write the record to :meth:`path` atomically; return the path (nothing is written if the JSON fails)."""
        text = json.dumps(self.to_dict(), indent=1, allow_nan=False)  # raises before anything is written
        return write_text(self.path(runs), text)

    @classmethod
    def new(cls, *, experiment: str, run_name: str, seed: int, choices: Mapping[str, str | None], config: dict[str, Any],
            command: Sequence[str], git: Mapping[str, Any] | None = None, **fields_: Any) -> RunRecord:
        """A record of a run finishing now: ``created`` now, ``versions`` and (unless given) ``git`` read now, ``command``
        quoted so that it can be pasted into a shell; ``fields_`` the rest (metrics, history, timing, ...)."""
        return cls(experiment=experiment, run_name=run_name, created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   seed=seed, choices=dict(choices), config=config,
                   git=GitState.of(provenance.git_state() if git is None else git), versions=provenance.versions(),
                   command=shlex.join(command), **fields_)


    @classmethod
    def of_config(cls, cfg: DictConfig, *, choices: Mapping[str, str | None] | None = None, job: dict[str, Any] | None = None,
                  task_info: dict[str, Any] | None = None, command: Sequence[str], **fields_: Any) -> RunRecord:
        """The record of the training pipeline's run of the composed ``cfg``: its experiment, run name, seed and resolved
        config; ``choices`` the running Hydra composition's unless given (:func:`softmax_zoo.config.hydra_choices`),
        ``task_info`` as JSON holds it (a value it cannot hold as its ``repr``); ``fields_`` as for :meth:`new`."""
        return cls.new(experiment=cfg.experiment_name, run_name=cfg.run_name, seed=cfg.seed,
                       choices=hydra_choices() if choices is None else choices, config=OmegaConf.to_container(cfg, resolve=True),
                       command=command, task_info=jsonable(task_info), job=job or {}, **fields_)


def below(value: Any, keys: Sequence[str]) -> Any:
    """``value[keys[0]][keys[1]]...``; None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(value, Mapping) or key not in value:
            return None
        value = value[key]
    return value


def record_path(runs: str | Path, experiment: str, run_name: str) -> Path:
    """``runs/<experiment>/<run_name>.json``."""
    return Path(runs) / experiment / f"{run_name}.json"


def load_runs(runs: str | Path = "results/runs", experiment: str | None = None) -> list[RunRecord]:
    """Every record under ``runs`` (only ``runs/<experiment>/`` if given), sorted by path, typed."""
    root = Path(runs) / experiment if experiment else Path(runs)
    return [RunRecord.load(p) for p in sorted(root.rglob("*.json"))]


def typed(records: Iterable[RunRecord | Mapping[str, Any]]) -> list[RunRecord]:
    """Each of ``records`` typed (:meth:`RunRecord.of`)."""
    return [RunRecord.of(r) for r in records]


def finite(value: Any) -> Any:
    """``value`` with each non-finite float replaced by its string ("inf", "-inf", "nan")."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its ``repr`` (task.info may hold tokenizers etc.)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)
