"""Sun et al. 2021's Fig. 1 from the fig2 records: the k=20 and softmax arms' validation curves and training losses.

The measures of "converges faster and more smoothly" (:data:`FASTER`, :data:`SMOOTHER`: on log loss with the descent
removed, two measures declared before looking), their paired verdicts, the figure's data and the figure (fig1.png).
Words: templates/_fig2_figures.j2 (:data:`FIGURES`, both figures').
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..run_record import RunRecord
from ._compare import Comparison, Design, compare_values, per_seed
from ._fig2_constants import PAPER_K, SOFTMAX, Groups
from ._pages import pyplot, save_figure, template_words
from ._settings import SPARSE
from ._stats import DeltaInterval, mean

SMOOTH = 25  # moving-average window (steps) of the bold fig1 curves
FIGURES = template_words("_fig2_figures.j2", paper_k=PAPER_K, smooth=SMOOTH)


def val_curve(r: RunRecord) -> dict[float, float]:
    """epoch -> validation micro-F1 (points) of a run that evaluated each epoch (``train.eval_each_epoch``); else empty."""
    return {h["epoch"]: 100 * h["val/micro_f1"] for h in r.history if "val/micro_f1" in h}


def log_loss(r: RunRecord) -> np.ndarray | None:
    """The run's logged training losses, as logs (None without a curve of 2+ positive losses)."""
    loss = np.asarray((r.train_loss or {}).get("loss", []), dtype=np.float64)
    return np.log(loss) if len(loss) > 1 and (loss > 0).all() else None


