"""The sparse-softmax regime study: Δ ROUGE (sparse − softmax) against the start's share of targets in Ω_k.

``python -m softmax_zoo.reports sparse_regime`` (the last step of ``make reproduce-sparse-regime``)
reads the records of experiment ``sparse_regime`` (:mod:`softmax_zoo.studies.sparse_regime`) and
their test predictions, and writes ``results/sparse_regime.md`` and ``sparse_regime.png``. For each
start (the start run's epoch e, ``config.regime.start_epoch``), scale and seed, the softmax arm is
paired with each sparse arm (its k): Δ ROUGE-1/2 at beam 1 with a paired bootstrap 95% interval
over the test pairs, against the softmax arm's share of test targets inside its top-k
(``test/target_in_topk``, teacher-forced; :mod:`softmax_zoo.diagnostics.topk`). The claims row
takes the seeds of a (start, k) together (:func:`seed_delta`) and its verdict from
:mod:`softmax_zoo.reports._verdicts`. Without records the page says how to make them.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ..records import choice, get, load_records, read_predictions, runs_dir
from ._pages import markdown_table, page_command, provenance, pyplot, save_figure, shown_path, write_page
from ._seq2seq import BOOTSTRAP_SAMPLES, SOFTMAX, SPARSE, per_seed_scores, stutters
from ._seq2seq_settings import PAPER as PAPER_SETTINGS, seq2seq_settings
from ._settings import settings_part, shown
from ._stats import SEED_INTERVAL_NOTE, LinearTrend, SeedAwareDelta, mean, paired_bootstrap
from .table5 import UNILM_BEAM5
from ._verdicts import VERDICT_RULES, claimed_direction, seed_summary, trend_verdict, verdict

EXPERIMENT = "sparse_regime"
METRICS = ("rouge1", "rouge2")
BEAM = 1
# Sun et al. 2021, Table 5 (Gigaword-10k, UniLM, beam 1): sparse − softmax.
PAPER_DELTAS = {"rouge1": 0.67, "rouge2": 0.79}
UNILM_ROUGE1 = UNILM_BEAM5["rouge1"]  # the strength of the paper's model
PAPER_REGIME = (
    f"**Where the paper's regime lies.** The paper fine-tunes UniLM on Gigaword-10k for {PAPER_SETTINGS['gigaword']['epochs']} "
    f"epochs; UniLM's own Gigaword-10k result is ROUGE-1 {UNILM_ROUGE1} (beam 5, unilm-v1 README), and a model of that strength is "
    "expected to hold nearly all targets inside its top-20: the right end of this figure's x-axis (a share "
    "near 100%), not measured here on such a model. The paper's Δ at beam 1 is +0.67 ROUGE-1 / +0.79 ROUGE-2."
)

# Why the study's settings differ from Table 5's where they do (the rest: _seq2seq_settings).
STUDY_REASONS = {
    "epochs": "the start run's epochs give starts of growing strength; each arm then trains briefly from one, within the "
              "study's budget",
    "beams": "beam 1 only, so that every arm's decodes fit the study's budget",
    "sparse-softmax k": "the paper's best classification k (Fig. 2) and one well above it",
    "seeds": "the study's budget (the grid line above); a verdict needs more seeds",
}


def fmt_delta(d: dict[str, float]) -> str:
    """"+0.10 [-0.20, +0.40]" of one bootstrap (:func:`softmax_zoo.reports._stats.paired_bootstrap`'s dict)."""
    return f"{d['delta']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def no_records(runs: Path, results_dir: str | Path) -> str:
    """The page while ``runs`` holds no records of the study."""
    return (
        "# Sparse-softmax regime study (Gigaword-10k)\n\n"
        f"No records yet in {shown_path(runs / EXPERIMENT)}/. `make reproduce-sparse-regime` runs the study "
        f"(python -m softmax_zoo.studies.sparse_regime) and rebuilds this page with `{page_command(EXPERIMENT, results_dir)}`.\n"
    )


def start_epoch(record: dict[str, Any]) -> int | None:
    """The start epoch of a fine-tuning record (None for the start run itself)."""
    return get(record, "config.regime.start_epoch")  # the start run's config has no start_epoch


def arms(records: list[dict[str, Any]]) -> dict[tuple[str, int, int], dict[str, dict[str, Any]]]:
    """(scale, start epoch, seed) -> {"softmax": record, "k=<k>": record, ...} of the fine-tuning runs."""
    out: dict[tuple[str, int, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in records:
        e = start_epoch(r)
        if e is None:
            continue
        loss = choice(r, "loss")
        if loss not in (SOFTMAX, SPARSE):
            raise ValueError(f"{r['run_name']}: the regime study pairs softmax with sparse_softmax, got loss={loss}")
        out[get(r, "config.scale.name"), int(e), r["seed"]]["softmax" if loss == SOFTMAX else f"k={get(r, 'config.loss.k')}"] = r
    return out


def points(runs: Path, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One point per (scale, start, seed, sparse k): the softmax arm's regime and Δ ROUGE-1/2 with their intervals."""
    out = []
    for (scale, e, seed), by_arm in sorted(arms(records).items()):
        soft = by_arm.get("softmax")
        if soft is None:
            continue
        for arm, sparse in sorted(by_arm.items(), key=lambda kv: (kv[0] != "softmax", len(kv[0]), kv[0])):
            if arm == "softmax":
                continue
            point = {
                "scale": scale, "start": e, "seed": seed, "k": int(get(sparse, "config.loss.k")),
                "share": soft["metrics"]["test/target_in_topk"], "share_k": int(soft["metrics"]["test/diagnostics_k"]),
                "rank": soft["metrics"]["test/median_target_rank"], "sparse_share": sparse["metrics"]["test/target_in_topk"],
                "softmax": {m: soft["metrics"][f"test/{m}_beam{BEAM}"] for m in METRICS},
                "sparse": {m: sparse["metrics"][f"test/{m}_beam{BEAM}"] for m in METRICS},
                "degenerate": {arm: degenerate_share(r, runs) for arm, r in (("softmax", soft), ("sparse", sparse))},
            }
            for m in METRICS:
                (a, b), = per_seed_scores([(soft, sparse)], runs, lambda row, m=m: row[f"beam{BEAM}"][m]).values()
                point[m] = paired_bootstrap(a, b, num_samples=BOOTSTRAP_SAMPLES)
                point["n"] = len(a)
            out.append(point)
    return out


def degenerate_share(record: dict[str, Any], runs: Path) -> float:
    """Share of the run's test outputs at beam :data:`BEAM` with a word 3+ times in a row (:func:`stutters`)."""
    rows = read_predictions(record, runs)
    return sum(stutters(r[f"beam{BEAM}"]["prediction"]) for r in rows) / len(rows)


def per_start(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (scale, start, k): the seeds' Δ R-1 over seeds, and the regime of the start (means over its seeds).

    The regime is measured on the softmax arms (one more softmax epoch from the start): the share of
    test targets in Ω_k, the median target rank, their ROUGE-1 (the start's strength), and each arm's
    share of degenerate outputs.
    """
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for p in pts:
        groups[p["scale"], p["start"], p["k"]].append(p)
    return [
        {"scale": scale, "start": start, "k": k, "delta": seed_delta(ps, "rouge1"),
         "share": mean([p["share"] for p in ps]), "share_k": ps[0]["share_k"], "rank": mean([p["rank"] for p in ps]),
         "softmax_rouge1": mean([p["softmax"]["rouge1"] for p in ps]),
         "degenerate": {arm: mean([p["degenerate"][arm] for p in ps]) for arm in ("softmax", "sparse")}}
        for (scale, start, k), ps in sorted(groups.items())
    ]


def trend(rows: list[dict[str, Any]]) -> LinearTrend | None:
    """Mean Δ R-1 of each start against its share of targets in Ω_k (in %), one point per start; None under 2 starts."""
    if len({r["share"] for r in rows}) < 2:
        return None
    return LinearTrend(tuple(100 * r["share"] for r in rows), tuple(r["delta"].mean for r in rows))


def start_table(rows: list[dict[str, Any]]) -> str:
    cells = [
        [r["scale"], r["start"], r["delta"].label, f"{100 * r['share']:.1f}% (k={r['share_k']})", f"{r['rank']:g}",
         f"{r['softmax_rouge1']:.2f}", f"{100 * r['degenerate']['softmax']:.0f}% / {100 * r['degenerate']['sparse']:.0f}%",
         r["k"], seed_summary(r["delta"]), str(verdict(r["delta"], claimed_direction(PAPER_DELTAS["rouge1"])))]
        for r in rows
    ]
    return markdown_table(
        ["scale", "start epoch", "seeds", "softmax arm: targets in Ω_k", "softmax arm: median target rank",
         "softmax arm R-1", "degenerate outputs softmax / sparse", "sparse k", "Δ R-1 over seeds", "verdict on Δ > 0"],
        cells,
    )


def trend_part(rows: list[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """The trend of Δ R-1 against the start's strength, per k, as text and its claims rows."""
    lines, claims = [], []
    for k in sorted({r["k"] for r in rows}):
        ks = [r for r in rows if r["k"] == k]
        line = trend(ks)
        if line is None:
            continue
        found = trend_verdict(line, [r["delta"].n_seeds for r in ks], +1, unit="ROUGE-1 per percentage point of share")
        lines.append(f"- k={k}: {found}.\n")
        claims.append({
            "id": f"sparse-regime-trend-k{k}",
            "claim": f"Δ R-1 (sparse k={k} − softmax, beam {BEAM}) rises as the model strengthens (the softmax arm's share of "
                     f"test targets in Ω_{ks[0]['share_k']}); our hypothesis for the paper's gain at a strong model, not a paper claim",
            "paper": "not stated",
            "ours": ", ".join(f"{r['delta'].mean:+.2f} at {100 * r['share']:.1f}% (e{r['start']}, {r['delta'].label})" for r in ks),
            "verdict": str(found),
            "source": EXPERIMENT,
        })
    if not lines:
        return "", []
    text = ("**The trend.** Least squares of each start's mean Δ R-1 over its seeds against its share of targets in Ω_k "
            "(one point per start; the slope's Student-t interval has starts − 2 degrees of freedom):\n\n" + "".join(lines))
    return text, claims


def strength_line(rows: list[dict[str, Any]], starts: list[dict[str, Any]]) -> str:
    """How far the strongest start is from the paper's model, and what the starts share."""
    top = max(rows, key=lambda r: r["share"])
    seeds = sorted({r["seed"] for r in starts})
    one = (f"All starts are epochs of one start run (seed {seeds[0]}), so the fine-tuning seeds vary each arm's data order "
           "and fresh weights but not the start itself." if len(seeds) == 1 else "")
    return (f"The strongest start (e{top['start']}) gives a softmax arm of ROUGE-1 {top['softmax_rouge1']:.2f} at beam {BEAM}, "
            f"{UNILM_ROUGE1 - top['softmax_rouge1']:.2f} below UniLM's own {UNILM_ROUGE1} (at beam 5). {one}\n")


def table(pts: list[dict[str, Any]]) -> str:
    rows = [
        [p["scale"], p["start"], p["seed"], f"{100 * p['share']:.1f}% (k={p['share_k']})", f"{p['rank']:g}",
         f"{p['softmax']['rouge1']:.2f} / {p['softmax']['rouge2']:.2f}", p["k"], f"{100 * p['sparse_share']:.1f}%",
         f"{p['sparse']['rouge1']:.2f} / {p['sparse']['rouge2']:.2f}", fmt_delta(p["rouge1"]), fmt_delta(p["rouge2"]), p["n"]]
        for p in pts
    ]
    return markdown_table(
        ["scale", "start epoch", "seed", "softmax arm: targets in Ω_k", "softmax arm: median target rank",
         "softmax R-1 / R-2", "sparse k", "sparse arm: targets in its Ω_k", "sparse R-1 / R-2", "Δ R-1 [95% over test items]",
         "Δ R-2 [95% over test items]", "test pairs"],
        rows,
    )


def figure(pts: list[dict[str, Any]], path: Path) -> None:
    """Δ ROUGE-1 and -2 (with intervals) against the softmax arm's share of targets in Ω_k, one series per k."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(METRICS), figsize=(10, 4), sharey=False)
    for ax, m in zip(axes, METRICS):
        for k in sorted({p["k"] for p in pts}):
            ps = sorted((p for p in pts if p["k"] == k), key=lambda p: p["share"])
            x = [100 * p["share"] for p in ps]
            y = [p[m]["delta"] for p in ps]
            err = [[p[m]["delta"] - p[m]["low"] for p in ps], [p[m]["high"] - p[m]["delta"] for p in ps]]
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=f"sparse k={k}")
            for p, xi, yi in zip(ps, x, y):
                ax.annotate(f"e{p['start']}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.axhline(PAPER_DELTAS[m], color="tab:red", ls="--", lw=0.8, label=f"paper Δ ({PAPER_DELTAS[m]:+.2f})")
        ax.set_xlabel(f"softmax arm: test targets in Ω_{pts[0]['share_k']} (%)")
        ax.set_ylabel(f"Δ {m} (sparse − softmax), beam {BEAM}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, path)


def start_schedule(starts: list[dict[str, Any]]) -> str:
    """The start run's schedule, and its continuation past it when it was continued."""
    schedule, epochs = shown(starts, "config.regime.epochs"), shown(starts, "config.train.epochs")
    if schedule == epochs:
        return f"a schedule of `regime.epochs` = {schedule} epochs"
    return (f"a schedule of `regime.epochs` = {schedule} epochs, then continued to `train.epochs` = {epochs} by resuming it, "
            "which leaves its earlier epochs as they were and stretches the schedule from there, so the learning rate "
            "rises again after its first schedule's end")


def grid_line(records: list[dict[str, Any]]) -> str:
    """The grid that ran and its cost (run wall time summed), so the budget can be checked against the page."""
    starts = sorted({e for r in records if (e := start_epoch(r)) is not None})
    ks = sorted({int(get(r, "config.loss.k")) for r in records if choice(r, "loss") == SPARSE})
    hours = sum(r["timing"]["wall_s"] for r in records) / 3600
    scales = sorted({get(r, "config.scale.name") for r in records})
    budget = (" The study's budget is 10 hours of one CPU thread: the make target's grid (starts 1, 2, 4, 8, 16; k=20; "
              "fine-tuning seeds 0, 1, 2) fits it; the k=100 arms ran for seed 0 only, and a fresh start (e0, "
              "`REGIME_STARTS=0,...`) would exceed it. The wall times count runs made two at a time beside other work, "
              "so they overstate what one run alone takes." if scales == ["cpu"] else "")
    return (f"Grid: start epochs {starts}, softmax and sparse k in {ks}, seeds {sorted({r['seed'] for r in records})}: "
            f"{len(records)} runs with the start run, {hours:.1f} h of run wall time in all.{budget}\n")


def reading(pts: list[dict[str, Any]]) -> str:
    """What the measured curve says, per k: Δ R-1 in order of the start's share, its trend, where its interval excludes 0."""
    lines = []
    for k in sorted({p["k"] for p in pts}):
        ps = sorted((p for p in pts if p["k"] == k), key=lambda p: p["share"])
        d = [p["rouge1"]["delta"] for p in ps]
        trend = ("rises" if all(b > a for a, b in zip(d, d[1:])) else
                 "falls" if all(b < a for a, b in zip(d, d[1:])) else "is not monotone")
        above = sum(p["rouge1"]["low"] > 0 for p in ps)
        below = sum(p["rouge1"]["high"] < 0 for p in ps)
        lines.append(
            f"- k={k}: Δ R-1 " + ", ".join(f"{fmt_delta(p['rouge1'])} at {100 * p['share']:.1f}% (e{p['start']})" for p in ps)
            + (f": it {trend} as the share grows" if len(ps) > 1 else "")
            + f"; its interval lies above 0 at {above} and below 0 at {below} of {len(ps)} start(s).\n"
        )
    top = max(pts, key=lambda p: p["share"])
    lines.append(
        f"- The strongest start here holds {100 * top['share']:.1f}% of the test targets in Ω_{top['share_k']} "
        "(median rank {:g}); the paper's regime (nearly all) lies beyond the measured range, so the curve's value there "
        "is an extrapolation that these runs do not test.\n".format(top["rank"])
    )
    return "**What the curve says** (ROUGE-1; the table has ROUGE-2):\n\n" + "".join(lines)


def seed_delta(pts: list[dict[str, Any]], metric: str) -> SeedAwareDelta:
    """The seeds' Δ ``metric`` of points of one (scale, start, k), each with its item interval, as one seed-aware delta."""
    return SeedAwareDelta.from_bootstraps({p["seed"]: p[metric] for p in pts}, {p["seed"]: p["n"] for p in pts})


def claim(pts: list[dict[str, Any]]) -> dict[str, str]:
    """The ledger row: the paper's beam-1 gain against ours at the strongest start, for the smallest k (the paper's 20).

    The strongest start is the (scale, start) whose softmax arms hold the largest mean share of
    targets in Ω_k; its seeds give the verdict (:func:`softmax_zoo.reports._verdicts.verdict`).
    """
    k = min(p["k"] for p in pts)
    starts: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for p in pts:
        if p["k"] == k:
            starts[p["scale"], p["start"]].append(p)
    share = {key: sum(p["share"] for p in ps) / len(ps) for key, ps in starts.items()}
    ordered = sorted(starts, key=share.get)
    top, first = seed_delta(starts[ordered[-1]], "rouge1"), seed_delta(starts[ordered[0]], "rouge1")
    share_k = pts[0]["share_k"]
    found = verdict(top, claimed_direction(PAPER_DELTAS["rouge1"]))
    return {
        "id": "sparse-regime-gigaword-beam1",
        "claim": "Gigaword-10k, UniLM: sparse-softmax beats softmax on ROUGE-1 at beam 1, tested from starts of increasing strength",
        "paper": f"{PAPER_DELTAS['rouge1']:+.2f} (nearly all targets in Ω_20, not measured)",
        "ours": (f"k={k}: Δ R-1 at the strongest start ({100 * share[ordered[-1]]:.1f}% of targets in Ω_{share_k}): "
                 f"{seed_summary(top)}; at the weakest ({100 * share[ordered[0]]:.1f}%): {first.mean:+.2f} ({first.label})"),
        "verdict": f"{found} in the measured regime; the paper's regime not tested here (needs scale=paper)",
        "source": EXPERIMENT,
    }


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/sparse_regime.md`` (+ ``sparse_regime.png`` when there are points); ``out`` defaults to ``results_dir``."""
    out = Path(out or results_dir)
    runs = runs_dir(results_dir)
    records = load_records(runs, EXPERIMENT) if (runs / EXPERIMENT).is_dir() else []
    pts = points(runs, records)
    if not pts:
        write_page(out, EXPERIMENT, no_records(runs, results_dir))
        return
    figure(pts, out / f"{EXPERIMENT}.png")
    starts = [r for r in records if start_epoch(r) is None]
    arms_ = [r for r in records if start_epoch(r) is not None]
    rows = per_start(pts)
    trend_text, trend_claims = trend_part(rows)
    start_line = "".join(
        f"Start run `{r['run_name']}`: {r['timing']['global_steps']} optimiser steps, test R-1 / R-2 "
        f"{r['metrics'][f'test/rouge1_beam{BEAM}']:.2f} / {r['metrics'][f'test/rouge2_beam{BEAM}']:.2f} after its last epoch.\n"
        for r in starts
    )
    text = (
        "# Sparse-softmax regime study (Gigaword-10k)\n\n"
        + provenance(EXPERIMENT, records, results_dir)
        + "Runs: `make reproduce-sparse-regime` (`python -m softmax_zoo.studies.sparse_regime`). A softmax run keeps a "
        f"checkpoint at the end of each epoch (the start run: {start_schedule(starts)}); from each start epoch e (e0: the model's own "
        f"initialisation) the arms train on for `train.epochs` = {shown(arms_, 'config.train.epochs')}, softmax and "
        f"sparse-softmax at each k, all with label smoothing {shown(records, 'config.loss.label_smoothing')}. Every arm decodes the same "
        f"test pairs at beam {BEAM}. Δ = sparse − softmax, ROUGE F1 x 100 "
        f"(rouge-score); each row's 95% interval is a paired bootstrap ({BOOTSTRAP_SAMPLES} resamples) over test pairs, one "
        f"training seed per row. The claims row takes a start's seeds together: {SEED_INTERVAL_NOTE} {VERDICT_RULES} The "
        "x-axis is the softmax arm's share of test target tokens inside its top-k (teacher-forced, at the masked "
        "positions), measured after its extra epoch: the strength the start reaches with the full softmax.\n\n"
        + start_line + grid_line(records) + "\n"
        + table(pts) + "\n"
        + f"![Δ ROUGE against the share of targets in Ω_k]({EXPERIMENT}.png)\n\n"
        + reading(pts) + "\n"
        + "**Per start**, the seeds together (ROUGE-1, beam 1; the regime and the degenerate shares are means over the "
        "seeds' arms):\n\n" + start_table(rows) + "\n"
        + trend_text + ("\n" if trend_text else "")
        + strength_line(rows, starts) + "\n"
        + PAPER_REGIME + "\n\n"
        + settings_part(seq2seq_settings("gigaword", STUDY_REASONS), {"the start run": starts, "the arms from a start": arms_},
                        "Sun et al. 2021's §4 on summarisation (Table 5), the setting whose regime this study maps")
    )
    write_page(out, EXPERIMENT, text, [claim(pts), *trend_claims])
