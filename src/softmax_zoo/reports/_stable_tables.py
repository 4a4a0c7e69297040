"""Tables and seed-by-seed comparisons of the stable page (:mod:`softmax_zoo.reports.stable`).

A run is a dict as :func:`softmax_zoo.reports.stable.as_run` gives it: its arms (study, form,
dtype, and start or loss), seed, per-step ``curve`` and ``final`` numbers. Means carry 95%
Student-t intervals over seeds; a comparison of two arms is given seed by seed as the ratio of
their final values (losses and norms span decades, so ratios and their log10 are what is compared),
with the verdict of :mod:`._verdicts` on the log10 ratio (Welch's interval over the two arms' seeds).

:func:`reading` turns the three bfloat16 verdicts (standard / stable, standard / cast, cast / stable) into
the sentence that says which of the float32 compute and the rewritten formula the difference comes from.
"""

from __future__ import annotations

import math
from typing import Any

from ..markdown import markdown_table
from ._compare import unpaired
from ._stats import format_mean_ci, mean, mean_ci, seeds_label
from ._verdicts import Verdict, verdict

FORM_LABEL = {"standard": "standard", "cast": "standard on float32-cast logits", "stable": "stable"}
DASH = "—"


def arms(dtypes=("float32", "bfloat16")) -> list[tuple[str, str]]:
    """(form, dtype) in page order: standard, cast (bfloat16 only), stable."""
    return [(f, d) for d in dtypes for f in ("standard", "cast", "stable") if f != "cast" or d == "bfloat16"]


def group(records, **match) -> list[dict[str, Any]]:
    return [r for r in records if all(r.get(k) == v for k, v in match.items())]


def finals(runs, key: str) -> list[float]:
    return [float(r["final"][key]) for r in runs]


def sci(values: list[float]) -> str:
    """Mean ± half-width in scientific notation (n=k)."""
    m, half, n = mean_ci(values)
    return f"{m:.2e}" + ("" if n == 1 else f" ± {half:.1e}") + f" (n={n})"


def pct(runs, key: str) -> str:
    """Mean ± half-width of a share, in %; a dash when the runs lack the key."""
    if not runs or any(key not in r["final"] for r in runs):
        return DASH
    return format_mean_ci(finals(runs, key), 100, 1)


def sci_of(runs, key: str) -> str:
    if not runs or any(key not in r["final"] for r in runs):
        return DASH
    return sci(finals(runs, key))


def by_seed(runs, key: str) -> dict[int, float]:
    return {r["seed"]: float(r["final"][key]) for r in runs}


def ratio_text(a_runs, b_runs, key: str) -> tuple[str, Verdict | None]:
    """Final ``key`` of arm A over arm B per seed ("11×, 43×, 20× (seeds 0, 1, 2)"), and the verdict on A > B.

    The verdict is on log10(A/B) when every value is positive, on A − B when B is exactly 0 somewhere
    (a ratio to 0 has no log); the returned text ends with it.
    """
    a, b = by_seed(a_runs, key), by_seed(b_runs, key)
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return DASH, None
    parts = []
    for s in seeds:
        if b[s] == 0:
            parts.append(f"{a[s]:.2e} vs exactly 0" if a[s] else "both exactly 0")
        else:
            r = a[s] / b[s]
            parts.append(f"{r:.2f}×" if 0.01 <= r < 1000 else f"{r:.2e}×")
    text = f"{', '.join(parts)} ({seeds_label(seeds)})"
    if all(a[s] > 0 and b[s] > 0 for s in seeds):
        log_b, log_a = ({s: math.log10(v[s]) for s in seeds} for v in (b, a))
        v = verdict(unpaired(log_b, log_a), +1)  # Δ = mean log10 A − mean log10 B
        return f"{text}; on log10(A/B): {v}", v
    if any(a[s] != b[s] for s in seeds):
        v = verdict(unpaired({s: b[s] for s in seeds}, {s: a[s] for s in seeds}), +1, digits=4)
        return f"{text}; on A − B: {v}", v
    return text, None


