"""When does sparse-softmax help? (``make reproduce-sparse-helps``, :mod:`softmax_zoo.studies.sparse_helps``): the controlled
study's Δ (sparse − softmax), paired by seed, against the softmax arm's test share of targets inside Ω_k; where Δ changes
sign, the crossing s* with its interval; the crowd at the k-th logit beside it; and the real runs (Table 5, Table 3, the
regime study's starts, Fig. 2's four tasks) placed on the same axis by their own records.
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from ..records import runs_dir, seeds_of
from ..run_record import RunRecord, load_runs
from ._compare import Comparison, Design, compare, per_seed
from ._forms import ClaimForm, ClaimKind
from ._pages import dirty_note, page_command, provenance, publish, pyplot, save_figure, shown_path, template_words
from ._stats import LinearTrend, mean, mean_ci, seeds_label
from ._verdicts import MIN_SEEDS, VerdictKind, too_few, trend_verdict

EXPERIMENT = "sparse_helps"
HEADLINES = {EXPERIMENT: "sparse-helps-threshold-k20"}  # README.md's status table: the row heading the experiment
ACCURACY, LOG_LIKELIHOOD = "test/mode_accuracy", "test/log_likelihood"
DIAL_K = 20  # the k at which the real runs' records hold the softmax arm's share of targets
FIGURE = template_words("_sparse_helps_figures.j2")  # sparse_helps.png's words
Record = RunRecord


def start_epoch(r: RunRecord) -> int | None:
    """A regime-study arm's start epoch (its start run has none)."""
    return r.setting("regime", "start_epoch")


def accuracy_delta(metric: str, log: bool = False) -> Comparison:
    """Δ = metric(sparse) − metric(softmax) of one seed's two arms, paired by seed (of logs with ``log``)."""
    return Comparison(a="softmax", b="sparse", metric=metric, design=Design.PAIRED_BY_SEED, log=log)


def prediction_band(values: list[float], confidence: float = 0.95) -> tuple[float, float]:
    """Where one more seed's value falls with probability ``confidence``: mean ± t_{(1+c)/2, n−1} · SD · √(1 + 1/n)."""
    m, n = float(np.mean(values)), len(values)
    if n < 2:
        return math.nan, math.nan
    half = stats.t.ppf((1 + confidence) / 2, n - 1) * float(np.std(values, ddof=1)) * math.sqrt(1 + 1 / n)
    return m - half, m + half


def crossing(x: list[float], y: list[float]) -> float | None:
    """The share above which Δ stays >= 0: linear interpolation between the last level with Δ < 0 and the next; None when Δ
    is < 0 at the top level or >= 0 everywhere (no sign change in the range)."""
    order = sorted(range(len(x)), key=lambda i: x[i])
    xs, ys = [x[i] for i in order], [y[i] for i in order]
    negative = [i for i, v in enumerate(ys) if v < 0]
    if not negative or negative[-1] == len(ys) - 1:
        return None
    i = negative[-1]
    return xs[i] + (0 - ys[i]) * (xs[i + 1] - xs[i]) / (ys[i + 1] - ys[i])


