"""The figures of the Fig. 1 / Fig. 2 page: micro-F1 against k (fig2.png) and the training curves (fig1.png)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ._fig2_summary import F1, PAPER_K, Groups, epoch_curves, mean_curve
from ._pages import pyplot, save_figure
from ._stats import mean_ci

SMOOTH = 25  # moving-average window (steps) of the bold fig1 curves


def plot_fig2(tasks: list[dict[str, Any]], path: Path) -> None:
    """Per task (:func:`.fig2.task_data`): sparse-softmax test micro-F1 against k (mean ± 95% CI), the softmax baseline as a band."""
    fig, axes = pyplot().subplots(1, len(tasks), figsize=(5.0 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        sparse = [r for r in task["rows"] if r["kind"] == "sparse"]
        ks, stats = [r["k"] for r in sparse], [mean_ci(r[F1]) for r in sparse]
        ax.errorbar(ks, [s[0] for s in stats], yerr=[0 if math.isnan(s[1]) else s[1] for s in stats],
                    marker="o", capsize=3, label="sparse-softmax (mean ± 95% CI)")
        if soft := [r for r in task["rows"] if r["kind"] == "softmax"]:
            m, h, _ = mean_ci(soft[0][F1])
            h = 0 if math.isnan(h) else h
            ax.axhline(m, color="gray", label="softmax (band: 95% CI)")
            ax.axhspan(m - h, m + h, color="gray", alpha=0.25)
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.set_xlabel("k (top-k of sparse-softmax)")
        ax.set_ylabel("test micro-F1 (%)")
        ax.set_title(task["name"])
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, path)


ARMS = [  # (arm, label, colour, line style, marker): distinct styles, so that overlapping curves stay visible
    (("softmax", None), "softmax", "C0", "-", "o"),
    (("sparse", PAPER_K), f"sparse-softmax k={PAPER_K}", "C3", "--", "s"),
]


def fig1_data(groups: Groups) -> dict[tuple[str, int | None], dict[str, Any]]:
    """Per arm of :data:`ARMS` in ``groups``: its runs' validation micro-F1 per epoch, mean training loss per step, seeds."""
    return {key: {"curves": epoch_curves(groups[key]), "seeds": len(groups[key]), **dict(zip(("steps", "loss"), mean_curve(groups[key])))}
            for key, *_ in ARMS if key in groups}


def plot_fig1(tasks: dict[str, dict[tuple[str, int | None], dict[str, Any]]], path: Path) -> None:
    """Per task (its name -> :func:`fig1_data`), top: validation micro-F1 after each epoch (mean bold, each seed thin);
    bottom: each arm's own training loss."""
    fig, axes = pyplot().subplots(2, len(tasks), figsize=(5.0 * len(tasks) + 3.2, 7.5), squeeze=False)
    for col, (name, arms) in enumerate(tasks.items()):
        top, bottom = axes[0][col], axes[1][col]
        for key, label, color, style, marker in ARMS:
            if key not in arms:
                continue
            curves, steps, loss = arms[key]["curves"], arms[key]["steps"], arms[key]["loss"]
            for curve in curves:
                top.plot(*zip(*curve), color=color, linestyle=style, linewidth=0.8, alpha=0.45, zorder=2)
            if curves:  # the mean over seeds, truncated to the shortest run
                n = min(map(len, curves))
                top.plot([e for e, _ in curves[0][:n]], [float(np.mean([c[i][1] for c in curves])) for i in range(n)], color=color,
                         linestyle=style, marker=marker, linewidth=2.0, zorder=3,
                         label=f"{label}:\nmean of {len(curves)} seeds (bold), each seed (thin)")
            bottom.plot(steps, loss, color=color, alpha=0.3, linewidth=0.7, zorder=2)
            window = max(1, min(SMOOTH, len(loss)))
            smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
            lag = (len(steps) - len(smooth)) // 2  # centre each window on its middle step
            bottom.plot(steps[lag:lag + len(smooth)], smooth, color=color, linestyle=style, linewidth=1.8, zorder=3,
                        label=f"{label}: its own loss,\nmean of {arms[key]['seeds']} seeds (faint), {SMOOTH}-step average (bold)")
        top.set_title(f"{name}: validation micro-F1 (common metric)")
        top.set_xlabel("epoch")
        top.set_ylabel("validation micro-F1 (%)")
        top.grid(True, alpha=0.3)
        bottom.set_title("training loss: each arm's own objective,\nlevels not comparable across arms", fontsize=10)
        bottom.set_xlabel("optimiser step (mini-batch)")
        bottom.set_ylabel("training loss (own objective, log scale)")
        bottom.set_yscale("log")
        bottom.grid(True, which="both", alpha=0.3)
    for ax in axes[:, -1]:  # one legend per row, right of the last column, where it hides no curve
        if ax.lines:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    save_figure(fig, path)