def pp_per_seed(a_runs, b_runs, key: str) -> str:
    """A − B per seed, in percentage points."""
    a, b = by_seed(a_runs, key), by_seed(b_runs, key)
    seeds = sorted(set(a) & set(b))
    return f"{', '.join(f'{100 * (a[s] - b[s]):+.1f}' for s in seeds)} pp ({seeds_label(seeds)})" if seeds else DASH


def ce_table(records, study: str, dtypes=("float32", "bfloat16"), **match) -> str:
    """Final numbers of the CE runs of ``study``, one row per (dtype, form)."""
    rows = []
    for form, dtype in arms(dtypes):
        runs = group(records, study=study, dtype=dtype, form=form, **match)
        if runs:
            rows.append([dtype, FORM_LABEL[form], pct(runs, "zero_target_grad_share"), pct(runs, "target_prob_one_share"),
                         sci(finals(runs, "zero_sum_violation")), sci(finals(runs, "loss")), sci_of(runs, "param_grad_norm"),
                         pct(runs, "train_accuracy"), pct(runs, "test_accuracy")])
    header = ["logits", "CE", "target grad exactly 0 (%)", "float32 q_t exactly 1 (%)", "mean abs(Σ_j ∂L_i/∂z_ij)",
              "train loss (float64)", "‖∂L/∂θ‖", "train accuracy (%)", "test accuracy (%)"]
    return markdown_table(header, rows)


def kd_table(records, study: str, starts=("equal", "fresh"), **match) -> str:
    """Final numbers of the distillation runs of ``study``, one row per (start, dtype, form)."""
    rows = []
    for start in starts:
        for form, dtype in arms():
            runs = group(records, study=study, dtype=dtype, form=form, **({"start": start} if study == "cancellation" else {}), **match)
            if runs:
                step0 = [float(r["curve"][0]["logit_grad_norm"]) for r in runs]
                rows.append([start, dtype, FORM_LABEL[form], sci(step0), sci(finals(runs, "logit_grad_norm")), sci(finals(runs, "drift")),
                             sci(finals(runs, "kl")), pct(runs, "test_accuracy"), pct(runs, "agreement")])
    header = ["start", "logits", "KL form", "‖∂L_i/∂z_i‖ at step 0", "‖∂L_i/∂z_i‖ at the end", "drift ‖θ − θ₀‖", "KL(p‖q) at the end",
              "test accuracy (%)", "agreement with teacher (%)"]
    return markdown_table(header, rows)


def comparisons(records, study: str, key: str, what: str, **match) -> tuple[list[str], dict[str, Verdict | None]]:
    """Seed-by-seed ratios of final ``key`` between the forms (float32: standard/stable; bfloat16: standard/stable,
    standard/cast, cast/stable), one line each, with the verdicts keyed "<dtype> <A>/<B>"."""
    lines, verdicts = [], {}
    pairs = {"float32": [("standard", "stable")], "bfloat16": [("standard", "stable"), ("standard", "cast"), ("cast", "stable")]}
    for dtype, forms in pairs.items():
        for a, b in forms:
            ra, rb = (group(records, study=study, dtype=dtype, form=f, **match) for f in (a, b))
            if ra and rb:
                text, v = ratio_text(ra, rb, key)
                lines.append(f"{dtype}, {what}, A = {FORM_LABEL[a]} / B = {FORM_LABEL[b]}: {text}")
                verdicts[f"{dtype} {a}/{b}"] = v
    return lines, verdicts


