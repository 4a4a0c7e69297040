"""Sparse-softmax Fig. 1 and Fig. 2 (Sun et al. 2021): results/fig2.md, fig2.png, fig1.png, claims.

Reads the records of the experiments ``fig2_<task>`` (``make reproduce-fig2``): per task, the
full softmax (one run per seed; it has no k) and sparse-softmax for each k of the grid, every one
trained with the same settings (the task file's ``scales`` block in configs/task/).

- fig2.md: test (and validation) micro-F1, mean ± 95% Student-t interval over seeds, per k, with
  the softmax baseline and the paper's Fig. 2 numbers beside ours; each task's data caveat is its
  config's ``caveat`` (configs/task/<task>.yaml).
- fig2.png: test micro-F1 against k, the softmax baseline as a band.
- fig1.png: softmax against sparse-softmax at the paper's k=20. Top: validation micro-F1 after
  each epoch, the metric both arms share (mean over seeds, each seed thin). Below: the training
  loss per mini-batch, as the paper's Fig. 1 plots it; each arm's is its own objective (the
  sparse-softmax loss, logsumexp over the top k, is never above the full cross-entropy of the same
  logits), so the two levels are not comparable, only their shapes.
- the settings table: what the paper's text states beside ours, read from the records (:mod:`._fig2_settings`).
- the title's "Faster": a ledger row from the losses benchmark's side-by-side timing (:func:`._fig2_claims.speed_claim`).

The records are grouped and summarised in :mod:`._fig2_summary`, the claims and verdicts are in
:mod:`._fig2_claims` (computed once per build), the figures in :mod:`._fig2_plots`; this module
writes the page. Build: ``python -m softmax_zoo.reports fig2``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from ..config import CONFIG_DIR
from ..losses.registry import variant_title
from ..markdown import markdown_table
from ..records import get, load_records, runs_dir
from ._fig2_claims import PAPER_F1, PAPER_K, Rows, by_claim, ledger, speed_claim, text_claims
from ._fig2_plots import SMOOTH, plot_fig1, plot_fig2
from ._fig2_settings import encoder, fig2_settings
from ._fig2_summary import (
    LOSS_OF_KIND,
    Groups,
    arms,
    best_k,
    cell,
    commands,
    compare,
    first_record,
    metric,
    sparse_ks,
    summarize,
    task_name,
)
from ._pages import REGIME_NOT_MEASURED, commits, page_command, shown_path, write_page
from ._settings import pretrained_name, settings_part
from ._stats import mean, mean_ci

EXPERIMENT_PREFIX = "fig2_"
FINETUNE_PREFIX = "fig2_finetune_"  # make reproduce-fig2-finetune: shown beside the frozen rows, kept out of their tables


def variant_label(kind: str) -> str:
    """The table's name of an arm's loss: the registered title of its variant ("sparse" -> "sparse-softmax")."""
    return variant_title(LOSS_OF_KIND.get(kind, kind))


def caveat(task: str) -> str | None:
    """What separates the task's runs from the paper's setting: ``caveat`` of configs/task/<task>.yaml (None without one)."""
    path = CONFIG_DIR / "task" / f"{task}.yaml"
    return OmegaConf.load(path).get("caveat") if path.is_file() else None


def task_table(task: str, groups: Groups) -> str:
    extra = [("test/in_scope_accuracy", "test in-scope accuracy")] if task == "clinc_oos" else []
    header = ["loss", "k", "test micro-F1", "val micro-F1", *(h for _, h in extra), "paper (Fig. 2)"]
    rows = []
    for kind, k in arms(groups):
        runs = groups[(kind, k)]
        paper = f"{PAPER_F1[task]} (best k)" if kind == "sparse" and k == PAPER_K and task in PAPER_F1 else "—"
        rows.append([
            variant_label(kind),
            "—" if k is None else k,
            cell(runs, "test/micro_f1"),
            cell(runs, "val/micro_f1"),
            *(cell(runs, key) for key, _ in extra),
            paper,
        ])
    return markdown_table(header, rows)


def setup_line(groups: Groups) -> str:
    r = first_record(groups)
    cfg = r["config"]
    info = r.get("task_info", {})
    model = cfg["model"]
    timing = [x["timing"] for runs in groups.values() for x in runs]
    train_s, wall_s = [t["train_s"] for t in timing], [t["wall_s"] for t in timing]
    eps = [t["train_examples_per_s"] for t in timing]
    return (
        f"model `{model['name']}` ({pretrained_name(model.get('pretrained'))}, {encoder(model)}); "
        f"{info.get('examples', {}).get('train', '?')} training examples, {info.get('num_classes', '?')} classes, "
        f"max length {cfg['task']['max_length']}; {cfg['train']['epochs']} epochs, batch {cfg['train']['batch_size']}, "
        f"lr {cfg['train']['lr']}; scale `{cfg['scale']['name']}`; mean training time {np.mean(train_s):.0f} s per run "
        f"({np.mean(eps):.0f} training examples/s); {len(wall_s)} runs, {sum(wall_s) / 60:.1f} min of run wall time in all."
    )


def topk_line(groups: Groups) -> str:
    """The regime diagnostic per arm: the share of test targets inside the top-k (or that the records lack it)."""
    keys = arms(groups)
    if not all(metric(groups[key], "test/target_in_topk") for key in keys):
        return f"Test targets inside the top-k: {REGIME_NOT_MEASURED}.\n"
    shares = "; ".join(
        f"{'softmax' if kind == 'softmax' else f'k={k}'} {cell(groups[(kind, k)], 'test/target_in_topk')}" for kind, k in keys
    )
    return (f"Test targets inside the top-k (each sparse run's own k; softmax: its top-"
            f"{get(first_record(groups), 'config.task.diagnostics_k')}), %: {shares}.\n")


def task_section(task: str, groups: Groups) -> str:
    """A task's heading, setup, caveat, table, top-k line and verdict sentence."""
    note = caveat(task)
    return (
        f"\n## {task_name(task)}\n\nSetup: {setup_line(groups)}\n\n" + (f"{note}\n\n" if note else "")
        + task_table(task, groups) + f"\n{topk_line(groups)}\n{verdict_sentence(groups)}\n"
    )


