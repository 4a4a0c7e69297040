"""The Fig. 1 / Fig. 2 records summarised: grouped by task and arm, their metrics, intervals and curves.

An arm is ``("softmax", None)`` or ``("sparse", k)`` (:func:`loss_key`); a task's groups map each
arm to its records, one per seed. Every function here reads records and returns numbers; the
verdicts are in :mod:`._fig2_claims`, the page's text in :mod:`.fig2`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..losses.registry import variant_label
from ..records import choice, get
from ._stats import format_mean_ci, mean, mean_ci

Groups = dict[tuple, list[dict[str, Any]]]  # arm -> records (one per seed)
TASK_NAMES = {"clinc_oos": "OOS-eval (CLINC150)", "iflytek": "IFLYTEK", "wos": "WoS"}
TRAIN_COMMAND = "python -m softmax_zoo.train"
SWEPT = ("loss.k", "seed")  # the sweep dimensions of configs/experiment/fig2_*.yaml


def task_name(task: str) -> str:
    """The dataset's name as the paper gives it (the config name when it has none)."""
    return TASK_NAMES.get(task, task)


# The arms' kinds are the registered labels of their losses ("softmax", "sparse").
LOSS_OF_KIND = {variant_label(name): name for name in ("softmax", "sparse_softmax")}


def loss_key(record: dict[str, Any]) -> tuple[str, int | None]:
    """("softmax", None) or ("sparse", k) from the record's Hydra choice of loss (other losses: (label, None))."""
    loss = choice(record, "loss")
    return variant_label(loss), (int(get(record, "config.loss.k")) if loss == "sparse_softmax" else None)


def summarize(records: list[dict[str, Any]]) -> dict[str, Groups]:
    """task name -> (loss, k) -> records (one per seed)."""
    out: dict[str, Groups] = {}
    for r in records:
        task = get(r, "config.task.name")
        out.setdefault(task, {}).setdefault(loss_key(r), []).append(r)
    return out


def metric(runs: list[dict[str, Any]], name: str) -> list[float]:
    """``name`` (e.g. "test/micro_f1") of each run, in points (x100), runs lacking it skipped."""
    return [100 * r["metrics"][name] for r in runs if name in r["metrics"]]


def cell(runs: list[dict[str, Any]], name: str) -> str:
    """``name`` over the runs as "mean ± half-width (n=...)" in points, or "—" when no run has it."""
    values = metric(runs, name)
    return format_mean_ci(values, digits=1) if values else "—"


def interval(values: list[float]) -> tuple[float, float]:
    """(low, high) of the 95% interval of the mean; a single value is its own interval."""
    m, half, _ = mean_ci(values)
    half = 0.0 if math.isnan(half) else half
    return m - half, m + half


def compare(a: list[float], b: list[float]) -> str:
    """"higher" / "lower" if b's 95% interval lies wholly above / below a's, else "overlap"."""
    (alo, ahi), (blo, bhi) = interval(a), interval(b)
    return "higher" if blo > ahi else "lower" if bhi < alo else "overlap"


def sparse_ks(groups: Groups) -> list[int]:
    return sorted(k for kind, k in groups if kind == "sparse")


def arms(groups: Groups) -> list[tuple[str, int | None]]:
    """The groups' keys in page order: softmax first, then sparse-softmax by k."""
    return ([("softmax", None)] if ("softmax", None) in groups else []) + [("sparse", k) for k in sparse_ks(groups)]


def first_record(groups: Groups) -> dict[str, Any]:
    """One record of the groups (they share the task, model and training settings)."""
    return next(iter(groups.values()))[0]


def best_k(groups: Groups, name: str = "test/micro_f1") -> int | None:
    ks = sparse_ks(groups)
    return max(ks, key=lambda k: mean(metric(groups[("sparse", k)], name))) if ks else None


def mean_curve(runs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Steps and the per-step training loss averaged over the runs (truncated to the shortest)."""
    curves = [r["train_loss"] for r in runs if r.get("train_loss", {}).get("loss")]
    n = min(len(c["loss"]) for c in curves)
    return np.asarray(curves[0]["step"][:n]), np.mean([c["loss"][:n] for c in curves], axis=0)


def moving_average(y: np.ndarray, window: int) -> np.ndarray:
    window = max(1, min(window, len(y)))
    return np.convolve(y, np.ones(window) / window, mode="valid")


def epoch_curves(runs: list[dict[str, Any]], name: str = "val/micro_f1") -> list[list[tuple[float, float]]]:
    """Per run that evaluated each epoch (``train.eval_each_epoch``): its (epoch, ``name`` in points) after each epoch."""
    per_run = [[(h["epoch"], 100 * h[name]) for h in r.get("history", []) if name in h] for r in runs]
    return [c for c in per_run if c]


def epoch_curve(runs: list[dict[str, Any]], name: str = "val/micro_f1") -> tuple[list[float], list[float]]:
    """Epochs and ``name`` (points) after each epoch, averaged over the runs (``train.eval_each_epoch``)."""
    per_run = epoch_curves(runs, name)
    if not per_run:
        return [], []
    n = min(len(c) for c in per_run)
    return [e for e, _ in per_run[0][:n]], [float(np.mean([c[i][1] for c in per_run])) for i in range(n)]


def first_epoch(runs: list[dict[str, Any]], name: str = "val/micro_f1") -> list[float]:
    """``name`` (points) after the first epoch, one value per run that evaluated each epoch."""
    out = []
    for r in runs:
        values = [100 * h[name] for h in r.get("history", []) if name in h]
        if values:
            out.append(values[0])
    return out


def jitters(runs: list[dict[str, Any]]) -> list[float]:
    """Per run: mean |loss_t - loss_(t-1)| over mean loss, how ragged its training curve is."""
    out = []
    for r in runs:
        loss = np.asarray(r.get("train_loss", {}).get("loss", []), dtype=np.float64)
        if len(loss) > 1 and loss.mean() > 0:
            out.append(float(np.abs(np.diff(loss)).mean() / loss.mean()))
    return out


def commands(records: list[dict[str, Any]]) -> list[str]:
    """The multirun commands that made the records, from each record's Hydra overrides (``job.overrides``):
    the overrides the jobs share, with the swept values (``loss.k``, ``seed``) gathered back into ``key=v1,v2,...``."""
    groups: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for r in records:
        overrides = get(r, "job.overrides") or []
        base = tuple(o for o in overrides if o.split("=", 1)[0] not in SWEPT)
        swept = groups.setdefault(base, {})
        for o in overrides:
            key, _, value = o.partition("=")
            if key in SWEPT:
                swept.setdefault(key, set()).add(value)
    out = []
    for base, swept in sorted(groups.items()):
        multi = any(len(v) > 1 for v in swept.values())
        sweeps = [f"{k}={','.join(sorted(v, key=lambda x: (len(x), x)))}" for k, v in sorted(swept.items())]
        out.append(" ".join([TRAIN_COMMAND, *(["-m"] if multi else []), *base, *sweeps]))
    return out