def levels(records: list[Record], k: int, start: str) -> list[dict[str, Any]]:
    """Per dial level, sparse k (``start``: cold or init) against softmax of the same start: the regime and the paired Δ."""
    out = []
    by_level: dict[Any, list[RunRecord]] = {}
    for r in records:
        by_level.setdefault(r.choices.get("level"), []).append(r)
    for level, group in sorted(by_level.items()):
        soft = [r for r in group if r.choices.get("loss") == "softmax" and r.choices.get("start") == start]
        sparse = [r for r in group if r.choices.get("k") == k and r.choices.get("start") == start]
        if not soft or not sparse:
            continue
        share = per_seed(soft, f"test/target_in_top{k}")
        seeds = sorted(set(share) & set(per_seed(sparse, lambda r: r.seed)))
        arms = {"softmax": soft, "sparse": sparse}
        out.append({
            "level": level, "seeds": seeds, "share": mean([share[s] for s in seeds]), "share_by_seed": share,
            "teacher_mass": mean([r.metrics[f"teacher/top{k}_mass"] for r in soft]),
            "temperature": soft[0].setting("temperature"),
            **{name: compare(accuracy_delta(metric, log), soft, sparse).delta
               for name, metric, log in (("accuracy", ACCURACY, False), ("log_accuracy", ACCURACY, True),
                                         ("log_likelihood", LOG_LIKELIHOOD, False))},
            **{f"{arm}_{name}": mean(list(per_seed(rs, metric).values())) for arm, rs in arms.items()
               for name, metric in (("accuracy", ACCURACY), ("log_likelihood", LOG_LIKELIHOOD),
                                    ("crowd", f"test/logits_near_kth_k{k}"), ("crowd_share", f"test/logits_near_kth_share_k{k}"),
                                    ("rank", "test/median_target_rank"), ("frequent", "test/argmax_frequent"),
                                    ("sparse_share", f"test/target_in_top{k}"))},
            "teacher_frequent": mean([r.metrics["teacher/mode_frequent"] for r in soft]),
            "records": soft + sparse,
        })
    return out


def series(records: list[Record], k: int, start: str) -> dict[str, Any]:
    """One curve (sparse k, start): its levels, the crossing s* per seed and over seeds, and the threshold verdict's kind."""
    pts = levels(records, k, start)
    seeds = sorted(set.intersection(*(set(p["seeds"]) for p in pts))) if pts else []
    by_seed = {s: crossing([p["share_by_seed"][s] for p in pts], [dict(zip(p["accuracy"].seeds, p["accuracy"].deltas))[s] for p in pts])
               for s in seeds}
    found = [v for v in by_seed.values() if v is not None]
    star = mean_ci(found) if found else None  # (mean, half-width, n)
    interval = (star[0] - star[1], star[0] + star[1]) if star and star[2] > 1 else None
    kind, below, above = threshold_kind(pts, seeds, by_seed, interval)
    band = [{"share": p["share"], "band": prediction_band(list(p["log_accuracy"].deltas))} for p in pts]
    losing = [p["share"] for p in pts if p["accuracy"].high < 0]  # levels whose Δ accuracy interval lies below 0
    rest = [p for p in pts if not losing or p["share"] > max(losing)]
    even_from = min(p["share"] for p in rest) if rest and all(p["accuracy"].high >= 0 for p in rest) else None
    return {"k": k, "start": start, "points": pts, "seeds": seeds, "crossings": by_seed, "star": star, "interval": interval,
            "kind": kind.value, "below": below, "above": above, "band": band, "losing_until": max(losing, default=None),
            "even_from": even_from, "gains": [p for p in pts if p["accuracy"].low > 0],
            "dirty": dirty_note([r for p in pts for r in p["records"]])}


def threshold_kind(pts: list[dict[str, Any]], seeds: list[int], by_seed: dict[int, float | None],
                   interval: tuple[float, float] | None) -> tuple[VerdictKind, list[dict], list[dict]]:
    """The verdict on "sparse gains only when the share of targets in Ω_k exceeds s*" (the form: a threshold with its
    interval): too few seeds below MIN_SEEDS; inconclusive without a crossing in every seed; contradicts when a level below
    s*'s interval has a gain whose interval excludes 0; supported when none does and a level above it does; else
    inconclusive. Returns (kind, the levels below the interval, those above it)."""
    if (gate := too_few(len(seeds))) is not None:
        return gate, [], []
    if interval is None or any(v is None for v in by_seed.values()):
        return VerdictKind.INCONCLUSIVE, [], []
    below = [p for p in pts if p["share"] < interval[0]]
    above = [p for p in pts if p["share"] > interval[1]]
    if any(p["accuracy"].low > 0 for p in below):
        return VerdictKind.CONTRADICTS, below, above
    return (VerdictKind.SUPPORTED if any(p["accuracy"].low > 0 for p in above) else VerdictKind.INCONCLUSIVE), below, above


