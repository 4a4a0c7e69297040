"""The stable page's figures: one row of panels per figure, each arm's mean curve over seeds in its own style.

Words: templates/_stable_figures.j2 (:data:`WORDS`: the figures' titles and axes, and the arms' loss forms as the
page names them).
"""

from __future__ import annotations

import math
from pathlib import Path

from ._pages import pyplot, save_figure, template_words
from ._stats import mean

FLOOR = 1e-12  # the drift figure draws a drift of 0 at this value, on its log scale
WORDS = template_words("_stable_figures.j2", floor=FLOOR)  # the figures' words, and (forms) the arms' loss forms as the page names them
# (colour, line style, marker) per (form, dtype): each arm its own, so that coinciding curves still show
STYLE = {("standard", "float32"): ("tab:blue", "-", "o"), ("stable", "float32"): ("tab:orange", "--", "s"),
         ("standard", "bfloat16"): ("tab:red", "-", "^"), ("cast", "bfloat16"): ("tab:purple", ":", "D"),
         ("stable", "bfloat16"): ("tab:green", "-.", "v"), ("standard", "float64"): ("black", (0, (5, 2, 1, 2)), "x")}


def draw(ax, runs, key: str, form: str, dtype: str, floor: float = -math.inf, slot: int = 0, slots: int = 1) -> None:
    """The mean curve over seeds of ``key`` (values below ``floor`` drawn at it), markers every ~10 points,
    staggered by ``slot`` of ``slots`` so that coinciding curves still show every arm's markers."""
    steps = [p["step"] for p in runs[0].history if key in p]
    by_step = [[p[key] for p in r.history if key in p] for r in runs]
    values = [max(mean([c[i] for c in by_step]), floor) for i in range(len(steps))]
    colour, style, marker = STYLE[(form, dtype)]
    every = max(slots, len(steps) // 10)
    ax.plot(steps, values, color=colour, linestyle=style, marker=marker, markevery=(slot * every // slots, every), markersize=5,
            label=str(WORDS.arm(form, dtype, len(runs))))


def panels(path: Path, title: str, texts, specs) -> None:
    """One row of panels: per panel its (title, ylabel) of ``texts`` and its (log y, [(runs, key, form, dtype, floor), ...])."""
    fig, axes = pyplot().subplots(1, len(specs), figsize=(5.2 * len(specs), 5.4), squeeze=False)
    for ax, (name, ylabel), (log, lines) in zip(axes[0], texts, specs):
        for slot, (runs, key, form, dtype, floor) in enumerate(lines):
            if runs:
                draw(ax, runs, key, form, dtype, floor, slot, len(lines))
        if log:
            ax.set_yscale("log")
        ax.set(title=name, xlabel="step", ylabel=ylabel)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:  # below the panel, where it hides no curve
            ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    fig.suptitle(title)
    save_figure(fig, path)
