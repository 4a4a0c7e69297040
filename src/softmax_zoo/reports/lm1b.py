"""One Billion Word head comparison (Grave et al. 2017): results/lm1b.md, results/lm1b.png, claims (``make reproduce-lm1b``).

The same LSTM trained for the same steps with the full, adaptive and sampled softmax (quadratic and uniform
samplers, same m): validation and test perplexity of each head's own normalised distribution (full softmax for
the sampled heads) and the speed-up over the full softmax, from the side-by-side measurement of the heads'
training steps (:mod:`softmax_zoo.studies.lm_speed`, :data:`SPEED_FILE`) when it was made at the records' scale
and size, else from the runs' own tokens/second. Perplexities are compared on their logs, paired by seed
(:data:`PAIRING`; Student-t over seeds); "close to the full softmax" is two-sided, a TOST against a stated
margin. Records of another model (``make reproduce-lm1b-transformer``) get a table of their own; the speed
measurement, the verdicts and the claims rows are the LSTM's. Words: templates/lm1b.md.j2.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..losses.registry import variant_label
from ..records import choice, get, load_records, runs_dir
from ._compare import Comparison, Design, compare_values
from ._pages import commits, dirty_note, file_commit, line_plot, page_command, shown_path
from ._render import publish
from ._settings import joined
from ._stats import DeltaInterval, Equivalence, EquivalenceKind, equivalence, mean, paired_t, seeds_label
from ._verdicts import MIN_SEEDS, VerdictKind, equivalence_verdict

EXPERIMENT = "lm1b"
# Numbers quoted for Grave et al. 2017 on One Billion Word. Neither the abstract we hold nor the README of the
# authors' repository (facebookresearch/adaptive-softmax) states them: the page and the ledger mark them unverified.
PAPER = {
    "adaptive_1layer_test_ppl": 43.9,  # quoted for one LSTM-2048 layer
    "adaptive_2layer_test_ppl": 39.8,
    "speedup": "2-10x",
}
CLOSE_RATIO = 1.10  # "close to that of the full softmax", two-sided: test perplexity ratio within (1/1.10, 1.10)
CLOSE_MARGIN_SOURCE = "ours: the abstract gives no number for \"close\"; 10% either way"
# Why the heads' runs are paired by seed: transformers.set_seed(seed) precedes the model's construction, which draws
# the embedding and the LSTM before the head (models/lstm_lm.py), and LMStream reads the training files in order.
PAIRING = ("paired by seed: a seed gives every head the same embedding and LSTM initialisation (drawn before the head), "
           "and every run reads the same training stream in the same order")
SPEEDUP_TARGET = 3.0  # the project's CPU target: an adaptive step >= 3x faster than full softmax, min_count 1
SPEED_FILE = "diagnostics/lm1b_speed.json"  # written by python -m softmax_zoo.studies.lm_speed
# Full against adaptive softmax time at several class counts: scripts/bench_cases/adaptive.py's VOCAB_GROUP groups,
# written by VOCAB_COMMAND
VOCAB_GROUP = "adaptive softmax vs full softmax: time vs C"
VOCAB_COMMAND = 'python scripts/bench_losses.py --only "full softmax: time vs C"'
VOCAB_BENCH = "bench_losses_cpu_full-softmax--time-vs-c.json"  # under results_dir
LSTM = "lstm_lm"  # the task's own model: the head comparison that the speed measurement and the claims are about
MAKE_TARGETS = {LSTM: "make reproduce-lm1b", "transformer_lm": "make reproduce-lm1b-transformer"}


def model_of(record: dict[str, Any]) -> str:
    """The record's model choice (the task's LSTM for a record that keeps none)."""
    return get(record, "choices.model") or LSTM


def by_model(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Model choice -> its records, the LSTM first."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: model_of(r) != LSTM):
        out.setdefault(model_of(r), []).append(r)
    return out


def head_label(record: dict[str, Any]) -> str:
    """"softmax", "adaptive", "sampled (quadratic, m=64)", ...: the registered label of the record's loss."""
    return variant_label(choice(record, "loss"), get(record, "config.loss"), record.get("choices"))