def finetuned_section(task: str, groups: Groups) -> str:
    """The rows of runs that fine-tune the encoder's top layers on cached states (``make reproduce-fig2-finetune``)."""
    n = get(first_record(groups), "config.model.cache_layers")
    return (
        f"\n## {task_name(task)}: top {n} encoder layer(s) fine-tuned with the head\n\n"
        f"Setup: {setup_line(groups)}\n\n" + task_table(task, groups) + "\n" + topk_line(groups)
    )


def introduction(records: list[dict[str, Any]], results_dir: str | Path) -> str:
    """The page's title, how it is made (the records' folder and commands) and how to read its numbers."""
    return (
        "# Sparse-softmax Fig. 1 and Fig. 2: k sweep on text classification (Sun et al. 2021)\n\n"
        "Made by `make reproduce-fig2` (OOS-eval and IFLYTEK; WoS by `make reproduce-fig2 FIG2_TASKS=wos`), "
        f"records in {shown_path(runs_dir(results_dir))}/{EXPERIMENT_PREFIX}*/ (from {commits(records)}), "
        f"this page by `{page_command('fig2', results_dir)}`. The runs' commands:\n\n"
        + "".join(f"    {c}\n" for c in commands(records))
        + "\nMicro-F1 (= accuracy, single-label) in %, mean ± 95% Student-t interval over seeds (n = seeds). "
        "Predictions use each head's own rule (sparse-softmax: its top-k distribution). "
        f"The paper's Fig. 2 numbers sit beside ours (its text gives only the k={PAPER_K} values). Its text names no "
        "classification model or training setting (the settings table below); our `scale=paper` (BERT-base uncased / "
        "Chinese fine-tuned on the full training sets, on a GPU) is our choice for approaching them.\n"
    )


