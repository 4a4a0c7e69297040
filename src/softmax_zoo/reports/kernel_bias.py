"""Blanc & Rendle 2018's bias study on Penn Treebank: results/kernel_bias.md, its figures and claims rows.

Two settings, each a set of records: ``kernel_bias`` (``make reproduce-kernel-bias``) and ``kernel_bias_paper``
(``make reproduce-kernel-bias-paper``, a paper-like setting of ours). Per setting the same LSTM is trained with the
sampled head for each sampler x m and once with the full softmax; compared is the final full-softmax validation loss
(nats/token). The rows are decided from one setting's runs and diagnostics (one function per row), the O(D log n) row
from the losses benchmark; the grid of records and its gaps are in _kernel_grid.py, the fixed-checkpoint diagnostics'
rows in _kernel_diagnostics.py. templates/kernel_bias.md.j2 holds the page's words and rules, templates/_lm_figures.j2 its figures'.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..records import runs_dir, seeds_of
from ..run_record import RunRecord, load_runs
from ._compare import Comparison, Design, Grid, compare
from ._forms import ClaimForm, ClaimKind
from ._kernel_diagnostics import DIAGNOSTICS as DIAGNOSTICS  # where studies/sampler_bias.py writes, named by this page
from ._kernel_diagnostics import adapts_row, deviation_row, diagnostics
from ._kernel_grid import (
    EXPERIMENT,
    FLAT_GAIN,
    PAPER_SETTING,
    SAMPLERS,
    VAL_LOSS,
    Cells,
    cells,
    diminishing_row,
    log_curve,
    mean_gaps,
    ordered,
    row,
    sampler_name,
    simple_samplers_row,
    values,
)
from ._pages import bench_group, commits, dirty_note, line_plot, page_command, publish, pyplot, save_figure, shown_path, template_words
from ._settings import Records, Setting, joined, seeds, settings_data
from ._stats import mean
from ._verdicts import MIN_SEEDS, VerdictKind, no_interval_verdict, verdict

# README.md's status table: experiment -> the claims-ledger row that heads it
HEADLINES = {EXPERIMENT: "kernel-bias-10-100x", PAPER_SETTING: "kernel-bias-10-100x-paper-like"}
KERNELS = ("quadratic", "quadratic_centred")
FEW_SAMPLES = (10, 50)  # the review's m ≈ 10–50
FEWER_SAMPLES = 10.0  # the paper: one to two orders of magnitude (10-100x) fewer samples than uniform
# Under results_dir: the page of `scripts/bench_losses.py --only "tree sampling time vs C"`; its data is the .json beside it.
BENCH_FILE = "bench_losses_cpu_tree-sampling-time-vs-c.md"
BENCH_SECTION = "sampled softmax: tree sampling time vs C"
# "Comparable to full softmax" (non-inferiority: being better supports it): validation perplexity at most 10% worse.
# Arms are paired by seed: set_seed(seed) precedes the model's construction, which draws the embedding and the LSTM
# before the head (models/lstm_lm.py), and every run reads the same training stream in order.
COMPARABLE = Comparison("full softmax", "quadratic", VAL_LOSS, Design.PAIRED_BY_SEED, margin=math.log(1.10),
                        margin_source="ours: the review gives no tolerance for \"comparable\"; perplexity at most 10% worse",
                        better="lower")
# The full-softmax learning rates compared for the paper-like setting's plain SGD (ours; 300 steps each); no record keeps
# them. The chosen rate, 20, is the grid's largest: a larger rate was not tried.
SGD_RATE_GRID = (1, 10, 20)
WORDS = template_words("_kernel_bias_settings.j2", MIN_SEEDS=MIN_SEEDS, rate_grid=SGD_RATE_GRID)
SETUP = (("model", "hidden_size"), ("task", "bptt"), ("train", "optim"), ("train", "lr"), ("loss", "bias"))  # the settings a section names
FIGURE = template_words("_lm_figures.j2")
# One look per sampler (marker, line style, colour map), so that two samplers with the same losses stay apart.
STYLES = {"uniform": ("o", ":", "Blues"), "unigram": ("s", "-.", "Purples"), "quadratic": ("^", "--", "Oranges"),
          "quadratic_centred": ("v", "-", "Greens"), "softmax": ("D", (0, (5, 1, 1, 1)), "Greys")}
SHIFT = 0.1  # octaves between neighbouring samplers' points along the log-m axis, centred on the true m


FORMS = {  # each ledger row's form (reports/_forms.py), by its kind (m10-50's members are the grid's m in 10–50)
    "fewer": ClaimForm(ClaimKind.SUPERIORITY, "reaches a given bias with 10-100x fewer samples",
                       measure="validation loss, uniform at >= 10x the samples − the kernel", better="lower"),
    "vs-unigram": ClaimForm(ClaimKind.SUPERIORITY, "dramatically improve sample efficiency compared to static distributions",
                            measure="validation loss, unigram − quadratic at each m", better="lower"),
    "log-n": ClaimForm(ClaimKind.DESCRIPTIVE, "runs in O(D log n) time", measure="tree sampling time against n"),
    "diminishing": ClaimForm(ClaimKind.TREND, "diminishing returns for larger m", measure="validation-loss gain per doubling of m"),
    "deviation": ClaimForm(ClaimKind.TREND, "the bias increases the more the sampling distribution deviates",
                           measure="Spearman ρ of bias against KL(p ‖ q) over samplers"),
    "adapts": ClaimForm(ClaimKind.DESCRIPTIVE, "adapts to the model as it is trained, thus resulting in low bias",
                        measure="KL(p ‖ q) of the kernel against uniform at checkpoints"),
    "simple-samplers": ClaimForm(ClaimKind.DESCRIPTIVE, "simple sampling distributions that require a large sample size",
                                 measure="gap to the full softmax's validation loss against m, uniform and unigram"),
}


_DESIGN = ClaimForm(ClaimKind.BY_CONSTRUCTION, "relies only on the model's last hidden layer; the kernel only for sampling")
DESIGN_FORMS = {  # the design rows, each by construction, by id
    "kernel-design-last-hidden-layer": _DESIGN, "kernel-design-sampling-only": _DESIGN,
    "kernel-design-partition-function": _DESIGN,
    "kernel-design-dot-product-models": ClaimForm(ClaimKind.BY_CONSTRUCTION, "applicable to any model with a dot-product final layer"),
    "kernel-design-no-full-softmax": ClaimForm(ClaimKind.BY_CONSTRUCTION, "without requiring full softmax computation"),
}
DESIGN_IDS = tuple(DESIGN_FORMS)


def form_of(claim: dict[str, Any]) -> ClaimForm:
    """The form of a kernel_bias ledger row: :data:`FORMS` by its kind, a design row's :data:`DESIGN_FORMS` by its id;
    m10-50 is non-inferiority at every m in 10–50."""
    if claim["kind"] == "design":
        return DESIGN_FORMS[claim["id"]]
    if claim["kind"] != "m10-50":
        return FORMS[claim["kind"]]
    return ClaimForm(ClaimKind.EVERY_MEMBER, "with minimal sampling (e.g., m ≈ 10–50) … comparable to full softmax",
                     measure="validation loss, quadratic − full softmax", better="lower", margin=COMPARABLE.margin,
                     margin_source=COMPARABLE.margin_source, members=claim.get("ms") or [FEW_SAMPLES[0]],
                     rule=f"every m of the grid with {FEW_SAMPLES[0]} <= m <= {FEW_SAMPLES[1]}")


def finding(by: Cells, kernel: str, experiment: str) -> dict[str, Any]:
    """The 10-100x claim for ``kernel``: per uniform point (m_u, gap_u) the ratio m_u / m_k, m_k the smallest ``kernel``
    m reaching gap_u; the uniform m it never reaches; the m where another sampler beat the quadratic kernel; the
    seed-aware verdict (:func:`fewer_samples`), or None: the largest ratio decides nothing."""
    gaps = mean_gaps(by)
    reached = {m_u: min((m for m, g in gaps[kernel].items() if g <= gap_u), default=None)
               for m_u, gap_u in sorted(gaps.get("uniform", {}).items())}
    ratios = {m_u: m_u / m_k for m_u, m_k in reached.items() if m_k is not None}
    m_best = max(ratios, key=ratios.get, default=None)
    winners = {m: min((s for s in gaps if s not in ("softmax", "quadratic_centred") and m in gaps[s]), key=lambda s: gaps[s][m])
               for m in gaps.get("quadratic", {})}
    rivals = {rival: [m for m in sorted(winners) if winners[m] == rival] for rival in gaps if rival not in ("softmax", *KERNELS)}
    return row("fewer", "10-100x" if kernel == "quadratic" else "centred", experiment, kernel=kernel, missing=not reached,
               ratios=ratios, unreached=[m for m, m_k in reached.items() if m_k is None], best=ratios.get(m_best, 0.0), m_best=m_best,
               ratio=FEWER_SAMPLES, seeds=seeds_of(r for rs in by[kernel].values() for r in rs), points=len(winners),
               decided=fewer_samples(by, kernel, FEWER_SAMPLES), rivals={r: ms for r, ms in rivals.items() if ms and kernel == "quadratic"},
               dirty=dirty_note([r for name in (None, kernel, "uniform") for rs in by.get(name, {}).values() for r in rs]))


def fewer_samples(by: Cells, kernel: str, ratio: float) -> dict[str, Any] | None:
    """"``kernel`` reaches a given bias with ``ratio``x fewer samples than uniform", over seeds: each ``kernel`` m with
    :data:`MIN_SEEDS` seeds paired with the smallest uniform m ≥ ratio · m with as many; per pair Δ = uniform − kernel
    validation loss, paired by seed (> 0: the kernel ends below uniform). The claim is about some bias level: supported when
    one pair is and none contradicts, contradicted when every pair is, else inconclusive. None without such a pair."""
    kern, uni = by.get(kernel, {}), {m: rs for m, rs in by.get("uniform", {}).items() if len(rs) >= MIN_SEEDS}
    spec = Comparison(kernel, "uniform", VAL_LOSS, Design.PAIRED_BY_SEED)
    pairs = [(m_k, m_u, verdict(compare(spec, kern[m_k], uni[m_u]).delta, +1, digits=3))
             for m_k in sorted(m for m, rs in kern.items() if len(rs) >= MIN_SEEDS)
             for m_u in [min((m for m in uni if m >= ratio * m_k), default=None)] if m_u is not None]
    if not pairs:
        return None
    kinds = [v.kind for *_, v in pairs]
    kind = (VerdictKind.SUPPORTED if VerdictKind.SUPPORTED in kinds and VerdictKind.CONTRADICTS not in kinds else
            VerdictKind.CONTRADICTS if set(kinds) == {VerdictKind.CONTRADICTS} else VerdictKind.INCONCLUSIVE)
    return {"kind": kind, "pairs": pairs, "seeds": seeds_of(r for name in (kernel, "uniform") for rs in by[name].values() for r in rs)}


def review_claims(records: list[RunRecord], experiment: str) -> list[dict[str, Any]]:
    """One setting's rows of kernel against unigram and of m ≈ 10–50 (each m's Δ paired by seed)."""
    by, seeds = cells(records), seeds_of(records)
    if None not in by:
        return []
    gaps, kernel, unigram, rows = mean_gaps(by), by.get("quadratic", {}), by.get("unigram", {}), []
    if kernel and not unigram:
        rows.append(row("vs-unigram", "vs-unigram", experiment, seeds=seeds, missing=True))
    elif shared := sorted(set(kernel) & set(unigram)):
        spec = Comparison("quadratic", "unigram", VAL_LOSS, Design.PAIRED_BY_SEED)
        deltas = {m: compare(spec, kernel[m], unigram[m]).delta for m in shared}
        rows.append(row("vs-unigram", "vs-unigram", experiment, seeds=seeds, deltas=deltas,
                        gaps={m: (gaps["quadratic"][m], gaps["unigram"][m]) for m in shared},
                        wins=sum(gaps["unigram"][m] < gaps["quadratic"][m] for m in shared),
                        verdicts={m: verdict(d, +1, digits=3) for m, d in deltas.items()},
                        dirty=dirty_note(by[None][0] + [r for m in shared for r in kernel[m] + unigram[m]])))
    if kernel:
        ms = [m for m in sorted(kernel) if FEW_SAMPLES[0] <= m <= FEW_SAMPLES[1]]
        rows.append(row("m10-50", "m10-50", experiment, seeds=seeds, ms=ms,
                        gaps={m: (gaps["quadratic"][m], math.exp(gaps["quadratic"][m])) for m in ms}, **(comparable(by, ms) if ms else {})))
    return rows


def comparable(by: Cells, ms: list[int]) -> dict[str, Any]:
    """"Comparable to full softmax" at every m of ``ms``: per m the non-inferiority test (:data:`COMPARABLE`) of Δ =
    quadratic − full softmax validation loss, paired by seed, and one verdict that every m is non-inferior
    (:meth:`._compare.Grid.decide`)."""
    grid = Grid({m: compare(COMPARABLE, by[None][0], by["quadratic"][m]) for m in ms}, name="m")
    return {"verdict": grid.decide()[0], "tests": {m: (c.verdict().data, c.delta.n) for m, c in grid.compared.items()},
            "dirty": dirty_note(by[None][0] + [r for m in ms for r in by["quadratic"][m]])}


def log_time_claim(results_dir: str | Path) -> dict[str, Any]:
    """The O(D log n) row, from the benchmark's tree sampling time at the smallest and largest class count (one timing)."""
    group, _ = bench_group((Path(results_dir) / BENCH_FILE).with_suffix(".json"), BENCH_SECTION)
    sizes = [(int(m.group(1).replace(",", "")), r["ms"]) for r in group.get("rows", ()) if (m := re.search(r"C=([\d,]+)", r["variant"]))]
    return {"kind": "log-n", "id": "kernel-sampling-log-n", "source": EXPERIMENT, "bench": BENCH_FILE,
            "sizes": [sizes[0], sizes[-1]] if len(sizes) >= 2 else None,
            "log_grow": math.log(sizes[-1][0]) / math.log(sizes[0][0]) if len(sizes) >= 2 else None}