def summarize(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per head: metric lists over seeds, and the validation curve of each run."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        s = out.setdefault(head_label(r), {"seeds": [], "val": [], "test": [], "tps": [], "train_s": [], "tokens": [], "curves": [],
                                           "curve_tokens": []})
        m = r["metrics"]
        s["seeds"].append(r["seed"])
        s["val"].append(m.get("val/perplexity", math.nan))
        s["test"].append(m.get("test/perplexity", math.nan))
        s["tps"].append(m.get("train/tokens_per_second", math.nan))
        s["train_s"].append(r["timing"]["train_s"])
        s["tokens"].append(m.get("train/tokens", math.nan))
        curve = [(h["train/tokens"], h["val/curve_perplexity"]) for h in r.get("history", []) if "val/curve_perplexity" in h]
        s["curves"].append(curve)  # (training tokens, validation perplexity) points
        s["curve_tokens"] += [h["val/curve_tokens"] for h in r.get("history", []) if "val/curve_tokens" in h][:1]
    return out


def side_by_side(results_dir: str | Path, records: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The side-by-side speed measurement if it matches the records, and where the speed-up comes from.

    The measurement is used when ``<results_dir>/diagnostics/lm1b_speed.json`` exists and its scale,
    embedding and LSTM sizes are the records'; otherwise the speed-up is the ratio of the runs' own
    throughputs. Returns (the measurement, with ``code``: the commit it names (:func:`._pages.file_commit`), or None;
    ``{"file", "found", "theirs", "ours"}``).
    """
    path = Path(results_dir) / SPEED_FILE
    source: dict[str, Any] = {"file": SPEED_FILE, "found": path.is_file(), "theirs": None, "ours": None}
    if not path.is_file():
        return None, source
    measured = json.loads(path.read_text(encoding="utf-8"))
    st = measured["settings"]
    ours = {(get(r, "choices.scale"), get(r, "config.model.embedding_dim"), get(r, "config.model.hidden_size")) for r in records}
    theirs = (st["scale"], st["embedding_dim"], st["hidden_size"])
    if ours != {theirs}:
        return None, source | {"theirs": theirs, "ours": sorted(ours, key=str)}
    return measured | {"code": file_commit(measured)}, source


def speedups(summary: dict[str, dict[str, Any]], measured: dict[str, Any] | None = None) -> dict[str, float]:
    """Tokens/second of each head over the full softmax's (nan where a head or the softmax is missing).

    From the side-by-side measurement when given (:func:`side_by_side`), else from the runs' records.
    """
    if measured is not None:
        tps = step_tokens_per_second(measured)
        base = tps.get("softmax", math.nan)
        return {head: tps.get(head, math.nan) / base for head in summary}
    base = mean(summary["softmax"]["tps"]) if "softmax" in summary else math.nan
    return {head: mean(s["tps"]) / base for head, s in summary.items()}


def step_tokens_per_second(measured: dict[str, Any]) -> dict[str, float]:
    """Head label -> the side-by-side measurement's tokens/second of its training step."""
    return {head_label(row): row["tokens_per_s"] for row in measured["rows"]}


def head_rows(summary: dict[str, dict[str, Any]], measured: dict[str, Any] | None = None,
              lstm: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The table's rows, softmax first: per head its perplexities over seeds, speed (side by side when
    ``measured``), minutes and tokens; with ``lstm`` (another model's table) the LSTM's test perplexity of the head."""
    speed = speedups(summary, measured)
    step_tps = step_tokens_per_second(measured) if measured is not None else {}
    return [{"head": head, "val": s["val"], "test": s["test"], "step_tps": step_tps.get(head, math.nan), "speed": speed[head],
             "run_tps": mean(s["tps"]), "train_min": mean(s["train_s"]) / 60, "tokens": mean(s["tokens"]),
             "lstm_test": mean(lstm[head]["test"]) if lstm and head in lstm else None}
            for head, s in sorted(summary.items(), key=lambda kv: (kv[0] != "softmax", kv[0]))]


LINESTYLES = ("-", "--", ":", "-.")  # one per model, in by_model's order


def plot(summaries: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    """Validation curves of every run: one colour per head, one line style per model."""
    heads = sorted({head for summary in summaries.values() for head in summary})
    sizes = sorted({n for summary in summaries.values() for s in summary.values() for n in s["curve_tokens"]})
    on = f"first {sizes[0]:,} validation tokens" if len(sizes) == 1 else "a validation prefix"
    with line_plot(path, xlabel="training tokens (the same budget for every head)", ylabel=f"validation perplexity ({on})",
                   title="One Billion Word subset: validation perplexity vs training tokens", legend_outside=True) as ax:
        for style, (model, summary) in zip(LINESTYLES, summaries.items()):
            for head, s in sorted(summary.items()):
                label = head if model == LSTM else f"{head}, {model}"
                for i, curve in enumerate(s["curves"]):
                    if curve:
                        xs, ys = zip(*curve)
                        ax.plot(xs, ys, marker=".", linestyle=style, color=f"C{heads.index(head)}",
                                label=label if i == 0 else None)
        ax.set_yscale("log")


BUDGET_KEYS = ("config.train.max_steps", "config.train.batch_size", "config.task.bptt")  # what fixes the training tokens


def log_ppl(summary: dict[str, dict[str, Any]], head: str) -> dict[int, float]:
    """seed -> log test perplexity of ``head``."""
    return dict(zip(summary[head]["seeds"], map(math.log, summary[head]["test"])))


def few_seeds(seeds: list[int]) -> VerdictKind | None:
    """SINGLE_RUN / TOO_FEW_SEEDS below :data:`MIN_SEEDS` seeds, else None."""
    if len(seeds) >= MIN_SEEDS:
        return None
    return VerdictKind.SINGLE_RUN if len(seeds) == 1 else VerdictKind.TOO_FEW_SEEDS


def closeness(summary: dict[str, dict[str, Any]], seeds: list[int], speed: float, ratio: float) -> dict[str, Any]:
    """"Accuracy close to that of the full softmax", two-sided: TOST (:func:`._stats.equivalence`) of Δ = log test ppl
    (adaptive) − log test ppl (softmax), paired by seed (:data:`PAIRING`), against the margin ±ln :data:`CLOSE_RATIO`
    (:data:`CLOSE_MARGIN_SOURCE`). The speed-up is reported beside it, without a threshold or a verdict."""
    adaptive, softmax = ({s: v for s, v in log_ppl(summary, h).items() if s in seeds} for h in ("adaptive", "softmax"))
    delta = paired_t(adaptive, softmax)
    result = equivalence(delta, math.log(CLOSE_RATIO), CLOSE_MARGIN_SOURCE)
    exp = lambda interval: tuple(math.exp(x) for x in interval)  # noqa: E731  (log ratio -> ratio)
    return {"seeds": seeds, "speed": speed, "ratio": ratio, "delta": delta, "test": result, "tost": exp(result.tost_interval),
            "interval": exp(result.interval), "margin": (1 / CLOSE_RATIO, CLOSE_RATIO), "p": result.p_value,
            "verdict": equivalence_verdict(result, seeds_label(seeds), closeness_span(delta, result))}


def closeness_span(delta: DeltaInterval, result: Equivalence) -> str:
    """The verdict cell's numbers: the ratio, its TOST and two-sided intervals, the margin with its source, the method."""
    r = lambda x: f"{math.exp(x):.3f}"  # noqa: E731
    (tlo, thi), (lo, hi) = result.tost_interval, result.interval
    side = ("" if result.verdict is not EquivalenceKind.NOT_EQUIVALENT else
            "; adaptive's perplexity lies below the margin, lower rather than close" if hi <= -result.margin else
            "; adaptive's perplexity lies above the margin")
    return (f"test ppl ratio adaptive / full {r(delta.delta)}x, {100 * (1 - 2 * result.alpha):g}% interval [{r(tlo)}, {r(thi)}]x, "
            f"{100 * (1 - result.alpha):g}% [{r(lo)}, {r(hi)}]x, against the margin ({1 / CLOSE_RATIO:.3f}, {CLOSE_RATIO:.2f})x "
            f"({result.margin_source}); {result.method}, TOST p = {result.p_value:.2g}{side}")


def approximations(summary: dict[str, dict[str, Any]], speed: dict[str, float]) -> dict[str, Any] | None:
    """Adaptive against our standard approximations (the sampled heads): per head how much faster adaptive is and how
    much higher the head's test perplexity is, and from 3 seeds each head's verdict on log test perplexity (paired by
    seed, :data:`PAIRING`)."""
    sampled = sorted(h for h in summary if h.startswith("sampled"))
    if not sampled:
        return None
    seeds = sorted(set(summary["adaptive"]["seeds"]).intersection(*(summary[h]["seeds"] for h in sampled)))
    per_head = {h: {"faster": speed["adaptive"] / speed[h], "worse": mean(summary[h]["test"]) / mean(summary["adaptive"]["test"])}
                for h in sampled}
    out = {"heads": per_head, "seeds": seeds, "n": len(sampled), "kind": few_seeds(seeds), "verdicts": {},
           "faster": sum(p["faster"] > 1 for p in per_head.values()), "lower": sum(p["worse"] > 1 for p in per_head.values())}
    if out["kind"] is None:
        out["verdicts"] = {h: compare_values(Comparison("adaptive", h, "log test ppl", Design.PAIRED_BY_SEED),
                                             log_ppl(summary, "adaptive"), log_ppl(summary, h)).verdict(direction=+1) for h in sampled}
        kinds = {v.kind for v in out["verdicts"].values()}
        out["kind"] = (VerdictKind.CONTRADICTS if VerdictKind.CONTRADICTS in kinds else
                       VerdictKind.SUPPORTED if kinds == {VerdictKind.SUPPORTED} and out["faster"] == len(sampled) else
                       VerdictKind.INCONCLUSIVE)
    return out


def model_section(model: str, records: list[dict[str, Any]], lstm_records: list[dict[str, Any]]) -> dict[str, Any]:
    """A model other than the LSTM: its description, seeds, rows beside the LSTM's test perplexity, ratios to the LSTM."""
    lstm, summary = summarize(lstm_records), summarize(records)
    first = min(records, key=lambda r: head_label(r) != "softmax")  # the softmax run's parameter count if there is one
    m, lstm0 = get(first, "config.model"), lstm_records[0]
    return {
        "model": model, "command": MAKE_TARGETS.get(model, f"python -m softmax_zoo.train -m experiment=... model={model}"),
        "seeds": sorted({r["seed"] for r in records}), "rows": head_rows(summary, lstm=lstm),
        "transformer": model == "transformer_lm", "m": m, "head": head_label(first), "parameters": first["task_info"].get("parameters"),
        "bptt": get(first, "config.task.bptt"), "same_width": m["hidden_size"] == get(lstm0, "config.model.hidden_size"),
        "budget": [get(first, k) for k in BUDGET_KEYS], "lstm_budget": [get(lstm0, k) for k in BUDGET_KEYS],
        "ratios": {h: mean(s["test"]) / mean(lstm[h]["test"]) for h, s in sorted(summary.items()) if h in lstm},
        "adaptive_ratio": (mean(summary["adaptive"]["test"]) / mean(summary["softmax"]["test"])
                           if "softmax" in summary and "adaptive" in summary else None),
    }


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the LSTM runs' setting, rows, speed source, decisions, other models' sections, claims."""
    runs = runs_dir(results_dir)
    records = load_records(runs, EXPERIMENT)
    if not records:
        raise FileNotFoundError(f"no records in {runs / EXPERIMENT}; run `make reproduce-lm1b` first")
    origin = commits(records)
    models = by_model(records)
    records = models.pop(LSTM, [])
    if not records:
        raise FileNotFoundError(f"no LSTM records in {runs / EXPERIMENT}; run `make reproduce-lm1b` first")
    summary = summarize(records)
    measured, source = side_by_side(results_dir, records)
    r0 = records[0]
    data = {
        "make": MAKE_TARGETS[LSTM], "folder": shown_path(runs / EXPERIMENT), "commits": origin,
        "command": page_command(EXPERIMENT, results_dir),
        "facts": {k.rsplit(".", 1)[-1]: get(r0, k) for k in (
            "task_info.vocab_size", "task_info.min_count", "config.model.hidden_size", "config.model.embedding_dim", "config.task.bptt",
            "config.train.batch_size", "config.train.optim", "config.train.lr", "config.train.max_grad_norm", "timing.global_steps")},
        "measured": measured, "source": source, "quoted": PAPER, "pairing": PAIRING, "close": (1 / CLOSE_RATIO, CLOSE_RATIO),
        "vocab": vocab_timing(results_dir),
        "cutoffs": joined([r for r in records if head_label(r) == "adaptive"], "config.loss.cutoffs"),
        "div": joined(records, "config.loss.div_value"), "m": joined([r for r in records if head_label(r).startswith("sampled")],
                                                                      "config.loss.num_samples"),
        "seeds": sorted({r["seed"] for r in records}), "rows": head_rows(summary, measured),
        "summaries": {LSTM: summary, **{model: summarize(rs) for model, rs in models.items()}},
        "sections": [model_section(model, rs, records) for model, rs in models.items()], "decided": None,
    }
    if "softmax" in summary and "adaptive" in summary:
        speed = speedups(summary, measured)
        seeds = sorted(set(summary["softmax"]["seeds"]) & set(summary["adaptive"]["seeds"]))
        data["decided"] = {
            "speed": speed, "trade_off": closeness(summary, seeds, speed["adaptive"],
                                                   mean(summary["adaptive"]["test"]) / mean(summary["softmax"]["test"])),
            "tokens": mean(summary["adaptive"]["tokens"]), "approximations": approximations(summary, speed),
            "sampled": {h: mean(summary[h]["test"]) / mean(summary["softmax"]["test"]) for h in sorted(summary) if h.startswith("sampled")},
            "adaptive_test": mean(summary["adaptive"]["test"]), "met": speed["adaptive"] >= SPEEDUP_TARGET,
        }
        kernel = [[v for h, v in speed.items() if h.startswith(f"sampled ({name}")] for name in ("quadratic", "uniform")]
        data["decided"]["kernel"] = (kernel[0][0], kernel[1][0]) if all(kernel) and not math.isnan(kernel[0][0] / kernel[1][0]) else None
    ids, behind = [], {}  # behind: a decided row's id -> the records (or the speed measurement) its numbers come from
    if data["decided"]:
        ids = (["lm1b-adaptive-speed-ppl", "lm1b-cpu-speedup-3x"]
               + ["lm1b-adaptive-vs-approximations"] * bool(data["decided"]["approximations"]))
        ids.append("lm1b-adaptive-43.9")
        pair = runs_of(records, ("softmax", "adaptive"), seeds)
        behind = {"lm1b-adaptive-speed-ppl": pair, "lm1b-cpu-speedup-3x": [measured] if measured else pair}
        if a := data["decided"]["approximations"]:
            behind["lm1b-adaptive-vs-approximations"] = runs_of(records, ("adaptive", *a["heads"]), a["seeds"])
    ids += ["lm1b-adaptive-gpu", "lm1b-adaptive-cutoffs", "lm1b-europarl", "lm1b-vocabulary-cost"]
    data["claims"] = [{"id": i, "source": EXPERIMENT, "dirty": dirty_note(behind.get(i, []))} for i in ids]
    return data


def runs_of(records: list[dict[str, Any]], heads: tuple[str, ...], seeds: list[int]) -> list[dict[str, Any]]:
    """The records of ``heads`` at ``seeds``."""
    return [r for r in records if head_label(r) in heads and r["seed"] in seeds]


def vocab_timing(results_dir: str | Path) -> dict[str, Any]:
    """The full and adaptive softmax's forward + backward time per class count C, from :data:`VOCAB_BENCH`
    (``{"file", "command", "rows": [(C, full ms, adaptive ms)], "growth"}``; no rows when it was not run).

    ``growth``: from the smallest C to the largest, the factor of C and of each head's time.
    """
    out: dict[str, Any] = {"file": f"results/{VOCAB_BENCH}", "command": VOCAB_COMMAND, "rows": [], "growth": None}
    path = Path(results_dir) / VOCAB_BENCH
    if not path.is_file():
        return out
    report = json.loads(path.read_text(encoding="utf-8"))
    for group in (g for g in report["groups"] if g["title"].startswith(VOCAB_GROUP)):
        c = int(re.search(r"C=([\d,]+)", group["title"]).group(1).replace(",", ""))
        ms = {row["variant"]: row["ms"] for row in group["rows"]}
        out["rows"].append((c, ms["SoftmaxHead (full softmax)"], ms["AdaptiveSoftmaxHead"]))
    out["rows"].sort()
    if len(out["rows"]) >= 2:
        (c0, f0, a0), (c1, f1, a1) = out["rows"][0], out["rows"][-1]
        out["growth"] = (c1 / c0, f1 / f0, a1 / a0)
    out["date"], out["machine"] = report.get("date"), report.get("machine")
    return out


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write lm1b.md, lm1b.png and the lm1b rows of claims.md into ``out`` (default ``results_dir``)."""
    data = summarise(results_dir)
    out = Path(out or results_dir)
    plot(data["summaries"], out / "lm1b.png")
    publish(out, EXPERIMENT, data)