def late_steps(r: RunRecord) -> float | None:
    """Mean |Δ log loss| between logged steps over the second half of training, where the descent has slowed."""
    log = log_loss(r)
    return float(np.abs(np.diff(log[len(log) // 2:])).mean()) if log is not None and len(log) >= 4 else None


def off_trend(r: RunRecord) -> float | None:
    """Mean |log loss − its centred moving average over :data:`SMOOTH` logged steps|: the noise around the descent."""
    log = log_loss(r)
    if log is None or len(log) < SMOOTH:
        return None
    trend = np.convolve(log, np.ones(SMOOTH) / SMOOTH, mode="valid")
    lag = (len(log) - len(trend)) // 2
    return float(np.abs(log[lag:lag + len(trend)] - trend).mean())


by_seed = partial(Comparison, design=Design.PAIRED_BY_SEED, partial=True)  # arms of one seed share initialisation and data
FASTER = by_seed("softmax", f"sparse-softmax k={PAPER_K}", lambda r: next(iter(val_curve(r).values()), None))  # after epoch 1
# Fig. 1's "smoother", on log loss with the descent removed, by two measures declared before looking; decided where they agree
SMOOTHER = {name: by_seed("softmax", f"sparse-softmax k={PAPER_K}", measure) for name, measure in
            (("late_steps", late_steps), ("off_trend", off_trend))}


def convergence(spec: Comparison, soft: list[RunRecord], k20: list[RunRecord], direction: int,
                digits: int = 2) -> dict[str, Any] | None:
    """Fig. 1's "faster" or "smoother": each arm's mean over the seeds both have and the verdict on the paired Δ (k=20 −
    softmax); None when no seed has it in both arms."""
    a, b = (per_seed(runs, spec.metric, partial=True) for runs in (soft, k20))
    if not a.keys() & b.keys():
        return None
    c = compare_values(spec, a, b)
    return {"softmax": mean([a[s] for s in c.delta.seeds]), "sparse": mean([b[s] for s in c.delta.seeds]), "delta": c.delta,
            "verdict": c.verdict(direction=direction, digits=digits)}


def smoother(soft: list[RunRecord], k20: list[RunRecord]) -> dict[str, Any] | None:
    """Fig. 1's "smoother" by each measure of :data:`SMOOTHER` (lower is smoother), and ``agreed``: their verdicts' kind
    where every measure decides alike, else None (the page says "depends on the measure"); None without curves."""
    by = {name: found for name, spec in SMOOTHER.items() if (found := convergence(spec, soft, k20, -1, digits=4))}
    if not by:
        return None
    kinds = {found["verdict"].kind for found in by.values()}
    return {"measures": by, "agreed": kinds.pop() if len(kinds) == 1 and len(by) == len(SMOOTHER) else None}


def error_bar(interval: tuple[float, float] | None, centre: float) -> list[float]:
    """[below, above] ``centre`` of an interval, for an error bar (0 where there is none)."""
    if interval is None or any(math.isnan(x) for x in interval):
        return [0.0, 0.0]
    return [centre - interval[0], interval[1] - centre]


ARMS = {  # fig1's arms: (group, label, colour, line style, marker); distinct styles keep overlapping curves visible
    "softmax": ((SOFTMAX, None), "softmax", "C0", "-", "o"),
    "sparse": ((SPARSE, PAPER_K), f"sparse-softmax k={PAPER_K}", "C3", "--", "s"),
}
EPOCH_VS_SOFTMAX = by_seed("softmax", f"sparse-softmax k={PAPER_K}", "validation micro-F1 of one epoch (points)")


def epoch_deltas(a: list[RunRecord], b: list[RunRecord]) -> list[tuple[float, DeltaInterval]]:
    """Per epoch both arms evaluated, in order: Δ = B − A of validation micro-F1 (points), paired by seed (:data:`EPOCH_VS_SOFTMAX`)."""
    curves = [{r.seed: c for r in runs if (c := val_curve(r))} for runs in (a, b)]
    seeds = curves[0].keys() & curves[1].keys()
    epochs = sorted(set.intersection(*(set(c[s]) for c in curves for s in seeds))) if seeds else []
    return [(e, compare_values(EPOCH_VS_SOFTMAX, *({s: c[s][e] for s in seeds} for c in curves)).delta) for e in epochs]


def fig1_data(groups: Groups) -> dict[str, Any]:
    """Per arm of :data:`ARMS` in ``groups``: each run's (epoch, validation micro-F1) curve, the seed count, the training loss
    per step averaged over the runs (up to the shortest); "paired": :func:`epoch_deltas` of k=20 against softmax."""
    out: dict[str, Any] = {}
    for arm, (key, *_) in ARMS.items():
        if key in groups:
            losses = [r.train_loss for r in groups[key] if (r.train_loss or {}).get("loss")]
            n = min(len(c["loss"]) for c in losses)
            out[arm] = {"curves": [list(c.items()) for r in groups[key] if (c := val_curve(r))], "seeds": len(groups[key]),
                        "steps": np.asarray(losses[0]["step"][:n]), "loss": np.mean([c["loss"][:n] for c in losses], axis=0)}
    out["paired"] = epoch_deltas(groups[ARMS["softmax"][0]], groups[ARMS["sparse"][0]]) if len(out) == 2 else []
    return out


def plot_fig1(tasks: dict[str, dict[str, Any]], path: Path) -> None:
    """Per task (its name -> :func:`fig1_data`), top: validation micro-F1 per epoch (mean bold, each seed thin); middle:
    its paired Δ (k=20 − softmax) per epoch with its 95% paired t interval; bottom: each arm's own training loss."""
    fig, axes = pyplot().subplots(3, len(tasks), figsize=(5.0 * len(tasks) + 3.2, 11.0), squeeze=False)
    text = FIGURES.fig1
    for col, (name, arms) in enumerate(tasks.items()):
        top, middle, bottom = axes[0][col], axes[1][col], axes[2][col]
        if paired := arms.get("paired"):
            epochs, deltas = [e for e, _ in paired], [d for _, d in paired]
            yerr = np.array([error_bar((d.low, d.high), d.delta) for d in deltas]).T
            middle.errorbar(epochs, [d.delta for d in deltas], yerr=yerr, marker="s", color="C3", capsize=3, label=text["paired"])
            middle.axhline(0.0, color="black", linewidth=1.0, label=text["zero"])
        middle.set_title(text["middle"], fontsize=10)
        middle.set(xlabel="epoch", ylabel=text["delta"])
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
                         linestyle=style, marker=marker, linewidth=2.0, zorder=3, label=str(FIGURES.mean(label, len(curves))))
            bottom.plot(steps, loss, color=color, alpha=0.3, linewidth=0.7, zorder=2)
            window = max(1, min(SMOOTH, len(loss)))
            smooth = np.convolve(loss, np.ones(window) / window, mode="valid")
            lag = (len(steps) - len(smooth)) // 2  # centre each window on its middle step
            bottom.plot(steps[lag:lag + len(smooth)], smooth, color=color, linestyle=style, linewidth=1.8, zorder=3,
                        label=str(FIGURES.loss(label, arms[arm]["seeds"])))
        top.set(title=str(FIGURES.top(name)), xlabel="epoch", ylabel=text["ylabel"])
        top.grid(True, alpha=0.3)
        bottom.set_title(text["bottom"], fontsize=10)
        bottom.set(xlabel=text["step"], ylabel=text["loss"], yscale="log")
        bottom.grid(True, which="both", alpha=0.3)
    for ax in axes[:, -1]:  # one legend per row, right of the last column, where it hides no curve
        if ax.lines:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    save_figure(fig, path)