FORMS = {  # each ledger row's form (reports/_forms.py), by its shape (a trend's by its name); our findings, not the paper's
    "threshold": ClaimForm(ClaimKind.THRESHOLD, "sparse gains only when the share of targets in Ω_k exceeds s*",
                           measure="Δ accuracy, sparse − softmax, paired by seed", better="higher"),
    "crowding": ClaimForm(ClaimKind.TREND, "the tail crowds at the k-th logit as more targets fall outside Ω_k",
                          measure="the sparse arm's share of C within 0.1 of the k-th logit"),
    "loss": ClaimForm(ClaimKind.TREND, "sparse-softmax loses accuracy in proportion to the share of targets outside Ω_k",
                      measure="Δ accuracy, sparse − softmax"),
    "descriptive": ClaimForm(ClaimKind.DESCRIPTIVE, "which real runs fall inside the prediction band"),
    "explanation": ClaimForm(ClaimKind.NOT_TESTED, "greedy choices inside the crowd favour the most frequent targets"),
}
TRENDS = {  # name -> (y of a level, the claimed sign of the slope against the share of targets outside Ω_k, its unit)
    "crowding": (lambda p: 100 * p["sparse_crowd_share"], +1, "points of C per point of targets outside Ω_k"),
    "loss": (lambda p: 100 * p["accuracy"].delta, -1, "points of Δ accuracy per point of targets outside Ω_k"),
}


def trend(curve: dict[str, Any], name: str) -> dict[str, Any]:
    """A trend claim of :data:`TRENDS` on one cold curve: the least-squares slope of ``name``'s y (the mean over seeds) against
    the softmax arm's share of targets outside Ω_k (%), one point per level, and its verdict (None for one level)."""
    y_of, direction, unit = TRENDS[name]
    pts = curve["points"]
    x, y = tuple(100 * (1 - p["share"]) for p in pts), tuple(y_of(p) for p in pts)
    verdict = trend_verdict(LinearTrend(x, y), [len(p["seeds"]) for p in pts], direction, label=seeds_label(curve["seeds"]),
                            unit=unit) if len(set(x)) > 1 else None
    return {"id": f"sparse-helps-{name}-k{curve['k']}", "shape": "trend", "trend": name, "k": curve["k"], "points": pts,
            "verdict": verdict, "dirty": curve["dirty"]}


def classes_of(record: Record) -> int:
    """C of a real run: its task's class count, else its head's as the record prints it (``num_classes=30522``)."""
    if (n := record.info("num_classes")) is not None:
        return int(n)
    found = re.search(r"num_classes=(\d+)", str(((record.model or {}).get("heads") or {}).get("head")))
    if not found:
        raise ValueError(f"record {record.run_name} names no class count")
    return int(found.group(1))


# The real runs: (key, experiment folder, the metric the page compares, which controlled curve's start they match, which
# of the folder's records belong to the setting). Regime-study starts come one setting per start epoch.
REAL = (
    ("table5", "table5", "test/rouge1_beam1", "cold", lambda r: r.choices.get("start") is None),
    ("table5_init", "table5", "test/rouge1_beam1", "init", lambda r: r.choices.get("start") == "softmax_run"),
    ("table3", "table3", "test/rouge1_beam1", "cold", lambda r: r.choices.get("start") is None),
    ("table3_init", "table3", "test/rouge1_beam1", "init", lambda r: r.choices.get("start") == "softmax_run"),
    ("sparse_regime", "sparse_regime", "test/rouge1_beam1", "init", lambda r: start_epoch(r) is not None),
    *((task, f"fig2_{task}", "test/micro_f1", "cold", lambda r: True) for task in ("iflytek", "wos", "clinc_oos", "finetune_clinc_oos")),
)


def band_at(curve: dict[str, Any], share: float) -> tuple[float, float] | None:
    """The controlled curve's prediction band of Δ log accuracy at ``share``, linear between its levels; None outside them."""
    xs = [b["share"] for b in curve["band"]]
    if not xs or not min(xs) <= share <= max(xs) or any(math.isnan(b["band"][0]) for b in curve["band"]):
        return None
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    x = [xs[i] for i in order]
    return (float(np.interp(share, x, [curve["band"][i]["band"][0] for i in order])),
            float(np.interp(share, x, [curve["band"][i]["band"][1] for i in order])))


