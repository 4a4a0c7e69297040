"""Sparse-softmax Fig. 1 and Fig. 2 (Sun et al. 2021): results/fig2.md, fig2.png, fig1.png, claims.

Reads the records of the experiments ``fig2_<task>`` (``make reproduce-fig2``): per task, the
full softmax (one run per seed; it has no k) and sparse-softmax for each k of the grid, every one
trained with the same settings (the task file's ``scales`` block in configs/task/).

- fig2.md: test (and validation) micro-F1, mean ± 95% Student-t interval over seeds, per k, with
  the softmax baseline and the paper's Fig. 2 numbers beside ours; each task's data caveat is its
  config's ``caveat`` (configs/task/<task>.yaml).
- every comparison is paired by seed (arms of one seed share initialisation and data order:
  tests/classification/test_pairing.py): Δ = sparse k − softmax per seed, a Student-t interval over
  seeds, Holm-adjusted over the grid of k where a claim covers the grid (:mod:`._fig2_claims`).
- fig2.png: top, test micro-F1 against k, the softmax baseline as a band; bottom, the paired Δ
  against k with its raw and Holm-adjusted intervals and a line at 0.
- fig1.png: softmax against sparse-softmax at the paper's k=20. Top: validation micro-F1 after
  each epoch, the metric both arms share (mean over seeds, each seed thin). Middle: its paired Δ
  per epoch with a line at 0. Bottom: the training
  loss per mini-batch, as the paper's Fig. 1 plots it; each arm's is its own objective (the
  sparse-softmax loss, logsumexp over the top k, is never above the full cross-entropy of the same
  logits), so the two levels are not comparable, only their shapes.
- the settings table: what the paper's text states beside ours, read from the records (:mod:`._fig2_settings`).
- the title's "Faster": a ledger row from the losses benchmark's side-by-side timing (:func:`._fig2_claims.speed_claim`);
  its "Simpler" and the text's "state-of-the-art" are ledger rows of their own (by construction, not tested).

The records are grouped in :mod:`._fig2_summary`, the claims are data of :mod:`._fig2_claims`
(computed once per build), the figures are drawn by :mod:`._fig2_plots`; :func:`summarise` gathers
the page's data and templates/fig2.md.j2 holds its words. Build: ``python -m softmax_zoo.reports fig2``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from ..config import CONFIG_DIR
from ..losses.registry import variant_title
from ..records import choice, get, load_records, runs_dir
from ._fig2_claims import PAIRING_TEST, PAPER_F1, STABLE_MARGIN, STABLE_SOURCE, grid_rows, speed_claim, task_claims, vs_softmax
from ._fig2_plots import SMOOTH, fig1_data, plot_fig1, plot_fig2
from ._fig2_settings import encoder, fig2_settings
from ._fig2_summary import F1, PAPER_K, Groups, arms, best_k, commands, first_record, metric, sparse_ks, summarize, task_name
from ._pages import commits, page_command, shown_path, write_page
from ._render import render_page
from ._settings import pretrained_name, settings_data
from ._stats import mean, mean_ci
from ._verdicts import VerdictKind

EXPERIMENT_PREFIX = "fig2_"
FINETUNE_PREFIX = "fig2_finetune_"  # make reproduce-fig2-finetune: shown beside the frozen rows, kept out of their tables
SIMPLER_TEST = "tests/losses/test_sparse.py::test_k_equal_num_classes_is_full_softmax"  # the title's "Simpler": what ours is


def caveat(task: str) -> str | None:
    """What separates the task's runs from the paper's setting: ``caveat`` of configs/task/<task>.yaml (None without one)."""
    path = CONFIG_DIR / "task" / f"{task}.yaml"
    return OmegaConf.load(path).get("caveat") if path.is_file() else None


def setup(groups: Groups) -> dict[str, Any]:
    """The settings the task's runs share, and their timing."""
    r = first_record(groups)
    model, timing = r["config"]["model"], [x["timing"] for runs in groups.values() for x in runs]
    return {"model": model["name"], "pretrained": pretrained_name(model.get("pretrained")), "encoder": encoder(model),
            "config": r["config"], "info": r.get("task_info", {}), "train_s": np.mean([t["train_s"] for t in timing]),
            "rate": np.mean([t["train_examples_per_s"] for t in timing]), "runs": len(timing),
            "wall_min": sum(t["wall_s"] for t in timing) / 60}


def task_data(task: str, groups: Groups) -> dict[str, Any]:
    """A task's section: its setup, caveat, one row per arm, the top-k shares, the softmax baseline against each k."""
    rows = [{"kind": kind, "k": k, "loss": variant_title(choice(groups[(kind, k)][0], "loss")),
             **{name: metric(groups[(kind, k)], name) for name in (F1, "val/micro_f1", "test/in_scope_accuracy", "test/target_in_topk")},
             "paper": PAPER_F1.get(task) if kind == "sparse" and k == PAPER_K else None} for kind, k in arms(groups)]
    soft, ks, grid = groups.get(("softmax", None)), sparse_ks(groups), vs_softmax(groups)
    paired = grid_rows(grid)[1] if grid else []
    side = {r["k"]: "higher" if r["holm"][0] > 0 else "lower" if r["holm"][1] < 0 else "open" for r in paired if r["holm"]}
    return {"task": task, "name": task_name(task), "caveat": caveat(task), "setup": setup(groups), "rows": rows,
            "cache_layers": get(first_record(groups), "config.model.cache_layers"),
            "diagnostics_k": get(first_record(groups), "config.task.diagnostics_k"),
            "topk_measured": all(row["test/target_in_topk"] for row in rows),
            "baseline": mean_ci(metric(soft, F1)) if soft and ks else None, "best": best_k(groups),
            "best_mean": mean(metric(groups[("sparse", best_k(groups))], F1)) if ks else None,
            "paired": paired, "above": [k for k in ks if side.get(k) == "higher"], "below": [k for k in ks if side.get(k) == "lower"]}


