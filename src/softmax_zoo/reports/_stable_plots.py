"""Figures of the stable page: one panel per logits dtype or regime, each arm with its own colour, line style and
marker, the markers staggered so that coinciding curves still show, each panel's legend below it."""

from __future__ import annotations

from pathlib import Path

from ..records import get
from ._pages import pyplot, save_figure
from ._render import words
from ._stats import mean

SATURATE_ARMS = (("standard", "float32"), ("stable", "float32"), ("standard", "float64"))  # (form, dtype), float64 the control
FLOOR = 1e-12  # the drift figure draws a drift of 0 at this value, on its log scale
WORDS = words("_stable_figures.j2", floor=FLOOR)
FORM_LABEL = WORDS.forms  # the arms' loss forms as the legends and the page name them

STYLE = {  # (colour, line style, marker) per (form, dtype)
    ("standard", "float32"): ("tab:blue", "-", "o"),
    ("stable", "float32"): ("tab:orange", "--", "s"),
    ("standard", "bfloat16"): ("tab:red", "-", "^"),
    ("cast", "bfloat16"): ("tab:purple", ":", "D"),
    ("stable", "bfloat16"): ("tab:green", "-.", "v"),
    ("standard", "float64"): ("black", (0, (5, 2, 1, 2)), "x"),
}


def arms(dtypes=("float32", "bfloat16")) -> list[tuple[str, str]]:
    """(form, dtype) in page order: standard, cast (bfloat16 only), stable."""
    return [(f, d) for d in dtypes for f in ("standard", "cast", "stable") if f != "cast" or d == "bfloat16"]


def group(records, **match) -> list[dict]:
    """The records whose config fields (study, form, dtype, start, loss) equal ``match``."""
    return [r for r in records if all(get(r, f"config.{k}") == v for k, v in match.items())]


def mean_curve(runs, key: str) -> tuple[list[int], list[float]]:
    steps = [p["step"] for p in runs[0]["history"] if key in p]
    by_step = [[p[key] for p in r["history"] if key in p] for r in runs]
    return steps, [mean([c[i] for c in by_step]) for i in range(len(steps))]


def draw(ax, runs, key: str, form: str, dtype: str, floor: float | None = None, slot: int = 0, slots: int = 1) -> None:
    """The mean curve over seeds of ``key`` (values below ``floor`` drawn at it), markers every ~10 points,
    staggered by ``slot`` of ``slots`` so that coinciding curves still show every arm's markers."""
    steps, values = mean_curve(runs, key)
    if floor is not None:
        values = [max(v, floor) for v in values]
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


def plots(records, out: Path) -> None:
    """stable_collapse.png, stable_saturate.png, stable_generalise.png, stable_drift.png (their words: templates/_stable_figures.j2)."""
    def lines(study, key, pairs, floor=None, **match):
        return [(group(records, study=study, dtype=d, form=f, **match), key, f, d, floor) for f, d in pairs]

    both = arms()
    specs = {
        "collapse": [(False, lines("collapse", "zero_target_grad_share", arms((d,)))) for d in ("float32", "bfloat16")]
        + [(True, lines("collapse", "loss", both))],
        "saturate": [(log, lines("saturate", key, SATURATE_ARMS)) for log, key in
                     ((False, "target_prob_one_share"), (True, "loss"), (True, "param_grad_norm"))],
        "generalise": [(False, lines("generalise", "test_accuracy", both, loss="ce")), (True, lines("generalise", "loss", both, loss="ce")),
                       (False, lines("generalise", "test_accuracy", both, loss="kd"))],
        "drift": [(True, lines("cancellation", "drift", arms((d,)), FLOOR, start="equal")) for d in ("float32", "bfloat16")],
    }
    for name, (title, texts) in WORDS.figures.items():
        panels(out / f"stable_{name}.png", title, texts, specs[name])
