"""The fig2 records summarised by task and arm: per-seed values in points, training curves, the runs' commands."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..losses.registry import variant_label
from ..records import choice, get
from ._compare import per_seed
from ._stats import DeltaInterval, mean, paired_t

Groups = dict[tuple, list[dict[str, Any]]]  # arm -> records (one per seed)
TASK_NAMES = {"clinc_oos": "OOS-eval (CLINC150)", "iflytek": "IFLYTEK", "wos": "WoS"}
TRAIN_COMMAND = "python -m softmax_zoo.train"
SWEPT = ("loss.k", "seed")  # the sweep dimensions of configs/experiment/fig2_*.yaml
F1 = "test/micro_f1"
PAPER_K = 20  # Sun et al. 2021, Fig. 2: the best k with ~100+ classes, the k of its Fig. 1


def task_name(task: str) -> str:
    """The dataset's name as the paper gives it (the config name when it has none)."""
    return TASK_NAMES.get(task, task)


def loss_key(record: dict[str, Any]) -> tuple[str, int | None]:
    """("softmax", None) or ("sparse", k) from the record's Hydra choice of loss (other losses: (label, None))."""
    loss = choice(record, "loss")
    return variant_label(loss), (int(get(record, "config.loss.k")) if loss == "sparse_softmax" else None)


def summarize(records: list[dict[str, Any]]) -> dict[str, Groups]:
    """task name -> (loss, k) -> records (one per seed)."""
    out: dict[str, Groups] = {}
    for r in records:
        out.setdefault(get(r, "config.task.name"), {}).setdefault(loss_key(r), []).append(r)
    return out


def points(name: str):
    """A record's metric ``name`` (e.g. "test/micro_f1") in points (x100), None without it."""
    return lambda r: 100 * r["metrics"][name] if name in r["metrics"] else None


def first_epoch(r: dict[str, Any]) -> float | None:
    """Validation micro-F1 (points) after the first epoch, None for a run that did not evaluate each epoch."""
    return next((100 * h["val/micro_f1"] for h in r.get("history", []) if "val/micro_f1" in h), None)


def jitter(r: dict[str, Any]) -> float | None:
    """Mean |loss_t - loss_(t-1)| over mean loss, how ragged the run's training curve is (None without one)."""
    loss = np.asarray(r.get("train_loss", {}).get("loss", []), dtype=np.float64)
    return float(np.abs(np.diff(loss)).mean() / loss.mean()) if len(loss) > 1 and loss.mean() > 0 else None


def metric(runs: list[dict[str, Any]], name: str) -> list[float]:
    """``name`` of each run in points, in record order, runs lacking it left out."""
    return list(per_seed(runs, points(name), partial=True).values())


def sparse_ks(groups: Groups) -> list[int]:
    return sorted(k for kind, k in groups if kind == "sparse")


def arms(groups: Groups) -> list[tuple[str, int | None]]:
    """The groups' keys in page order: softmax first, then sparse-softmax by k."""
    return ([("softmax", None)] if ("softmax", None) in groups else []) + [("sparse", k) for k in sparse_ks(groups)]


def first_record(groups: Groups) -> dict[str, Any]:
    """One record of the groups (they share the task, model and training settings)."""
    return next(iter(groups.values()))[0]


def best_k(groups: Groups) -> int | None:
    ks = sparse_ks(groups)
    return max(ks, key=lambda k: mean(metric(groups[("sparse", k)], F1))) if ks else None


def mean_curve(runs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Steps and the per-step training loss averaged over the runs (truncated to the shortest)."""
    curves = [r["train_loss"] for r in runs if r.get("train_loss", {}).get("loss")]
    n = min(len(c["loss"]) for c in curves)
    return np.asarray(curves[0]["step"][:n]), np.mean([c["loss"][:n] for c in curves], axis=0)


def epoch_curves(runs: list[dict[str, Any]]) -> list[list[tuple[float, float]]]:
    """Per run that evaluated each epoch (``train.eval_each_epoch``): its (epoch, validation micro-F1 in points)."""
    per_run = [[(h["epoch"], 100 * h["val/micro_f1"]) for h in r.get("history", []) if "val/micro_f1" in h] for r in runs]
    return [c for c in per_run if c]


def epoch_deltas(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[tuple[float, DeltaInterval]]:
    """Per epoch that both arms evaluated on the seeds they share: Δ = B − A of validation micro-F1 (points), paired by
    seed, with its paired t interval over seeds (:func:`._stats.paired_t`); epochs in order."""
    curves = [{r["seed"]: {h["epoch"]: 100 * h["val/micro_f1"] for h in r.get("history", []) if "val/micro_f1" in h}
               for r in runs} for runs in (a, b)]
    seeds = sorted(s for s in curves[0].keys() & curves[1].keys() if curves[0][s] and curves[1][s])
    if not seeds:
        return []
    epochs = sorted(set.intersection(*(set(c[s]) for c in curves for s in seeds)))
    return [(e, paired_t({s: curves[1][s][e] for s in seeds}, {s: curves[0][s][e] for s in seeds})) for e in epochs]


def commands(records: list[dict[str, Any]]) -> list[str]:
    """The multirun commands that made the records, from each record's Hydra overrides (``job.overrides``):
    the overrides the jobs share, with the swept values (``loss.k``, ``seed``) gathered back into ``key=v1,v2,...``."""
    groups: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for r in records:
        overrides = get(r, "job.overrides") or []
        swept = groups.setdefault(tuple(o for o in overrides if o.split("=", 1)[0] not in SWEPT), {})
        for key, _, value in (o.partition("=") for o in overrides):
            if key in SWEPT:
                swept.setdefault(key, set()).add(value)
    out = []
    for base, swept in sorted(groups.items()):
        multi = any(len(v) > 1 for v in swept.values())
        sweeps = [f"{k}={','.join(sorted(v, key=lambda x: (len(x), x)))}" for k, v in sorted(swept.items())]
        out.append(" ".join([TRAIN_COMMAND, *(["-m"] if multi else []), *base, *sweeps]))
    return out
