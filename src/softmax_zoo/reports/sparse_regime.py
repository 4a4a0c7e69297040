"""The sparse-softmax regime study: Δ ROUGE (sparse − softmax) against the start's share of targets in Ω_k.

Records of ``make reproduce-sparse-regime`` (:mod:`softmax_zoo.studies.sparse_regime`): per start (the start run's
epoch e), scale and seed, the softmax arm paired with each sparse arm (its k): Δ ROUGE-1/2 at beam 1 with a paired
bootstrap interval over the test pairs, against the softmax arm's share of test targets inside its top-k
(``test/target_in_topk``). A claims row takes the seeds of a (start, k) together (:func:`seed_delta`). Without
records the page says how to make them. Words: templates/sparse_regime.md.j2.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from ..records import choice, get, load_records, read_predictions, runs_dir
from . import _seq2seq as s2s
from ._pages import dirty_note, page_command, provenance, pyplot, save_figure, shown_path
from ._render import publish
from ._seq2seq import BOOTSTRAP_SAMPLES, SOFTMAX, SPARSE, per_seed_scores
from ._seq2seq_settings import PAPER as PAPER_SETTINGS
from ._seq2seq_settings import seq2seq_settings
from ._settings import settings_data, shown
from ._stats import DeltaInterval, LinearTrend, mean, paired_bootstrap
from ._verdicts import claimed_direction, trend_verdict, verdict
from .table5 import UNILM_BEAM5

EXPERIMENT = "sparse_regime"
METRICS = ("rouge1", "rouge2")
BEAM = 1
# Sun et al. 2021, Table 5 (Gigaword-10k, UniLM, beam 1): sparse − softmax.
PAPER_DELTAS = {"rouge1": 0.67, "rouge2": 0.79}
UNILM_ROUGE1 = UNILM_BEAM5["rouge1"]  # the strength of the paper's model

# Why the study's settings differ from Table 5's where they do (the rest: _seq2seq_settings).
STUDY_REASONS = {
    "epochs": "the start run's epochs give starts of growing strength; each arm then trains briefly from one, within the "
              "study's budget",
    "beams": "beam 1 only, so that every arm's decodes fit the study's budget",
    "decoding mask": "every arm decodes with the full distribution, so that the arms differ in training only; at beam 1 "
                     "the sparse arm's top-1 mask would pick the same tokens (greedy decoding)",
    "sparse-softmax k": "the paper's best classification k (Fig. 2) and one well above it",
    "seeds": "the study's budget (the grid line above); a verdict needs more seeds",
}


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
                "records": [soft, sparse],
            }
            for m in METRICS:
                (a, b), = per_seed_scores([(soft, sparse)], runs, lambda row, m=m: row[f"beam{BEAM}"][m]).values()
                point[m] = paired_bootstrap(a, b, num_samples=BOOTSTRAP_SAMPLES)
                point["n"] = len(a)
            out.append(point)
    return out


def degenerate_share(record: dict[str, Any], runs: Path) -> float:
    """Share of the run's test outputs at beam :data:`BEAM` that are degenerate (:func:`._seq2seq.degenerate_share`)."""
    return s2s.degenerate_share(read_predictions(record, runs), BEAM)


