"""The figures of the Fig. 1 / Fig. 2 page: micro-F1 against k (fig2.png) and the training curves (fig1.png)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ._fig2_claims import F1, PAPER_K, Groups, val_curve
from ._pages import pyplot, save_figure
from ._stats import DeltaInterval, mean_ci, paired_t

SMOOTH = 25  # moving-average window (steps) of the bold fig1 curves


def _k_axis(ax: Any, ks: list[int]) -> None:
    ax.set(xscale="log", xticks=ks, xticklabels=[str(k) for k in ks], xlabel="k (top-k of sparse-softmax)")
    ax.minorticks_off()
    ax.grid(True, alpha=0.3)


def _half(interval: tuple[float, float] | None, centre: float) -> list[float]:
    """[below, above] ``centre`` of an interval, for an error bar (0 where there is none)."""
    if interval is None or any(math.isnan(x) for x in interval):
        return [0.0, 0.0]
    return [centre - interval[0], interval[1] - centre]


def plot_fig2(tasks: list[dict[str, Any]], path: Path) -> None:
    """Per task (:func:`.fig2.task_data`), top: test micro-F1 against k, the softmax baseline as a band; bottom: the
    paired Δ = sparse k − softmax against k, its 95% paired t and Holm-adjusted intervals, and a line at 0."""
    fig, axes = pyplot().subplots(2, len(tasks), figsize=(4.6 * len(tasks) + 3.4, 7.6), squeeze=False)
    for col, task in enumerate(tasks):
        top, bottom = axes[0][col], axes[1][col]
        sparse = [r for r in task["rows"] if r["kind"] == "sparse"]
        ks, stats = [r["k"] for r in sparse], [mean_ci(r[F1]) for r in sparse]
        top.errorbar(ks, [s[0] for s in stats], yerr=[0 if math.isnan(s[1]) else s[1] for s in stats],
                     marker="o", capsize=3, label="sparse-softmax:\nmean ± 95% CI over seeds")
        if task["baseline"]:  # the softmax arm's mean and 95% half-width
            m, h = task["baseline"][0], np.nan_to_num(task["baseline"][1])
            top.axhline(m, color="gray", label="softmax:\nmean (band: 95% CI)")
            top.axhspan(m - h, m + h, color="gray", alpha=0.25)
        _k_axis(top, ks)
        top.set(ylabel="test micro-F1 (%)", title=task["name"])
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


ARMS = {  # fig1's arms: (group, label, colour, line style, marker); distinct styles keep overlapping curves visible
    "softmax": (("softmax", None), "softmax", "C0", "-", "o"),
    "sparse": (("sparse", PAPER_K), f"sparse-softmax k={PAPER_K}", "C3", "--", "s"),
}


def epoch_deltas(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> list[tuple[float, DeltaInterval]]:
    """Per epoch both arms evaluated, in order: Δ = B − A of validation micro-F1 (points), paired t over the seeds both have."""
    curves = [{r["seed"]: c for r in runs if (c := val_curve(r))} for runs in (a, b)]
    seeds = sorted(curves[0].keys() & curves[1].keys())
    epochs = sorted(set.intersection(*(set(c[s]) for c in curves for s in seeds))) if seeds else []
    return [(e, paired_t({s: curves[1][s][e] for s in seeds}, {s: curves[0][s][e] for s in seeds})) for e in epochs]


def fig1_data(groups: Groups) -> dict[str, Any]:
    """Per arm of :data:`ARMS` in ``groups``: each run's (epoch, validation micro-F1) curve, the seed count, the training loss
    per step averaged over the runs (up to the shortest); "paired": :func:`epoch_deltas` of k=20 against softmax."""
    out: dict[str, Any] = {}
    for arm, (key, *_) in ARMS.items():
        if key in groups:
            losses = [r["train_loss"] for r in groups[key] if r.get("train_loss", {}).get("loss")]
            n = min(len(c["loss"]) for c in losses)
            out[arm] = {"curves": [list(c.items()) for r in groups[key] if (c := val_curve(r))], "seeds": len(groups[key]),
                        "steps": np.asarray(losses[0]["step"][:n]), "loss": np.mean([c["loss"][:n] for c in losses], axis=0)}
    out["paired"] = epoch_deltas(groups[ARMS["softmax"][0]], groups[ARMS["sparse"][0]]) if len(out) == 2 else []
    return out


def plot_fig1(tasks: dict[str, dict[str, Any]], path: Path) -> None:
    """Per task (its name -> :func:`fig1_data`), top: validation micro-F1 per epoch (mean bold, each seed thin); middle:
    its paired Δ (k=20 − softmax) per epoch with its 95% paired t interval; bottom: each arm's own training loss."""
    fig, axes = pyplot().subplots(3, len(tasks), figsize=(5.0 * len(tasks) + 3.2, 11.0), squeeze=False)
    for col, (name, arms) in enumerate(tasks.items()):
        top, middle, bottom = axes[0][col], axes[1][col], axes[2][col]
        if paired := arms.get("paired"):
            epochs, deltas = [e for e, _ in paired], [d for _, d in paired]
            yerr = np.array([_half((d.low, d.high), d.delta) for d in deltas]).T
            middle.errorbar(epochs, [d.delta for d in deltas], yerr=yerr, marker="s", color="C3", capsize=3,
                            label=f"k={PAPER_K} − softmax: mean Δ,\n95% paired t interval over seeds")
            middle.axhline(0.0, color="black", linewidth=1.0, label="Δ = 0 (no difference)")
        middle.set_title("Δ validation micro-F1, paired by seed", fontsize=10)
        middle.set(xlabel="epoch", ylabel="Δ validation micro-F1 (points)")
        middle.grid(True, alpha=0.3)
        for arm, (_, label, color, style, marker) in ARMS.items():
            if arm not in arms:
                continue
            curves, steps, loss = arms[arm]["curves"], arms[arm]["steps"], arms[arm]["loss"]
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
                        label=f"{label}: its own loss,\nmean of {arms[arm]['seeds']} seeds (faint), {SMOOTH}-step average (bold)")
        top.set(title=f"{name}: validation micro-F1 (common metric)", xlabel="epoch", ylabel="validation micro-F1 (%)")
        top.grid(True, alpha=0.3)
        bottom.set_title("training loss: each arm's own objective,\nlevels not comparable across arms", fontsize=10)
        bottom.set(xlabel="optimiser step (mini-batch)", ylabel="training loss (own objective, log scale)", yscale="log")
        bottom.grid(True, which="both", alpha=0.3)
    for ax in axes[:, -1]:  # one legend per row, right of the last column, where it hides no curve
        if ax.lines:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    save_figure(fig, path)