def verdict_sentence(groups: Groups) -> str:
    """One task's softmax baseline, best k and the k whose intervals lie wholly above or below the baseline's."""
    ks = sparse_ks(groups)
    if not ks or ("softmax", None) not in groups:
        return "The softmax baseline or the sparse-softmax runs are missing, so no comparison is made."
    soft = metric(groups[("softmax", None)], "test/micro_f1")
    side = {k: compare(soft, metric(groups[("sparse", k)], "test/micro_f1")) for k in ks}
    best = best_k(groups)
    above = [k for k in ks if side[k] == "higher"]
    below = [k for k in ks if side[k] == "lower"]
    m, half, _ = mean_ci(soft)
    return (
        f"Softmax: {m:.1f} ± {half:.1f}. The best sparse k is {best} "
        f"({mean(metric(groups[('sparse', best)], 'test/micro_f1')):.1f}); sparse-softmax intervals wholly above "
        f"the softmax interval: k={above or 'none'}; wholly below it: k={below or 'none'}."
    )


def headline(summary: dict[str, Groups], rows: dict[str, Rows]) -> str:
    """One sentence over all tasks, assembled from the ledger verdicts (``rows``: :func:`ledger`)."""
    verdicts = {task: {key: r["verdict"] for key, r in by_claim(task, rows[task]).items()} for task in summary}

    def names(tasks: list[str]) -> str:
        return ", ".join(task_name(t) for t in tasks) or "none"

    faster = [t for t, v in verdicts.items() if v.get("fig1-convergence", "").startswith("faster: supported")]
    not_faster = [t for t, v in verdicts.items() if "fig1-convergence" in v and t not in faster]
    # decided over enough seeds, and no k's interval wholly below the softmax one
    robust = [t for t, v in verdicts.items() if v.get("fig2-robust-k", "").startswith(("supported", "inconclusive"))]
    best = {t: best_k(g) for t, g in summary.items() if sparse_ks(g)}
    k20 = [t for t, k in best.items() if k == PAPER_K]
    best_text = ", ".join(f"{task_name(t)} k={k}" for t, k in sorted(best.items()))
    return (
        f"In short: sparse-softmax at k={PAPER_K} reached a higher validation micro-F1 than softmax after the first epoch "
        f"on {names(faster)} (not on {names(not_faster)}); no k's 95% interval over seeds lay wholly below the softmax "
        f"one on {names(robust)}; k={PAPER_K} had the best mean on {names(k20)} (best means: {best_text}), "
        "and nothing here tests the paper's absolute micro-F1."
    )


def frozen_tasks(summary: dict[str, Groups]) -> list[str]:
    """The tasks whose runs keep the encoder frozen (``model.cache_features``): only a small head sees the loss."""
    return [t for t in sorted(summary) if get(first_record(summary[t]), "config.model.cache_features")]


def widest_interval(summary: dict[str, Groups]) -> tuple[float, list[int]]:
    """The largest 95% half-width of test micro-F1 over every arm of every task, and the seeds the arms have."""
    halves = [mean_ci(metric(runs, "test/micro_f1"))[1] for groups in summary.values() for runs in groups.values()]
    seeds = sorted({r["seed"] for groups in summary.values() for runs in groups.values() for r in runs})
    return max((h for h in halves if not np.isnan(h)), default=float("nan")), seeds


def discussion(summary: dict[str, Groups], rows: dict[str, Rows], speed: dict[str, str]) -> str:
    """What the numbers do and do not support: the ledger verdicts per task, the title's "Faster", what is not tested."""
    lines = ["\n## What these numbers do and do not support\n", headline(summary, rows) + "\n"]
    for task in sorted(summary):
        keyed = by_claim(task, rows[task])
        said = [f"{label}: {keyed[key]['verdict']} ({keyed[key]['ours']})" for key, label in (
            ("fig1-convergence", "faster/smoother convergence at k=20 (Fig. 1)"),
            ("fig2-k20-best", "k=20 best"),
            ("fig2-robust-k", "robust over k"),
        ) if key in keyed]
        if said:
            lines.append(f"- {task_name(task)}: " + "; ".join(said) + ".")
    lines.append(f"- Faster (the title; ledger row {speed['id']}): {speed['ours']}. Verdict: {speed['verdict']}.")
    frozen = frozen_tasks(summary)
    widest, seeds = widest_interval(summary)
    lines.append(
        "- Not tested here: the paper's absolute numbers, which our `make reproduce-fig2 SCALE=paper` (BERT-base "
        "fine-tuned on the full training sets, a GPU) is meant to approach."
        + (f" Where the encoder is frozen ({', '.join(map(task_name, frozen))}) only a small head sees the loss, so any "
           "effect sparse-softmax has through fine-tuning the encoder cannot show there." if frozen else "")
        + f" With {len(seeds)} seed{'s' if len(seeds) != 1 else ''} the 95% intervals are wide "
        f"(half-widths up to {widest:.1f} points here): "
        "differences between neighbouring k smaller than that are within seed noise.\n"
    )
    return "\n".join(lines)


