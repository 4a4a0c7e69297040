"""The kernel-bias page's figures: the final validation loss against m, and the validation curves, per setting."""

from __future__ import annotations

from pathlib import Path

from ._kernel_bias_claims import SAMPLERS
from ._pages import line_plot, pyplot
from ._stats import mean


def plot(full: list[float], grid: dict[str, dict[int, list[float]]], path: Path, title: str) -> None:
    """Each sampler's final full-softmax validation loss (mean over seeds) against m, the full softmax's as a line."""
    with line_plot(path, xlabel="negatives per row m (log scale)", ylabel="final validation loss, full softmax (nats/token)",
                   title=f"Penn Treebank: bias of sampled softmax vs m\n{title}") as ax:
        for name in [s for s in SAMPLERS if s in grid]:
            ms = sorted(grid[name])
            ax.plot(ms, [mean(grid[name][m]) for m in ms], marker="o", label=f"sampled, {name}")
        ax.axhline(mean(full), color="black", linestyle="--", label="full softmax")
        ax.set_xscale("log", base=2)


def curves_plot(curves: list[tuple[str | None, int, list[tuple[int, float]]]], sizes: list[int], path: Path, title: str) -> None:
    """Validation perplexity on the curve's validation prefix against step, one line per run (``curves``: sampler, m, points;
    ``sizes``: the prefixes' lengths in tokens).

    The full softmax is drawn last and thickest, so the sampled runs that reach it do not hide it.
    """
    runs = [(SAMPLERS.index(name) if name in SAMPLERS else -1, m, name, curve) for name, m, curve in curves]
    styles = {"uniform": ":", "unigram": "-.", "quadratic": "--", "quadratic_centred": "-", "softmax": "-"}
    on = f"first {sizes[0]:,} validation tokens" if len(sizes) == 1 else "a validation prefix"
    colours = {"uniform": "Blues", "unigram": "Purples", "quadratic": "Oranges", "quadratic_centred": "Greens", "softmax": "Greys"}
    ms = {name: sorted({m for _, m, n, _ in runs if n == name}) for _, _, name, _ in runs}
    cmap = pyplot().get_cmap
    with line_plot(path, xlabel="optimiser step", ylabel=f"validation perplexity\n({on}, log scale)",
                   title=f"Penn Treebank: training curves\n{title}", legend_outside=True) as ax:
        for rank, m, name, curve in sorted(runs, key=lambda x: (x[2] is None, x[0], x[1])):
            xs, ys = zip(*curve[1:] or curve)  # step 0 (the initialisation, ~n classes) would squash the scale
            if name is None:
                ax.plot(xs, ys, color="black", linestyle="--", linewidth=2.2, label="full softmax", zorder=5)
                continue
            shade = 0.45 + 0.5 * ms[name].index(m) / max(1, len(ms[name]) - 1)  # darker = larger m
            ax.plot(xs, ys, linestyle=styles.get(name, "-"), color=cmap(colours.get(name, "Greys"))(shade), marker=".",
                    label=f"{name}{' (ours)' if name == 'quadratic_centred' else ''}, m={m}")
        ax.set_yscale("log")
