"""The sparse-softmax regime study (``make reproduce-sparse-regime``, :mod:`softmax_zoo.studies.sparse_regime`): Δ ROUGE
(sparse − softmax) at beam 1 against the softmax arm's share of test targets inside its top-k (``test/target_in_topk``),
per start (the start run's epoch e), scale, seed and k; a start's seeds together give the claims rows one Δ per k.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..records import group_by, runs_dir, seeds_of
from ..run_record import load_runs
from ._forms import ClaimForm, ClaimKind
from ._pages import dirty_note, page_command, provenance, publish, pyplot, save_figure, shown_path, template_words
from ._regime import DEGENERATE, failures, gated
from ._seq2seq import ARMS, BOOTSTRAP_SAMPLES, SETTINGS_WORDS, SOFTMAX, SPARSE, Record, output_shares, outputs, seq2seq_settings
from ._settings import setting, shown
from ._stats import DeltaInterval, LinearTrend, mean, paired_bootstrap
from ._verdicts import claimed_direction, trend_verdict, verdict
from .table5 import TABLE5

EXPERIMENT = "sparse_regime"
HEADLINES = {EXPERIMENT: "sparse-regime-trend-k20"}  # README.md's status table: the row heading the experiment
METRICS = ("rouge1", "rouge2")
BEAM = 1
PAPER_DELTAS = TABLE5.paper[BEAM]  # Sun et al. 2021, Table 5 (Gigaword-10k, UniLM, beam 1): sparse − softmax
START = setting("regime", "start_epoch")  # a fine-tuning run's start epoch; the start run's config has none
FIGURE = template_words("_sparse_regime_figures.j2")  # sparse_regime.png's words


def sparse_k(record: Record) -> int | None:
    """The k of a sparse arm, None for the softmax arm."""
    loss = record.choice("loss")
    if loss not in (SOFTMAX, SPARSE):
        raise ValueError(f"{record.run_name}: the regime study pairs softmax with sparse_softmax, got loss={loss}")
    return None if loss == SOFTMAX else int(record.option("loss", "k"))


def points(runs: Path, arms: list[Record]) -> list[dict[str, Any]]:
    """Per (scale, start, seed, sparse k) of the fine-tuning ``arms``: the softmax arm's regime, Δ R-1/2 and item intervals."""
    out, groups = [], {}
    for r in arms:
        groups.setdefault((r.setting("scale", "name"), START(r), r.seed), []).append(r)
    for (scale, start, seed), group in sorted(groups.items()):
        by_k = {sparse_k(r): r for r in group}
        if (soft := by_k.pop(None, None)) is None:
            continue
        for k, sparse in sorted(by_k.items()):
            (rows,) = outputs([(soft, sparse)], runs).values()  # (softmax rows, sparse rows)
            out.append({
                "scale": scale, "start": start, "seed": seed, "k": k, "n": len(rows[0]), "records": [soft, sparse],
                "share": soft.metrics["test/target_in_topk"], "share_k": int(soft.metrics["test/diagnostics_k"]),
                "rank": soft.metrics["test/median_target_rank"], "sparse_share": sparse.metrics["test/target_in_topk"],
                **{arm: {m: r.metrics[f"test/{m}_beam{BEAM}"] for m in METRICS} for arm, r in zip(ARMS, (soft, sparse))},
                "degenerate": {arm: s[0] for arm, s in output_shares(dict(zip(ARMS, rows)), [BEAM])["degenerate"].items()},
                **{m: paired_bootstrap(*([r[f"beam{BEAM}"][m] for r in arm_rows] for arm_rows in rows), num_samples=BOOTSTRAP_SAMPLES)
                   for m in METRICS},
            })
    return out


HEADLINE_FORM = ClaimForm(ClaimKind.SUPERIORITY, "Table 5 of Sun et al.: sparse-softmax above softmax (ROUGE-1, beam 1)",
                          measure="ROUGE-1 at beam 1, sparse-softmax − softmax", better="higher")
TREND_FORM = ClaimForm(ClaimKind.TREND, "Δ R-1 rises as the model strengthens (our hypothesis)",
                       measure="Δ ROUGE-1 against the softmax arm's share of targets in Ω_k")


def records_of(pts: list[dict[str, Any]]) -> list[Record]:
    """The distinct records behind ``pts`` (a softmax arm stands behind each of its seed's sparse arms)."""
    return list({r.run_name: r for p in pts for r in p["records"]}.values())