def real_runs(results_dir: str | Path, curves: dict[tuple[int, str], dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the real settings placed on the curve, the sparse arms not placed): per setting, the softmax arm's share of test targets
    in Ω_20, Δ log metric paired by seed, the crowd and median rank of each arm, and where it lies against the k=20 band."""
    runs, placed, unplaced = runs_dir(results_dir), [], []
    for key, folder, metric, start, belongs in REAL:
        if not (runs / folder).is_dir():
            continue
        records = [r for r in load_runs(runs, folder) if belongs(r)]
        groups: dict[Any, list[RunRecord]] = {}
        for r in records:
            groups.setdefault(start_epoch(r) if key == "sparse_regime" else None, []).append(r)
        for epoch, group in sorted(groups.items(), key=lambda kv: str((kv[0],))):
            soft = [r for r in group if r.choices.get("loss") == "softmax"]
            sparse = [r for r in group if r.choices.get("loss") == "sparse_softmax"]
            if other := sorted({int(r.option("loss", "k")) for r in sparse} - {DIAL_K}):
                unplaced.append({"key": key, "epoch": epoch, "ks": other})
            sparse = [r for r in sparse if int(r.option("loss", "k")) == DIAL_K]
            if not soft or not sparse or {r.metrics.get("test/diagnostics_k") for r in soft} != {float(DIAL_K)}:
                continue
            log_delta = compare(accuracy_delta(metric, log=True), soft, sparse).delta
            seeds = list(log_delta.seeds)
            pick = [r for r in soft + sparse if r.seed in seeds]
            share = mean([r.metrics["test/target_in_topk"] for r in soft if r.seed in seeds])
            band = band_at(curves[(DIAL_K, start)], share) if (DIAL_K, start) in curves else None
            classes = classes_of(sparse[0])
            arm_mean = {arm: {name: mean([r.metrics[f"test/{m}"] for r in rs if r.seed in seeds])
                              for name, m in (("crowd", "logits_near_kth"), ("rank", "median_target_rank"), ("metric", metric[5:]))}
                        for arm, rs in (("softmax", soft), ("sparse", sparse))}
            placed.append({"key": key, "epoch": epoch, "folder": folder, "metric": metric[5:], "start": start, "share": share,
                           "log_delta": log_delta, "seeds": seeds, "classes": classes, "arms": arm_mean, "band": band,
                           "inside": None if band is None else band[0] <= log_delta.delta <= band[1],
                           "dirty": dirty_note(pick)})
    return placed, unplaced


def figure(curves: list[dict[str, Any]], placed: list[dict[str, Any]], near: float, path: Path) -> None:
    """Three panels against the softmax arm's share of targets in Ω_k: Δ accuracy per curve; the crowd; Δ log metric with the
    k=20 prediction bands and the real runs."""
    fig, axes = pyplot().subplots(1, 3, figsize=(16, 4.8))
    for c in curves:
        x = [100 * p["share"] for p in c["points"]]
        label = str(FIGURE.curve(c["k"], c["start"]))
        d = [p["accuracy"] for p in c["points"]]
        axes[0].errorbar(x, [v.delta for v in d], yerr=[[v.delta - v.low for v in d], [v.high - v.delta for v in d]],
                         marker="o", capsize=3, label=label)
        line = axes[1].plot(x, [100 * p["sparse_crowd_share"] for p in c["points"]], marker="o", label=label)
        if c["start"] == "cold":
            axes[1].plot(x, [100 * p["softmax_crowd_share"] for p in c["points"]], ls=":", color=line[0].get_color(),
                         label=str(FIGURE.softmax_crowd(c["k"])))
        if c["k"] == DIAL_K:
            fill = axes[2].fill_between(x, [b["band"][0] for b in c["band"]], [b["band"][1] for b in c["band"]], alpha=0.2,
                                        label=str(FIGURE.band(c["start"])))
            axes[2].plot(x, [p["log_accuracy"].delta for p in c["points"]], color=fill.get_facecolor()[0][:3], lw=1)
        if c["interval"] and c["k"] == DIAL_K and c["start"] == "cold":
            axes[0].axvspan(100 * c["interval"][0], 100 * c["interval"][1], color="grey", alpha=0.15, label=str(FIGURE.star(c["k"])))
    for p in placed:
        d = p["log_delta"]
        err = None if d.n < 2 else [[d.delta - d.low], [d.high - d.delta]]
        axes[2].errorbar([100 * p["share"]], [d.delta], yerr=err, marker="s" if p["start"] == "init" else "^", capsize=3, ls="none",
                         color="black" if p["start"] == "init" else "tab:red")
        axes[2].annotate(str(FIGURE.real(p["key"], p["epoch"])), (100 * p["share"], d.delta), textcoords="offset points",
                         xytext=(4, 3), fontsize=7)
    for ax, name in zip(axes, ("accuracy", "crowd", "log_metric")):
        if name != "crowd":
            ax.axhline(0.0, color="grey", lw=0.8)
        ax.set(xlabel=str(FIGURE.xlabel()), ylabel=str(FIGURE.ylabel(name, near)), title=str(FIGURE.title(name)))
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    save_figure(fig, path)


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data (``curves`` empty without records): the curves, the crowding trends, the real runs, the claims."""
    runs = runs_dir(results_dir)
    records = load_runs(runs, EXPERIMENT) if (runs / EXPERIMENT).is_dir() else []
    data = {"folder": shown_path(runs / EXPERIMENT), "command": page_command(EXPERIMENT, results_dir), "records": records}
    if not records:
        return data | {"curves": [], "claims": []}
    setting = records[0].setting("setting")
    ks = sorted({k for r in records if (k := r.choices.get("k"))}, key=lambda k: (k != DIAL_K, k))
    curves = [c for k in ks for start in ("cold", "init") if (c := series(records, k, start))["points"]]
    by_key = {(c["k"], c["start"]): c for c in curves}
    trends = [trend(c, name) for name in TRENDS for c in curves if c["start"] == "cold"]
    placed, unplaced = real_runs(results_dir, by_key)
    walls = [r.timing["wall_s"] for r in records]
    cpus = [r.timing.get("cpu_s") for r in records]
    cpu = {"cpu_minutes": sum(cpus) / 60, "cpu_slowest": max(cpus)} if None not in cpus else {}
    thresholds = [c | {"id": f"sparse-helps-threshold-k{c['k']}" + ("-init" if c["start"] == "init" else ""), "shape": "threshold"}
                  for c in curves]
    real_row = {"id": "sparse-helps-real-runs", "shape": "descriptive", "placed": placed, "unplaced": unplaced}
    frequent_row = {"id": "sparse-helps-frequent-choice", "shape": "explanation", "curve": by_key.get((DIAL_K, "cold"))}
    return data | {
        "provenance": provenance(EXPERIMENT, records, results_dir), "setting": setting, "near": records[0].setting("near"),
        "seeds": seeds_of(records), "levels": sorted({r.choices.get("level") for r in records}), "runs": len(records),
        "minutes": sum(walls) / 60, "slowest": max(walls), **cpu,
        "study_args": sorted({" ".join(a for a in shlex.split(r.command)[3:] if not a.startswith("out=")) for r in records}),
        "threads": sorted({r.setting("torch_threads") for r in records}), "curves": curves, "trends": trends,
        "placed": placed, "unplaced": unplaced, "dial_k": DIAL_K, "min_seeds": MIN_SEEDS,
        "claims": [c | {"source": EXPERIMENT, "form": FORMS[c["trend"] if c["shape"] == "trend" else c["shape"]]}
                   for c in (*thresholds, *trends, real_row, frequent_row)],
    }


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write ``<out>/sparse_helps.md`` (+ ``sparse_helps.png`` when there are records) and its claims rows."""
    data = summarise(results_dir)
    if data["curves"]:
        figure(data["curves"], data["placed"], data["near"], Path(out or results_dir) / f"{EXPERIMENT}.png")
    publish(out or results_dir, EXPERIMENT, data)