def accuracy_lines(records, study: str, **match) -> list[str]:
    """Test accuracy of each arm with its per-seed values, and stable − standard per seed."""
    lines = []
    for form, dtype in arms():
        runs = group(records, study=study, dtype=dtype, form=form, **match)
        if runs:
            lines.append(f"{dtype} {FORM_LABEL[form]}: test accuracy (%) {pct(runs, 'test_accuracy')}")
    for dtype in ("float32", "bfloat16"):
        std, stb = (group(records, study=study, dtype=dtype, form=f, **match) for f in ("standard", "stable"))
        if std and stb:
            lines.append(f"{dtype}: test accuracy stable − standard {pp_per_seed(stb, std, 'test_accuracy')}")
    return lines


def crossing_step(run: dict[str, Any], key: str, level: float) -> int | None:
    """The first logged step where ``key`` reaches ``level``, None if never."""
    return next((p["step"] for p in run["curve"] if p.get(key, 0.0) >= level), None)


def at_step(run: dict[str, Any], step: int) -> dict[str, float]:
    """The logged point at ``step`` with the latest test accuracy at or before it."""
    point = next(p for p in run["curve"] if p["step"] == step)
    tests = [p for p in run["curve"] if p["step"] <= step and "test_accuracy" in p]
    return {**point, "test_accuracy": tests[-1]["test_accuracy"]} if tests else point


def saturate_table(records, level: float = 0.5) -> tuple[str, dict[int, int | None]]:
    """Each saturate arm at the step where standard float32 CE first has ``level`` of q_t exactly 1 (per seed), and at the end."""
    std = {r["seed"]: r for r in group(records, study="saturate", dtype="float32", form="standard")}
    onset = {s: crossing_step(r, "target_prob_one_share", level) for s, r in sorted(std.items())}
    keys = ["target_prob_one_share", "zero_target_grad_share", "loss", "param_grad_norm", "train_accuracy", "test_accuracy"]
    rows = []
    for form, dtype in (("standard", "float32"), ("stable", "float32"), ("standard", "float64")):
        runs = [r for r in group(records, study="saturate", dtype=dtype, form=form) if onset.get(r["seed"]) is not None]
        for when in ("onset", "end"):
            points = [at_step(r, onset[r["seed"]]) if when == "onset" else r["final"] for r in runs]
            if points:
                cells = [f"{100 * mean([p[k] for p in points]):.1f}" if "share" in k or "accuracy" in k
                         else f"{mean([p[k] for p in points]):.2e}"
                         for k in keys]
                rows.append([dtype, FORM_LABEL[form], when, *cells])
    header = ["logits", "CE", "step", "float32 q_t exactly 1 (%)", "target grad exactly 0 (%)", "train loss (float64)", "‖∂L/∂θ‖",
              "train accuracy (%)", "test accuracy (%)"]
    return markdown_table(header, rows), onset


def reading(verdicts: dict[str, Verdict | None], what: str) -> str | None:
    """What the bfloat16 comparisons of :func:`comparisons` say about the source of a difference in ``what``."""
    std_cast, cast_stable = verdicts.get("bfloat16 standard/cast"), verdicts.get("bfloat16 cast/stable")
    std_stable = verdicts.get("bfloat16 standard/stable")
    if std_cast is None or cast_stable is None or std_stable is None:
        return None
    kind = lambda v: v.kind.value  # noqa: E731
    if all(kind(v) == "inconclusive" for v in (std_cast, cast_stable, std_stable)):
        return f"bfloat16, {what}: the three arms do not differ measurably, so there is no difference to attribute"
    if kind(cast_stable) == "supported":
        return (f"bfloat16, {what}: the rewritten formula matters beyond the float32 compute (standard on float32-cast logits "
                "stays above stable)")
    if kind(std_cast) == "supported" and kind(cast_stable) == "inconclusive":
        return (f"bfloat16, {what}: the difference comes from computing in float32, not from the rewritten formula: the standard "
                "formula on float32-cast logits is not measurably different from the stable one")
    return f"bfloat16, {what}: the three arms do not separate the float32 compute from the rewrite (verdicts above)"
