"""Figures of the stable page: one panel per logits dtype or regime, each arm with its own colour, line style and
marker, the markers staggered so that coinciding curves still show, each panel's legend below it."""

from __future__ import annotations

from pathlib import Path

from ..records import get
from ._pages import pyplot, save_figure
from ._stats import mean

FORM_LABEL = {"standard": "standard", "cast": "standard on float32-cast logits", "stable": "stable"}  # legends and the page's

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
            label=f"{FORM_LABEL[form]}, {dtype} (n={len(runs)})")


def panels(path: Path, specs, *, title: str) -> None:
    """One row of panels; ``specs`` are (panel title, ylabel, log y, [(runs, key, form, dtype, floor), ...])."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(specs), figsize=(5.2 * len(specs), 5.4), squeeze=False)
    for ax, (name, ylabel, log, lines) in zip(axes[0], specs):
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
    """stable_collapse.png, stable_saturate.png, stable_generalise.png, stable_drift.png."""
    def lines(study, key, dtypes, floor=None, **match):
        return [(group(records, study=study, dtype=d, form=f, **match), key, f, d, floor) for f, d in arms(dtypes)]

    panels(out / "stable_collapse.png", [
        (f"{d} logits", "share of target gradients exactly 0", False, lines("collapse", "zero_target_grad_share", (d,)))
        for d in ("float32", "bfloat16")] + [
        ("loss, all arms", "train loss (float64)", True, lines("collapse", "loss", ("float32", "bfloat16")))],
        title="Softmax collapse, memorise regime (Adam, no weight decay)")
    sat = [(group(records, study="saturate", dtype=d, form=f), f, d) for f, d in
           (("standard", "float32"), ("stable", "float32"), ("standard", "float64"))]
    panels(out / "stable_saturate.png", [
        ("float32 q_t exactly 1", "share of training examples", False, [(r, "target_prob_one_share", f, d, None) for r, f, d in sat]),
        ("loss", "train loss (float64)", True, [(r, "loss", f, d, None) for r, f, d in sat]),
        ("gradient norm", "‖∂L/∂θ‖", True, [(r, "param_grad_norm", f, d, None) for r, f, d in sat])],
        title="Saturate regime (Adam, β₂ = 0.9, no weight decay): standard vs stable float32, float64 control")
    panels(out / "stable_generalise.png", [
        ("CE: test accuracy", "test accuracy", False, lines("generalise", "test_accuracy", ("float32", "bfloat16"), loss="ce")),
        ("CE: loss", "train loss (float64)", True, lines("generalise", "loss", ("float32", "bfloat16"), loss="ce")),
        ("fresh-student KD: test accuracy", "test accuracy", False,
         lines("generalise", "test_accuracy", ("float32", "bfloat16"), loss="kd"))],
        title="Generalise regime (AdamW, weight decay 1)")
    floor = 1e-12
    panels(out / "stable_drift.png", [
        (f"{d} logits", f"‖θ − θ₀‖ (0 drawn at {floor:g})", True, lines("cancellation", "drift", (d,), floor, start="equal"))
        for d in ("float32", "bfloat16")],
        title="KD cancellation: self-distillation at identical logits")