def fig1_text(summary: dict[str, Groups], tuned: dict[str, Groups]) -> str:
    """What fig1.png shows, panel by panel, with the tasks and seed counts it was drawn from."""
    arms_ = [("softmax", None), ("sparse", PAPER_K)]
    counts = "; ".join(
        f"{task_name(t)}: " + ", ".join(f"{'softmax' if k is None else f'k={k}'} {len(summary[t].get((kind, k), []))}"
                                        for kind, k in arms_)
        for t in sorted(summary)
    )
    return (
        f"\n**Fig. 1** (fig1.png), one column per task, softmax against sparse-softmax at k={PAPER_K} (seeds per arm: {counts}). "
        "Top row: validation micro-F1 after each epoch, the metric both arms share: the mean over seeds (bold, markers) "
        "and each seed (thin). Bottom row: the training loss per mini-batch as the paper's Fig. 1 plots it, the mean over "
        f"seeds (faint) and its {SMOOTH}-step moving average (bold). Each arm's loss is its own objective: sparse-softmax's "
        "cross-entropy over its top k is never above the full cross-entropy of the same logits, so the two levels are not "
        "comparable, only their shapes. The ledger's \"faster\" reads the top row (validation micro-F1 after the first "
        "epoch), its \"smoother\" the bottom row's step-to-step jitter relative to each arm's own mean loss."
        + (f" The fine-tuned {', '.join(map(task_name, sorted(tuned)))} runs are not plotted." if tuned else "")
        + "\n"
    )


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write fig2.md, fig2.png, fig1.png and the fig2 rows of claims.md into ``out`` (default ``results_dir``)."""
    runs = runs_dir(results_dir)
    found = [r for d in sorted(runs.glob(f"{EXPERIMENT_PREFIX}*")) if d.is_dir() for r in load_records(runs, d.name)]
    records = [r for r in found if not r["experiment"].startswith(FINETUNE_PREFIX)]
    tuned = summarize([r for r in found if r["experiment"].startswith(FINETUNE_PREFIX)])
    if not records:
        raise FileNotFoundError(f"no records in {runs}/{EXPERIMENT_PREFIX}*; run `make reproduce-fig2` first")
    out = Path(out or results_dir)
    summary = summarize(records)
    rows = ledger(summary)
    plot_fig2(summary, out / "fig2.png")
    plot_fig1(summary, out / "fig1.png")
    speed = speed_claim(results_dir)
    columns = {task_name(t): [r for runs in summary[t].values() for r in runs] for t in sorted(summary)}
    columns |= {f"{task_name(t)}, top layer(s) fine-tuned": [r for runs in tuned[t].values() for r in runs] for t in sorted(tuned)}
    parts = [introduction(records, results_dir)]
    parts.append("\n" + settings_part(fig2_settings(), columns, "Sun et al. 2021's text on its classification experiments"))
    parts += [task_section(task, summary[task]) for task in sorted(summary)]
    parts += [finetuned_section(task, tuned[task]) for task in sorted(tuned)]
    parts.append(discussion(summary, rows, speed))
    parts.append(fig1_text(summary, tuned))
    parts.append("\n![micro-F1 against k](fig2.png)\n\n"
                 "![validation micro-F1 per epoch (top) and each arm's own training loss (bottom)](fig1.png)\n")
    tuned_rows = ledger(tuned, finetuned=True)
    ledger_rows = [row for task_rows in (*rows.values(), *tuned_rows.values()) for row in task_rows] + text_claims() + [speed]
    write_page(out, "fig2", "".join(parts), ledger_rows)
