"""The figures of the Fig. 1 / Fig. 2 page: micro-F1 against k (fig2.png) and the training curves (fig1.png)."""

from __future__ import annotations

import math
from pathlib import Path

from ._fig2_claims import PAPER_K
from ._fig2_summary import Groups, epoch_curve, mean_curve, metric, moving_average, sparse_ks, task_name
from ._pages import pyplot, save_figure
from ._stats import mean_ci

SMOOTH = 25  # moving-average window (steps) of the bold fig1 curves


def plot_fig2(summary: dict[str, Groups], path: Path) -> None:
    """Per task: sparse-softmax test micro-F1 against k (mean ± 95% CI), the softmax baseline as a band."""
    tasks = sorted(summary)
    fig, axes = pyplot().subplots(1, len(tasks), figsize=(5.0 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        groups = summary[task]
        ks = sparse_ks(groups)
        stats = [mean_ci(metric(groups[("sparse", k)], "test/micro_f1")) for k in ks]
        ax.errorbar(ks, [s[0] for s in stats], yerr=[0 if math.isnan(s[1]) else s[1] for s in stats],
                    marker="o", capsize=3, label="sparse-softmax (mean ± 95% CI)")
        if ("softmax", None) in groups:
            m, h, _ = mean_ci(metric(groups[("softmax", None)], "test/micro_f1"))
            h = 0 if math.isnan(h) else h
            ax.axhline(m, color="gray", label="softmax (band: 95% CI)")
            ax.axhspan(m - h, m + h, color="gray", alpha=0.25)
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.set_xlabel("k (top-k of sparse-softmax)")
        ax.set_ylabel("test micro-F1 (%)")
        ax.set_title(task_name(task))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, path)


def plot_fig1(summary: dict[str, Groups], path: Path) -> None:
    """Top: training loss per mini-batch; bottom: validation micro-F1 after each epoch."""
    tasks = sorted(summary)
    fig, axes = pyplot().subplots(2, len(tasks), figsize=(5.0 * len(tasks), 7.0), squeeze=False)
    for col, task in enumerate(tasks):
        groups = summary[task]
        top, bottom = axes[0][col], axes[1][col]
        for key, label, color in [(("softmax", None), "softmax", "C0"), (("sparse", PAPER_K), f"sparse-softmax k={PAPER_K}", "C3")]:
            if key not in groups:
                continue
            steps, loss = mean_curve(groups[key])
            top.plot(steps, loss, color=color, alpha=0.25, linewidth=0.7)
            smooth = moving_average(loss, SMOOTH)
            top.plot(steps[len(steps) - len(smooth):], smooth, color=color, label=f"{label} (mean of {len(groups[key])} seeds)")
            epochs, f1 = epoch_curve(groups[key])
            if epochs:
                bottom.plot(epochs, f1, marker="o", color=color, label=label)
        top.set_xlabel("optimiser step (mini-batch)")
        top.set_ylabel("training loss (own objective)")
        top.set_yscale("log")
        top.set_title(task_name(task))
        top.grid(True, which="both", alpha=0.3)
        top.legend(fontsize=8)
        bottom.set_xlabel("epoch")
        bottom.set_ylabel("validation micro-F1 (%)")
        bottom.grid(True, alpha=0.3)
        if bottom.lines:
            bottom.legend(fontsize=8)
    save_figure(fig, path)
