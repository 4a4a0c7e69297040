"""Sparse-softmax Fig. 1 and Fig. 2 (Sun et al. 2021): results/fig2.md, fig2.png, fig1.png and their claims rows.

From the records of ``fig2_<task>`` (``make reproduce-fig2``) and ``fig2_finetune_<task>``: per task the full softmax and
sparse-softmax at each k of the grid, one run per seed. :func:`summarise` gathers the page's data (the claims of
:mod:`._fig2_claims`), templates/fig2.md.j2 holds its words. Build: ``python -m softmax_zoo.reports fig2``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from ..config import CONFIG_DIR
from ..losses.registry import variant_title
from ..records import choice, get, load_records, runs_dir, seeds_of
from ._fig2_claims import F1, PAPER_F1, PAPER_K, STABLE, Groups, best_k, group_runs, metric, speed_claim, task_claims
from ._fig2_plots import SMOOTH, fig1_data, plot_fig1, plot_fig2
from ._pages import commits, page_command, shown_path, write_page
from ._render import render_page, words
from ._settings import NOT_STATED, Setting, pretrained_name, seeds, settings_data, shown, sparse_ks, values
from ._stats import mean, mean_ci
from ._verdicts import MIN_SEEDS, VerdictKind

EXPERIMENT_PREFIX = "fig2_"
FINETUNE_PREFIX = "fig2_finetune_"  # make reproduce-fig2-finetune
TASK_NAMES = {"clinc_oos": "OOS-eval (CLINC150)", "iflytek": "IFLYTEK", "wos": "WoS"}  # as the paper names them
TRAIN_COMMAND = "python -m softmax_zoo.train"
SWEPT = ("loss.k", "seed")  # the sweep dimensions of configs/experiment/fig2_*.yaml
METRICS = (F1, "val/micro_f1", "test/in_scope_accuracy", "test/target_in_topk")  # per arm, in points
# The claims of the paper's text that no fig2 run decides: (kind, ledger id); templates/fig2.md.j2 words them.
TEXT_CLAIMS = (("rcv1", "fig1-convergence-rcv1"), ("margin", "sparse-margin-log-n-1"), ("sota", "sparse-sota-k20"),
               ("simpler", "sparse-simpler"))


def task_name(task: str) -> str:
    return TASK_NAMES.get(task, task)


def caveat(task: str) -> str | None:
    """What separates the task's runs from the paper's setting: ``caveat`` of configs/task/<task>.yaml (None without one)."""
    path = CONFIG_DIR / "task" / f"{task}.yaml"
    return OmegaConf.load(path).get("caveat") if path.is_file() else None


def settings(summary: dict[str, Groups], tuned: dict[str, Groups]) -> dict[str, Any]:
    """The settings table: the paper's statements and our reasons (templates/_fig2_settings.j2), ours per task from its records."""
    text = words("_fig2_settings.j2", paper_k=PAPER_K, paper_f1=PAPER_F1, task_names=TASK_NAMES, min_seeds=MIN_SEEDS)
    readers = {
        "training data": lambda rs: text.data(rs[0].get("task_info", {})),
        "model": lambda rs: text.model(rs[0]["config"]["model"], pretrained_name(get(rs[0], "config.model.pretrained"))),
        "epochs": lambda rs: shown(rs, "config.train.epochs"), "batch size": lambda rs: shown(rs, "config.train.batch_size"),
        "learning rate": lambda rs: shown(rs, "config.train.lr", lambda v: f"{v:g}"),
        "maximum length (tokens)": lambda rs: shown(rs, "config.task.max_length"), "sparse-softmax k": sparse_ks,
        "metric": lambda rs: text.metric(bool(values(rs, "config.task.oos_label"))), "seeds": seeds,
    }
    rows = [Setting(name, text.paper.get(name, NOT_STATED), read, text.why[name]) for name, read in readers.items()]
    columns = {text.column(task_name(t), finetuned): [r for rs in g[t].values() for r in rs]
               for finetuned, g in ((False, summary), (True, tuned)) for t in sorted(g)}
    return settings_data(rows, columns, text.source)


def commands(records: list[dict[str, Any]]) -> list[str]:
    """The multirun commands that made the records, from each record's Hydra overrides (``job.overrides``):
    the overrides the jobs share, with the swept values (:data:`SWEPT`) gathered back into ``key=v1,v2,...``."""
    groups: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for r in records:
        overrides = [o.partition("=") for o in get(r, "job.overrides") or []]
        swept = groups.setdefault(tuple("".join(o) for o in overrides if o[0] not in SWEPT), {})
        for key, _, value in (o for o in overrides if o[0] in SWEPT):
            swept.setdefault(key, set()).add(value)
    return [" ".join([TRAIN_COMMAND, *(["-m"] if any(len(v) > 1 for v in swept.values()) else []), *base,
                      *(f"{k}={','.join(sorted(v, key=lambda x: (len(x), x)))}" for k, v in sorted(swept.items()))])
            for base, swept in sorted(groups.items())]