def ours(records: Records) -> dict[str, object]:
    """The values a setting's column shows: model, the grid of m per sampler, α, schedule, optimiser."""
    first, grid = records[0], {name: sorted(per_m) for name, per_m in cells(records).items() if name is not None}
    return {"hidden": first.setting("model", "hidden_size"), "bptt": first.setting("task", "bptt"),
            "batch": first.setting("train", "batch_size"), "grid": grid,
            "alpha": joined([r for r in records if sampler_name(r) in KERNELS], lambda r: r.setting("loss", "sampler", "alpha")),
            "clip": first.setting("train", "max_grad_norm"), "steps": first.timing["global_steps"], "seeds": seeds(records),
            "optim": first.setting("train", "optim"), "lr": joined(records, lambda r: r.setting("train", "lr")),
            "paper": first.experiment == PAPER_SETTING}


def setting(results_dir: str | Path, experiment: str, records: list[RunRecord]) -> dict[str, Any]:
    """One setting's section: its setup, the table, the findings per kernel, the validation curves, the diagnostics."""
    folder = runs_dir(results_dir) / experiment
    if not records:
        raise FileNotFoundError(f"no records in {folder}; run `make reproduce-kernel-bias` first")
    by = cells(records)
    full, grid = values(by)
    data = {"experiment": experiment, "title": WORDS.titles[experiment], "paper_setting": experiment == PAPER_SETTING,
            "folder": shown_path(folder), "n_records": len(records), "complete": bool(full and grid)}
    if not data["complete"]:
        return data
    ms = sorted({m for per_m in grid.values() for m in per_m})
    return data | {"commits": commits(records), "seeds": seeds_of(records), "ms": ms, "full": full, "grid": grid,
                   "setup": {name: records[0].setting(group, name) for group, name in SETUP},
                   "steps": records[0].timing["global_steps"], "base": mean(full),
                   "rows": [(name, [(mean(grid[name][m]), len(grid[name][m])) if m in grid[name] else None for m in ms])
                            for name in ordered(grid)],
                   "oracle_gap": max((abs(mean(v) - mean(full)) for v in grid.get("softmax", {}).values()), default=None),
                   "findings": [finding(by, k, experiment) for k in KERNELS if k in by], "records": records,
                   "curves": any("val/curve_perplexity" in h for r in records for h in r.history),
                   "diagnostics": (found := diagnostics(results_dir, experiment)),
                   "trained": sorted({r["meta"].get("trained_by") for r in found} - {None})}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the settings, per setting its section, the review's rows, the ledger rows."""
    found = {e: load_runs(runs_dir(results_dir), e) for e in (EXPERIMENT, PAPER_SETTING)}
    found = {e: records for e, records in found.items() if records or e == EXPERIMENT}  # the paper-like setting's are optional
    sections = [setting(results_dir, e, records) for e, records in found.items()]
    findings = [f for s in sections if s["complete"] for f in s["findings"]]
    reviewed = [row for e, records in found.items() for row in review_claims(records, e)]
    more = [row for e, records in found.items()
            for row in diminishing_row(records, e) + simple_samplers_row(records, e) + deviation_row(results_dir, e)
            + adapts_row(results_dir, e)]
    more += [{"kind": "design", "id": id_, "source": EXPERIMENT} for id_ in DESIGN_IDS]
    # the page's choices beside the review's (it states none): ours per setting, None where a row is not that setting's
    chosen = [Setting(name, None, lambda rs, name=name: str(WORDS.ours(name, ours(rs))) or None, why)
              for name, why in WORDS.why.items()]
    settings = settings_data(chosen, found, "the review")  # every setting kept has records: setting() raises otherwise
    return {"command": page_command(EXPERIMENT, results_dir), "sections": sections, "findings": findings, "more": more,
            "settings": settings, "flat_gain": FLAT_GAIN, "undecided": no_interval_verdict, "design": Design.PAIRED_BY_SEED.value,
            "claims": [c | {"form": form_of(c)} for c in findings + reviewed + more + [log_time_claim(results_dir)]]}


