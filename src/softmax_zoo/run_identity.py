"""Which override keys make a run's identity: the one table that run names, resume and the sweep page read.

Each key (an :mod:`fnmatch` pattern of a config key) has one role in :data:`RUN_IDENTITY`:

- ``NAMED``: the base run name holds it (``<task>_<model>_<loss>_<scale>_seed<seed>``, an experiment's own parts,
  ``start=`` and the ``init_from`` it sets), so the name's suffix leaves it out; a changed one is another run.
- ``EXTENDS``: it only extends a run, its step budget and how it is evaluated: ``resume=true train.max_steps=2000``
  continues a 1,500-step run, so names leave it out and resume accepts a new value; the sweep page tabulates it (a
  longer budget is another result).
- ``NOTHING``: it changes nothing a run computes: names, folders, logging, progress, checkpoint intervals, the
  switches of a re-run (``resume``, ``overwrite``, ``allow_dirty``). Names leave it out, resume and the
  record-exists check ignore it, and the sweep page never counts it as swept.

configs/hydra/default.yaml's ``override_dirname.exclude_keys`` is ``${zoo.name_excluded:}``, this table's keys.
"""

from __future__ import annotations

import fnmatch

NAMED, EXTENDS, NOTHING = "named", "extends", "nothing"
RUN_IDENTITY = {
    "task": NAMED, "model": NAMED, "loss": NAMED, "scale": NAMED, "seed": NAMED, "experiment": NAMED,
    "start": NAMED, "init_from": NAMED,
    "train.max_steps": EXTENDS, "train.epochs": EXTENDS, "train.eval_batch_size": EXTENDS, "train.eval_each_epoch": EXTENDS,
    "experiment_name": NOTHING, "run_name": NOTHING, "*_dir": NOTHING, "resume": NOTHING, "overwrite": NOTHING,
    "allow_dirty": NOTHING, "reproduction": NOTHING, "logger": NOTHING, "logger.*": NOTHING, "train.progress": NOTHING,
    "train.num_workers": NOTHING, "train.save_steps": NOTHING, "train.save_minutes": NOTHING, "train.save_total_limit": NOTHING,
    "hydra.*": NOTHING,
}  # fmt: skip
POOLED = ("seed",)  # the replicate: pooled over on the sweep page, never a swept value


def keys(*roles: str) -> tuple[str, ...]:
    """The patterns of :data:`RUN_IDENTITY` with one of ``roles``, in the table's order."""
    return tuple(key for key, role in RUN_IDENTITY.items() if role in roles)


NAME_EXCLUDED = keys(NAMED, EXTENDS, NOTHING)  # no run name's suffix holds them
EXTENDS_A_RUN = keys(EXTENDS)
COMPUTES_NOTHING = keys(NOTHING)
RESUME_IGNORED = (*COMPUTES_NOTHING, *EXTENDS_A_RUN)  # may differ between a checkpoint's run and the run resuming it


def matches(key: str, patterns: tuple[str, ...]) -> bool:
    """Whether the config key ``key`` matches one of ``patterns`` (:mod:`fnmatch`)."""
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)


def name_excluded() -> list[str]:
    """``${zoo.name_excluded:}``: :data:`NAME_EXCLUDED` as Hydra's ``override_dirname.exclude_keys`` list."""
    return list(NAME_EXCLUDED)