def task_data(task: str, groups: Groups, *, finetuned: bool = False) -> dict[str, Any]:
    """A task's section: its caveat and claims, the settings its runs share (the first run's config and task info), their
    timing, one row per arm (softmax first, then by k), the paired Δ against softmax per k, the k above and below 0 (Holm)."""
    claims = {c["kind"]: c for c in task_claims(task, groups, finetuned=finetuned)}
    runs = [r for rs in groups.values() for r in rs]
    timing = [r["timing"] for r in runs]
    rows = [{"kind": kind, "k": k, "loss": variant_title(choice(groups[(kind, k)][0], "loss")),
             **{name: metric(groups[(kind, k)], name) for name in METRICS},
             "paper": PAPER_F1.get(task) if (kind, k) == ("sparse", PAPER_K) else None}
            for kind, k in sorted(groups, key=lambda arm: (arm[0] != "softmax", arm[1] or 0))]
    paired, best = claims["robust-k"]["deltas"] if "robust-k" in claims else [], best_k(groups)
    return {"task": task, "name": task_name(task), "caveat": caveat(task), "claims": claims, "config": runs[0]["config"],
            "info": runs[0].get("task_info", {}), "pretrained": pretrained_name(get(runs[0], "config.model.pretrained")),
            "runs": len(runs), "train_s": np.mean([t["train_s"] for t in timing]), "wall_min": sum(t["wall_s"] for t in timing) / 60,
            "rate": np.mean([t["train_examples_per_s"] for t in timing]), "rows": rows, "paired": paired,
            "topk_measured": all(row["test/target_in_topk"] for row in rows), "baseline": mean_ci(rows[0][F1]) if paired else None,
            "best": best, "best_mean": mean(metric(groups[("sparse", best)], F1)) if best is not None else None,
            "above": [r["k"] for r in paired if r["holm"] and r["holm"][0] > 0],
            "below": [r["k"] for r in paired if r["holm"] and r["holm"][1] < 0]}


def headline(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """The tasks the short summary names, by the verdicts of their rows; the widest half-interval of an arm."""
    claims = {t["task"]: t["claims"] for t in tasks}
    k20 = {t: c["k20-vs-softmax"]["verdict"].kind for t, c in claims.items() if "k20-vs-softmax" in c}
    faster = {t: f["verdict"].kind if (f := c["convergence"]["faster"]) else None for t, c in claims.items() if "convergence" in c}
    robust = {t: c["robust-k"]["verdict"].kind for t, c in claims.items() if "robust-k" in c}
    halves = [mean_ci(row[F1])[1] for t in tasks for row in t["rows"]]
    return {"k20_above": [t for t, v in k20.items() if v is VerdictKind.SUPPORTED],
            "k20_open": [t for t, v in k20.items() if v is not VerdictKind.SUPPORTED],
            "faster": [t for t, v in faster.items() if v is VerdictKind.SUPPORTED],
            "not_faster": [t for t, v in faster.items() if v is not VerdictKind.SUPPORTED],
            "robust": [t for t, v in robust.items() if v in (VerdictKind.SUPPORTED, VerdictKind.INCONCLUSIVE)],
            "frozen": [t["task"] for t in tasks if get(t["config"], "model.cache_features")],
            "widest": max((h for h in halves if not np.isnan(h)), default=float("nan"))}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the runs' commands, the settings table, per task its section and claims, Fig. 1's data, the ledger rows."""
    runs = runs_dir(results_dir)
    found = [r for d in sorted(runs.glob(f"{EXPERIMENT_PREFIX}*")) if d.is_dir() for r in load_records(runs, d.name)]
    records = [r for r in found if not r["experiment"].startswith(FINETUNE_PREFIX)]
    tuned_records = [r for r in found if r["experiment"].startswith(FINETUNE_PREFIX)]
    if not records:
        raise FileNotFoundError(f"no records in {runs}/{EXPERIMENT_PREFIX}*; run `make reproduce-fig2` first")
    summary, tuned = group_runs(records), group_runs(tuned_records)
    tasks = [task_data(t, summary[t]) for t in sorted(summary)]
    tuned_tasks = [task_data(t, tuned[t], finetuned=True) for t in sorted(tuned)]
    speed = speed_claim(results_dir)
    return {"folder": shown_path(runs), "prefix": EXPERIMENT_PREFIX, "tuned_prefix": FINETUNE_PREFIX, "commits": commits(records),
            "tuned_commits": commits(tuned_records), "commands": commands(records), "command": page_command("fig2", results_dir),
            "paper_k": PAPER_K, "paper_f1": PAPER_F1, "min_seeds": MIN_SEEDS, "smooth": SMOOTH, "stable": STABLE,
            "task_names": {t: t for t in summary | tuned} | TASK_NAMES,
            "settings": settings(summary, tuned), "tasks": tasks, "tuned": tuned_tasks,
            "headline": headline(tasks), "seeds": seeds_of(records), "speed": speed,
            "fig1": {task_name(t): fig1_data(summary[t]) for t in sorted(summary)},
            "claims": [c for t in tasks + tuned_tasks for c in t["claims"].values()] + [speed]
            + [{"kind": kind, "id": id_, "source": "fig2"} for kind, id_ in TEXT_CLAIMS]}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write fig2.md, fig2.png, fig1.png and the fig2 rows of claims.md into ``out`` (default ``results_dir``)."""
    data, out = summarise(results_dir), Path(out or results_dir)
    plot_fig2(data["tasks"], out / "fig2.png")
    plot_fig1(data["fig1"], out / "fig1.png")
    write_page(out, "fig2", *render_page("fig2.md.j2", data))