def per_start(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (scale, start, k): the seeds' Δ R-1 as one seed-aware delta, its verdict on the paper's sign, and the
    means over the seeds of the start's regime, softmax ROUGE-1 and each arm's share of degenerate outputs."""
    rows = []
    for (scale, start, k), ps in sorted(group_by(pts, ["scale", "start", "k"]).items()):
        delta = DeltaInterval.from_bootstraps({p["seed"]: p["rouge1"] for p in ps}, {p["seed"]: p["n"] for p in ps})
        degenerate = {arm: mean([p["degenerate"][arm] for p in ps]) for arm in ARMS}
        decided = gated(verdict(delta, claimed_direction(PAPER_DELTAS["rouge1"])), failures(DEGENERATE, degenerate))
        rows.append({"scale": scale, "start": start, "k": k, "points": ps, "delta": delta, "share_k": ps[0]["share_k"],
                     "verdict": decided, "dirty": dirty_note(records_of(ps)),
                     "share": mean([p["share"] for p in ps]), "rank": mean([p["rank"] for p in ps]),
                     "softmax_rouge1": mean([p[SOFTMAX]["rouge1"] for p in ps]), "degenerate": degenerate})
    return rows


def figure(curves: list[dict[str, Any]], path: Path) -> None:
    """Δ ROUGE-1 and -2 (with intervals) against the softmax arm's share of targets in Ω_k, one series per k."""
    fig, axes = pyplot().subplots(1, len(METRICS), figsize=(10, 4))
    for ax, m in zip(axes, METRICS):
        for c in curves:
            ps = c["points"]
            x, y = [100 * p["share"] for p in ps], [p[m]["delta"] for p in ps]
            err = [[p[m]["delta"] - p[m]["low"] for p in ps], [p[m]["high"] - p[m]["delta"] for p in ps]]
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=str(FIGURE.series(c["k"])))
            for p, xi, yi in zip(ps, x, y):
                ax.annotate(str(FIGURE.start(p["start"])), (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
        ax.axhline(0.0, color="grey", lw=0.8)
        ax.axhline(PAPER_DELTAS[m], color="tab:red", ls="--", lw=0.8, label=str(FIGURE.paper(PAPER_DELTAS[m])))
        ax.set_xlabel(str(FIGURE.xlabel(curves[0]["points"][0]["share_k"])))
        ax.set_ylabel(str(FIGURE.ylabel(m, BEAM)))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save_figure(fig, path)


def per_k(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per k, a ledger row: its points by share, how they lie against 0 and move with the share, its weakest and strongest
    start, and the verdict on a rise of the least-squares trend of each start's mean Δ R-1 against its share (None under 2 shares)."""
    out = []
    for (k,), ks in sorted(group_by(rows, ["k"]).items()):
        ps = sorted((p for r in ks for p in r["points"]), key=lambda p: p["share"])
        steps = np.diff([p["rouge1"]["delta"] for p in ps])
        x, y = tuple(100 * r["share"] for r in ks), tuple(r["delta"].delta for r in ks)
        trend = trend_verdict(LinearTrend(x, y), [r["delta"].n for r in ks], +1,
                              unit="ROUGE-1 per percentage point of share") if len(set(x)) > 1 else None
        by_share = sorted(ks, key=lambda r: r["share"])
        out.append({"id": f"sparse-regime-trend-k{k}", "source": EXPERIMENT, "headline": False, "k": k, "rows": ks,
                    "first": by_share[0], "top": by_share[-1], "share_k": ks[0]["share_k"], "points": ps,
                    "above": sum(p["rouge1"]["low"] > 0 for p in ps), "below": sum(p["rouge1"]["high"] < 0 for p in ps),
                    "rises": all(steps > 0), "falls": all(steps < 0), "dirty": dirty_note(records_of(ps)),
                    "verdict": trend})
    return out


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data (``points`` empty without records): the points, per start, trends, the grid, the settings, claims."""
    runs = runs_dir(results_dir)
    records = load_runs(runs, EXPERIMENT) if (runs / EXPERIMENT).is_dir() else []
    starts = [r for r in records if START(r) is None]
    arms = [r for r in records if START(r) is not None]
    data = {"folder": shown_path(runs / EXPERIMENT), "command": page_command(EXPERIMENT, results_dir), "points": points(runs, arms)}
    if not (pts := data["points"]):
        return data | {"claims": []}
    rows = per_start(pts)
    ks = per_k(rows)
    return data | {
        "provenance": provenance(EXPERIMENT, records, results_dir), "starts": starts, "beam": BEAM, "bootstrap_samples": BOOTSTRAP_SAMPLES,
        "schedule": shown(starts, setting("regime", "epochs")), "start_epochs": shown(starts, setting("train", "epochs")),
        "arm_epochs": shown(arms, setting("train", "epochs")), "smoothing": shown(records, setting("loss", "label_smoothing")),
        "grid": {"starts": sorted({START(r) for r in arms}), "ks": sorted({k for r in arms if (k := sparse_k(r))}),
                 "seeds": seeds_of(records), "runs": len(records),
                 "hours": sum(r.timing["wall_s"] for r in records) / 3600,
                 "cpu_only": sorted({r.setting("scale", "name") for r in records}) == ["cpu"]},
        "per_k": ks, "rows": rows, "start_seeds": seeds_of(starts),
        "unilm_rouge1": TABLE5.unilm["rouge1"], "paper_epochs": SETTINGS_WORDS.paper["gigaword"]["epochs"], "paper_deltas": PAPER_DELTAS,
        "settings": seq2seq_settings("gigaword", {"the start run": starts, "the arms from a start": arms}, EXPERIMENT),
        # the headline: the paper's beam-1 gain against ours at the strongest start, for the smallest k (the paper's 20)
        "claims": [ks[0] | {"id": "sparse-regime-gigaword-beam1", "headline": True, "form": HEADLINE_FORM,
                            "verdict": ks[0]["top"]["verdict"]},
                   *(t | {"form": TREND_FORM} for t in ks if t["verdict"])],
    }


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/sparse_regime.md`` (+ ``sparse_regime.png`` when there are points); ``out`` defaults to ``results_dir``."""
    data = summarise(results_dir)
    if data["points"]:
        figure(data["per_k"], Path(out or results_dir) / f"{EXPERIMENT}.png")
    publish(out or results_dir, EXPERIMENT, data)