def per_start(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (scale, start, k): the seeds' Δ R-1, and the start's regime, means over its seeds of the softmax arms'
    share of test targets in Ω_k, median target rank and ROUGE-1, and of each arm's share of degenerate outputs."""
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for p in pts:
        groups[p["scale"], p["start"], p["k"]].append(p)
    return [
        {"scale": scale, "start": start, "k": k, "delta": seed_delta(ps, "rouge1"),
         "share": mean([p["share"] for p in ps]), "share_k": ps[0]["share_k"], "rank": mean([p["rank"] for p in ps]),
         "softmax_rouge1": mean([p["softmax"]["rouge1"] for p in ps]),
         "degenerate": {arm: mean([p["degenerate"][arm] for p in ps]) for arm in ("softmax", "sparse")},
         "dirty": dirty_note(records_of(ps))}
        for (scale, start, k), ps in sorted(groups.items())
    ]


def records_of(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct records behind ``pts`` (a softmax arm stands behind each of its seed's sparse arms)."""
    return list({r["run_name"]: r for p in pts for r in p["records"]}.values())


def trend(rows: list[dict[str, Any]]) -> LinearTrend | None:
    """Mean Δ R-1 of each start against its share of targets in Ω_k (in %), one point per start; None under 2 starts."""
    if len({r["share"] for r in rows}) < 2:
        return None
    return LinearTrend(tuple(100 * r["share"] for r in rows), tuple(r["delta"].mean for r in rows))


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


def seed_delta(pts: list[dict[str, Any]], metric: str) -> DeltaInterval:
    """The seeds' Δ ``metric`` of points of one (scale, start, k), each with its item interval, as one seed-aware delta."""
    return DeltaInterval.from_bootstraps({p["seed"]: p[metric] for p in pts}, {p["seed"]: p["n"] for p in pts})


def trends(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per k with 2+ starts: the trend of Δ R-1 against the start's share (:func:`trend`) and its verdict."""
    out = []
    for k in sorted({r["k"] for r in rows}):
        ks = [r for r in rows if r["k"] == k]
        line = trend(ks)
        if line is not None:
            out.append({"k": k, "rows": ks, "share_k": ks[0]["share_k"],
                        "verdict": trend_verdict(line, [r["delta"].n_seeds for r in ks], +1, unit="ROUGE-1 per percentage point of share")})
    return out


def curve(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per k, its points in order of the start's share, whether Δ R-1 rises or falls with it, and how many intervals exclude 0."""
    out = []
    for k in sorted({p["k"] for p in pts}):
        ps = sorted((p for p in pts if p["k"] == k), key=lambda p: p["share"])
        d = [p["rouge1"]["delta"] for p in ps]
        out.append({"k": k, "points": ps, "above": sum(p["rouge1"]["low"] > 0 for p in ps),
                    "below": sum(p["rouge1"]["high"] < 0 for p in ps),
                    "trend": ("rises" if all(b > a for a, b in zip(d, d[1:])) else
                              "falls" if all(b < a for a, b in zip(d, d[1:])) else "is not monotone")})
    return out


def headline(pts: list[dict[str, Any]]) -> dict[str, Any]:
    """The ledger row's data: the paper's beam-1 gain against ours at the strongest start (the largest mean share of
    targets in Ω_k), for the smallest k (the paper's 20), its seeds compared paired by test item within each seed."""
    k = min(p["k"] for p in pts)
    starts: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for p in pts:
        if p["k"] == k:
            starts[p["scale"], p["start"]].append(p)
    share = {key: sum(p["share"] for p in ps) / len(ps) for key, ps in starts.items()}
    ordered = sorted(starts, key=share.get)
    top = seed_delta(starts[ordered[-1]], "rouge1")
    degenerate = {arm: mean([p["degenerate"][arm] for p in starts[ordered[-1]]]) for arm in ("softmax", "sparse")}
    return {"id": "sparse-regime-gigaword-beam1", "source": EXPERIMENT, "k": k, "share_k": pts[0]["share_k"],
            "degenerate": degenerate, "dirty": dirty_note(records_of(starts[ordered[-1]])),
            "top": top, "top_share": share[ordered[-1]], "first": seed_delta(starts[ordered[0]], "rouge1"),
            "first_share": share[ordered[0]], "verdict": verdict(top, claimed_direction(PAPER_DELTAS["rouge1"]))}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data (``points`` empty without records): the points, per start, trends, the grid, the settings, claims."""
    runs = runs_dir(results_dir)
    records = load_records(runs, EXPERIMENT) if (runs / EXPERIMENT).is_dir() else []
    data = {"folder": shown_path(runs / EXPERIMENT), "command": page_command(EXPERIMENT, results_dir), "points": points(runs, records)}
    if not data["points"]:
        return data
    pts = data["points"]
    starts = [r for r in records if start_epoch(r) is None]
    arms_ = [r for r in records if start_epoch(r) is not None]
    rows = per_start(pts)
    for r in rows:
        r["verdict"] = verdict(r["delta"], claimed_direction(PAPER_DELTAS["rouge1"]))
    found = trends(rows)
    return data | {
        "provenance": provenance(EXPERIMENT, records, results_dir), "starts": starts, "beam": BEAM, "bootstrap_samples": BOOTSTRAP_SAMPLES,
        "schedule": shown(starts, "config.regime.epochs"), "start_epochs": shown(starts, "config.train.epochs"),
        "arm_epochs": shown(arms_, "config.train.epochs"), "smoothing": shown(records, "config.loss.label_smoothing"),
        "grid": {"starts": sorted({e for r in records if (e := start_epoch(r)) is not None}),
                 "ks": sorted({int(get(r, "config.loss.k")) for r in records if choice(r, "loss") == SPARSE}),
                 "seeds": sorted({r["seed"] for r in records}), "runs": len(records),
                 "hours": sum(r["timing"]["wall_s"] for r in records) / 3600,
                 "cpu_only": sorted({get(r, "config.scale.name") for r in records}) == ["cpu"]},
        "curve": curve(pts), "top_point": max(pts, key=lambda p: p["share"]), "rows": rows, "trends": found,
        "top_row": max(rows, key=lambda r: r["share"]), "start_seeds": sorted({r["seed"] for r in starts}),
        "unilm_rouge1": UNILM_ROUGE1, "paper_epochs": PAPER_SETTINGS["gigaword"]["epochs"], "paper_deltas": PAPER_DELTAS,
        "settings": settings_data(seq2seq_settings("gigaword", STUDY_REASONS), {"the start run": starts, "the arms from a start": arms_},
                                  "Sun et al. 2021's §4 on summarisation (Table 5), the setting whose regime this study maps"),
        "claims": [headline(pts)] + [t | {"id": f"sparse-regime-trend-k{t['k']}", "source": EXPERIMENT,
                                          "dirty": dirty_note(records_of([p for p in pts if p["k"] == t["k"]]))} for t in found],
    }


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/sparse_regime.md`` (+ ``sparse_regime.png`` when there are points); ``out`` defaults to ``results_dir``."""
    out = Path(out or results_dir)
    data = summarise(results_dir)
    if data["points"]:
        figure(data["points"], out / f"{EXPERIMENT}.png")
    publish(out, EXPERIMENT, data | {"claims": data.get("claims", [])})