def plot(full: list[float], grid: dict[str, dict[int, list[float]]], path: Path, title: str) -> None:
    """Each sampler's final full-softmax validation loss (mean over seeds) against m, the full softmax's as a line."""
    names = [s for s in SAMPLERS if s in grid]
    with line_plot(path, **FIGURE.loss_vs_m, title=str(FIGURE.loss_vs_m_title(title))) as ax:
        for i, name in enumerate(names):
            ms = sorted(grid[name])
            shift = 2 ** (SHIFT * (i - (len(names) - 1) / 2))
            marker, style, _ = STYLES.get(name, ("o", "-", "Greys"))
            ax.plot([m * shift for m in ms], [mean(grid[name][m]) for m in ms], marker=marker, linestyle=style, markersize=7,
                    markerfacecolor="none" if name == "quadratic_centred" else None, label=str(FIGURE.sampled(name)),
                    linewidth=2.2 if name == "quadratic" else 1.2, zorder=4 if name == "quadratic" else 3)
        ax.axhline(mean(full), color="black", linestyle="--", label="full softmax")
        ax.set_xscale("log", base=2)


def curves_plot(records: list[RunRecord], path: Path, title: str) -> None:
    """Validation perplexity against step, one panel per sampler: per m the geometric mean over seeds (thin: each seed),
    darker for larger m, and the full softmax's, from the runs of ``records`` with a validation curve."""
    def mean_curve(curves: list[dict[int, float]]) -> tuple[list[int], list[float]]:  # at the steps every seed logged
        steps = sorted(set.intersection(*(set(c) for c in curves)))
        return steps, [math.exp(mean([c[s] for c in curves])) for s in steps]  # geometric mean over seeds

    by = {(name, m): curves for name, per_m in cells(records).items() for m, rs in per_m.items()  # (sampler, m) -> per seed
          if (curves := [c for r in rs if (c := log_curve(r))])}
    sizes = sorted({h["val/curve_tokens"] for r in records for h in r.history if "val/curve_tokens" in h})
    names = ordered({n for n, _ in by} - {None})
    full = [c for (n, _), cs in by.items() if n is None for c in cs]
    fig, axes = pyplot().subplots(1, len(names), figsize=(3.4 * len(names), 4.8), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        ms = sorted(m for n, m in by if n == name)
        cmap = pyplot().get_cmap(STYLES.get(name, ("", "", "Greys"))[2])
        for m in ms:
            colour = cmap(0.45 + 0.5 * ms.index(m) / max(1, len(ms) - 1))  # darker = larger m
            for curve in by[name, m]:
                ax.plot(list(curve), [math.exp(v) for v in curve.values()], color=colour, linewidth=0.6, alpha=0.45)
            ax.plot(*mean_curve(by[name, m]), color=colour, linewidth=1.8, label=f"m={m} (n={len(by[name, m])})")
        if full:
            ax.plot(*mean_curve(full), color="black", linestyle="--", linewidth=1.8, label="full softmax")
        ax.set(title=str(FIGURE.sampler(name)), xlabel=FIGURE.step, yscale="log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, title=FIGURE.seeds_legend, title_fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    axes[0][0].set_ylabel(str(FIGURE.curves_ylabel(sizes)))
    fig.suptitle(str(FIGURE.curves_title(title)))
    save_figure(fig, path)


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write kernel_bias.md, its figures and the kernel-bias rows of md into ``out`` (default ``results_dir``)."""
    out, data = Path(out or results_dir), summarise(results_dir)
    for s in (s for s in data["sections"] if s["complete"]):
        plot(s["full"], s["grid"], out / f"{s['experiment']}.png", s["title"])
        if s["curves"]:
            curves_plot(s["records"], out / f"{s['experiment']}_curves.png", s["title"])
    publish(out, EXPERIMENT, data)