def headline(summary: dict[str, Groups], claims: dict[str, dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """What the short summary names: the tasks where k=20 was faster (and where not), robust over k, best at k=20."""
    converged = [t for t in summary if "convergence" in claims[t]]
    faster = [t for t in converged if (c := claims[t]["convergence"]["faster"]) and c["verdict"].kind is VerdictKind.SUPPORTED]
    best = {t: best_k(g) for t, g in summary.items() if sparse_ks(g)}
    halves = [mean_ci(metric(runs, F1))[1] for groups in summary.values() for runs in groups.values()]
    k20 = [t for t in summary if "k20-vs-softmax" in claims[t]]
    return {"faster": faster, "not_faster": [t for t in converged if t not in faster],
            "k20_above": [t for t in k20 if claims[t]["k20-vs-softmax"]["verdict"].kind is VerdictKind.SUPPORTED],
            "k20_open": [t for t in k20 if claims[t]["k20-vs-softmax"]["verdict"].kind is not VerdictKind.SUPPORTED],
            "robust": [t for t in summary if "robust-k" in claims[t]
                       and claims[t]["robust-k"]["verdict"].kind in (VerdictKind.SUPPORTED, VerdictKind.INCONCLUSIVE)],
            "best": dict(sorted(best.items())), "k20": [t for t, k in best.items() if k == PAPER_K],
            "frozen": [t for t in sorted(summary) if get(first_record(summary[t]), "config.model.cache_features")],
            "widest": max((h for h in halves if not np.isnan(h)), default=float("nan")),
            "seeds": sorted({r["seed"] for groups in summary.values() for runs in groups.values() for r in runs})}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the runs' commands, the settings, per task its section and claims, the discussion, the ledger rows."""
    runs = runs_dir(results_dir)
    found = [r for d in sorted(runs.glob(f"{EXPERIMENT_PREFIX}*")) if d.is_dir() for r in load_records(runs, d.name)]
    records = [r for r in found if not r["experiment"].startswith(FINETUNE_PREFIX)]
    if not records:
        raise FileNotFoundError(f"no records in {runs}/{EXPERIMENT_PREFIX}*; run `make reproduce-fig2` first")
    tuned_records = [r for r in found if r["experiment"].startswith(FINETUNE_PREFIX)]
    summary, tuned = summarize(records), summarize(tuned_records)
    claims = {t: {c["kind"]: c for c in task_claims(t, summary[t])} for t in sorted(summary)}
    tuned_claims = [c for t in sorted(tuned) for c in task_claims(t, tuned[t], finetuned=True)]
    columns = {task_name(t): [r for runs in summary[t].values() for r in runs] for t in sorted(summary)}
    columns |= {f"{task_name(t)}, top layer(s) fine-tuned": [r for runs in tuned[t].values() for r in runs] for t in sorted(tuned)}
    speed = speed_claim(results_dir)
    text_claims = [{"kind": kind, "id": id_, "source": "fig2"} for kind, id_ in (
        ("rcv1", "fig1-convergence-rcv1"), ("margin", "sparse-margin-log-n-1"), ("sota", "sparse-sota-k20"), ("simpler", "sparse-simpler"))]
    return {"folder": shown_path(runs), "prefix": EXPERIMENT_PREFIX, "commits": commits(records), "commands": commands(records),
            "tuned_prefix": FINETUNE_PREFIX, "tuned_commits": commits(tuned_records),
            "command": page_command("fig2", results_dir), "paper_k": PAPER_K, "smooth": SMOOTH, "paper_f1": PAPER_F1,
            "pairing_test": PAIRING_TEST, "stable_margin": STABLE_MARGIN, "stable_source": STABLE_SOURCE, "simpler_test": SIMPLER_TEST,
            "task_names": {t: task_name(t) for t in summary | tuned},
            "settings": settings_data(fig2_settings(), columns, "Sun et al. 2021's text on its classification experiments"),
            "tasks": [task_data(t, summary[t]) for t in sorted(summary)], "tuned": [task_data(t, tuned[t]) for t in sorted(tuned)],
            "task_claims": claims, "headline": headline(summary, claims), "speed": speed,
            "fig1": {task_name(t): fig1_data(summary[t]) for t in sorted(summary)},
            "fig1_counts": {t: [len(summary[t].get(arm, [])) for arm in (("softmax", None), ("sparse", PAPER_K))] for t in sorted(summary)},
            "claims": [c for t in claims.values() for c in t.values()] + tuned_claims + text_claims + [speed]}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write fig2.md, fig2.png, fig1.png and the fig2 rows of claims.md into ``out`` (default ``results_dir``)."""
    data, out = summarise(results_dir), Path(out or results_dir)
    plot_fig2(data["tasks"], out / "fig2.png")
    plot_fig1(data["fig1"], out / "fig1.png")
    write_page(out, "fig2", *render_page("fig2.md.j2", data))
