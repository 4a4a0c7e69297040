"""The figures of the Fig. 1 / Fig. 2 page: micro-F1 against k (fig2.png) and the training curves (fig1.png)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ._fig2_summary import F1, PAPER_K, Groups, epoch_curves, epoch_deltas, mean_curve
from ._pages import pyplot, save_figure
from ._stats import mean_ci

SMOOTH = 25  # moving-average window (steps) of the bold fig1 curves


def _k_axis(ax: Any, ks: list[int]) -> None:
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(ks)
    ax.set_xticklabels([str(k) for k in ks])
    ax.set_xlabel("k (top-k of sparse-softmax)")
    ax.grid(True, alpha=0.3)


def _half(interval: tuple[float, float] | None, centre: float) -> list[float]:
    """[below, above] ``centre`` of an interval, for an error bar (0 where there is none)."""
    if interval is None or any(math.isnan(x) for x in interval):
        return [0.0, 0.0]
    return [centre - interval[0], interval[1] - centre]


def plot_fig2(tasks: list[dict[str, Any]], path: Path) -> None:
    """Per task (:func:`.fig2.task_data`), top: sparse-softmax test micro-F1 against k (mean ± 95% CI), the softmax
    baseline as a band; bottom: the comparison the verdicts make, Δ = sparse k − softmax paired by seed, with its
    95% paired t interval and the Holm-adjusted one, and a line at 0. The legends sit right of the last column."""
    fig, axes = pyplot().subplots(2, len(tasks), figsize=(4.6 * len(tasks) + 3.4, 7.6), squeeze=False)
    for col, task in enumerate(tasks):
        top, bottom = axes[0][col], axes[1][col]
        sparse = [r for r in task["rows"] if r["kind"] == "sparse"]
        ks, stats = [r["k"] for r in sparse], [mean_ci(r[F1]) for r in sparse]
        top.errorbar(ks, [s[0] for s in stats], yerr=[0 if math.isnan(s[1]) else s[1] for s in stats],
                     marker="o", capsize=3, label="sparse-softmax:\nmean ± 95% CI over seeds")
        if soft := [r for r in task["rows"] if r["kind"] == "softmax"]:
            m, h, _ = mean_ci(soft[0][F1])
            h = 0 if math.isnan(h) else h
            top.axhline(m, color="gray", label="softmax:\nmean (band: 95% CI)")
            top.axhspan(m - h, m + h, color="gray", alpha=0.25)
        _k_axis(top, ks)
        top.set_ylabel("test micro-F1 (%)")
        top.set_title(task["name"])
        if paired := task["paired"]:
            pk, delta = [r["k"] for r in paired], np.array([r["delta"] for r in paired])
            holm = np.array([_half(r["holm"], r["delta"]) for r in paired]).T
            raw = np.array([_half(r["raw"], r["delta"]) for r in paired]).T
            bottom.errorbar(pk, delta, yerr=holm, fmt="none", ecolor="C1", elinewidth=6, alpha=0.35,
                            label="Holm-adjusted interval\n(over the k of the grid)")
            bottom.errorbar(pk, delta, yerr=raw, marker="o", color="C0", capsize=3,
                            label="mean Δ, 95% paired t\ninterval over seeds")
            bottom.axhline(0.0, color="black", linewidth=1.0, label="Δ = 0 (no difference)")
            _k_axis(bottom, pk)
        bottom.set_ylabel("Δ test micro-F1 (points)")
        bottom.set_title("sparse k − softmax, paired by seed", fontsize=10)
    for ax in axes[:, -1]:  # one legend per row, right of the last column, where it hides no error bar
        if ax.lines or ax.collections:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    save_figure(fig, path)


ARMS = [  # (arm, label, colour, line style, marker): distinct styles, so that overlapping curves stay visible
    (("softmax", None), "softmax", "C0", "-", "o"),
    (("sparse", PAPER_K), f"sparse-softmax k={PAPER_K}", "C3", "--", "s"),
]


def fig1_data(groups: Groups) -> dict[Any, Any]:
    """Per arm of :data:`ARMS` in ``groups``: its runs' validation micro-F1 per epoch, mean training loss per step, seeds;
    and under "paired", per epoch the Δ (k=20 − softmax) of validation micro-F1 paired by seed (:func:`epoch_deltas`)."""
    out: dict[Any, Any] = {key: {"curves": epoch_curves(groups[key]), "seeds": len(groups[key]),
                                 **dict(zip(("steps", "loss"), mean_curve(groups[key])))} for key, *_ in ARMS if key in groups}
    (soft, *_), (sparse, *_) = ARMS
    out["paired"] = epoch_deltas(groups[soft], groups[sparse]) if soft in groups and sparse in groups else []
    return out


def plot_fig1(tasks: dict[str, dict[tuple[str, int | None], dict[str, Any]]], path: Path) -> None:
    """Per task (its name -> :func:`fig1_data`), top: validation micro-F1 after each epoch (mean bold, each seed thin);
    middle: Δ (k=20 − softmax) of validation micro-F1 per epoch, paired by seed, with its 95% paired t interval;
    bottom: each arm's own training loss."""
    fig, axes = pyplot().subplots(3, len(tasks), figsize=(5.0 * len(tasks) + 3.2, 11.0), squeeze=False)
    for col, (name, arms) in enumerate(tasks.items()):
        top, middle, bottom = axes[0][col], axes[1][col], axes[2][col]
        if paired := arms.get("paired"):
            epochs, deltas = [e for e, _ in paired], [d for _, d in paired]
            yerr = np.array([[0.0, 0.0] if math.isnan(d.low) else [d.delta - d.low, d.high - d.delta] for d in deltas]).T
            middle.errorbar(epochs, [d.delta for d in deltas], yerr=yerr, marker="s", color="C3", capsize=3,
                            label=f"k={PAPER_K} − softmax: mean Δ,\n95% paired t interval over seeds")
            middle.axhline(0.0, color="black", linewidth=1.0, label="Δ = 0 (no difference)")
        middle.set_title("Δ validation micro-F1, paired by seed", fontsize=10)
        middle.set_xlabel("epoch")
        middle.set_ylabel("Δ validation micro-F1 (points)")
        middle.grid(True, alpha=0.3)
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
