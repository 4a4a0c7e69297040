"""The kernel-bias page's figures: the final validation loss against m, and the validation curves, per setting."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..records import get
from ._kernel_bias_claims import SAMPLERS, ordered, sampler_name
from ._pages import line_plot, pyplot, save_figure
from ._stats import mean

# One look per sampler (marker, line style, colour map), so that two samplers with the same losses stay apart.
STYLES = {"uniform": ("o", ":", "Blues"), "unigram": ("s", "-.", "Purples"), "quadratic": ("^", "--", "Oranges"),
          "quadratic_centred": ("v", "-", "Greens"), "softmax": ("D", (0, (5, 1, 1, 1)), "Greys")}
SHIFT = 0.1  # octaves between neighbouring samplers' points along the log-m axis, centred on the true m


def label(name: str) -> str:
    return f"{name}{' (ours)' if name == 'quadratic_centred' else ''}"


def plot(full: list[float], grid: dict[str, dict[int, list[float]]], path: Path, title: str) -> None:
    """Each sampler's final full-softmax validation loss (mean over seeds) against m, the full softmax's as a line."""
    names = [s for s in SAMPLERS if s in grid]
    with line_plot(path, xlabel="negatives per row m (log scale; samplers shifted slightly apart)",
                   ylabel="final validation loss, full softmax (nats/token)",
                   title=f"Penn Treebank: bias of sampled softmax vs m\n{title}") as ax:
        for i, name in enumerate(names):
            ms = sorted(grid[name])
            shift = 2 ** (SHIFT * (i - (len(names) - 1) / 2))
            marker, style, _ = STYLES.get(name, ("o", "-", "Greys"))
            ax.plot([m * shift for m in ms], [mean(grid[name][m]) for m in ms], marker=marker, linestyle=style, markersize=7,
                    markerfacecolor="none" if name == "quadratic_centred" else None, label=f"sampled, {label(name)}",
                    linewidth=2.2 if name == "quadratic" else 1.2, zorder=4 if name == "quadratic" else 3)
        ax.axhline(mean(full), color="black", linestyle="--", label="full softmax")
        ax.set_xscale("log", base=2)


def curves_plot(records: list[dict[str, Any]], path: Path, title: str) -> None:
    """Validation perplexity against step, one panel per sampler: per m the geometric mean over seeds (thin: each seed),
    darker for larger m, and the full softmax's, from the runs of ``records`` with a validation curve."""
    def mean_curve(runs: list[list[tuple[int, float]]]) -> tuple[list[int], list[float]]:
        steps = sorted(set.intersection(*({s for s, _ in c[1:] or c} for c in runs)))  # step 0 would squash the scale
        at = [dict(c) for c in runs]
        return steps, [math.exp(mean([math.log(a[s]) for a in at])) for s in steps]  # geometric mean over seeds

    by: dict[tuple[str | None, int], list[list[tuple[int, float]]]] = {}  # (sampler, m) -> per seed its (step, perplexity)
    for r in records:
        if curve := [(h["step"], h["val/curve_perplexity"]) for h in r.get("history", []) if "val/curve_perplexity" in h]:
            by.setdefault((sampler_name(r), get(r, "config.loss.num_samples") or 0), []).append(curve)
    sizes = sorted({h["val/curve_tokens"] for r in records for h in r.get("history", []) if "val/curve_tokens" in h})
    names = ordered({n for n, _ in by} - {None})
    full = [c for (n, _), cs in by.items() if n is None for c in cs]
    on = f"first {sizes[0]:,} validation tokens" if len(sizes) == 1 else "a validation prefix"
    fig, axes = pyplot().subplots(1, len(names), figsize=(3.4 * len(names), 4.8), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        ms = sorted(m for n, m in by if n == name)
        cmap = pyplot().get_cmap(STYLES.get(name, ("", "", "Greys"))[2])
        for m in ms:
            colour = cmap(0.45 + 0.5 * ms.index(m) / max(1, len(ms) - 1))  # darker = larger m
            for curve in by[name, m]:
                xs, ys = zip(*(curve[1:] or curve))
                ax.plot(xs, ys, color=colour, linewidth=0.6, alpha=0.45)
            ax.plot(*mean_curve(by[name, m]), color=colour, linewidth=1.8, label=f"m={m} (n={len(by[name, m])})")
        if full:
            ax.plot(*mean_curve(full), color="black", linestyle="--", linewidth=1.8, label="full softmax")
        ax.set(title=label(name), xlabel="optimiser step", yscale="log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, title="n seeds: mean (thick), each seed (thin)", title_fontsize=7, loc="upper center",
                  bbox_to_anchor=(0.5, -0.2), ncol=2)
    axes[0][0].set_ylabel(f"validation perplexity\n({on}, log scale)")
    fig.suptitle(f"Penn Treebank: training curves by sampler\n{title}")
    save_figure(fig, path)
