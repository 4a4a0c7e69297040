"""One Billion Word head comparison (Grave et al. 2017): results/lm1b.md, results/lm1b.png, claims (``make reproduce-lm1b``).

The same LSTM trained for the same steps with the full, adaptive and sampled softmax: test perplexity of each head's
normalised distribution, and the speed-up over the full softmax from the side-by-side measurement of the heads'
training steps (_lm1b_heads.SPEED_FILE) when it was made at the records' size, else from the runs' own tokens/second.
"Close to the full softmax" is a TOST on log test perplexity, paired by seed. Records of another model get a table
of their own; the speed measurement, the verdicts and the claims rows are the LSTM's. The table of heads is
built in _lm1b_heads.py. Words: templates/lm1b.md.j2.

The rows come from :data:`RECORDS` (the cpu scale regularised as the paper scale: dropout, min_count 3, each head
evaluated at its checkpoint of lowest validation perplexity); a model with no records there is shown from
:data:`EARLIER` (the earlier cpu settings), beside the LSTM runs of those settings. Every head at or above a uniform
guess's test perplexity (perplexity >= V, :func:`trivial`) is flagged, so is every head at or above the unigram
frequency predictor's (:func:`unigram_floor`), and the uniform sampler's arms are an ablation (:func:`ablation`):
flagged, and not among the "standard approximations" adaptive is compared with.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from ..records import runs_dir, seeds_of
from ..run_record import RunRecord, below, load_runs
from . import sampled_uniform as uniform_check
from ._compare import Comparison, Design, compare_values
from ._forms import ClaimForm, ClaimKind
from ._lm1b_heads import (
    ADAPTIVE,
    SAMPLED,
    SOFTMAX,
    Head,
    ablation,
    below_floor,
    head_of,
    head_rows,
    per_head,
    side_by_side,
    speedups,
    trivial,
    unigram_floor,
)
from ._pages import bench_group, commits, dirty_note, line_plot, page_command, publish, shown_path, template_words
from ._regime import TRIVIAL, failures, gated
from ._settings import joined
from ._stats import mean
from ._verdicts import VerdictKind, too_few

EXPERIMENT = "lm1b"  # the page, its claims and README's status row
RECORDS = "lm1b_regularised"  # the rows' records: configs/experiment/_lm1b.yaml's experiment_name
EARLIER = "lm1b"  # the records of the earlier cpu settings (min_count 1, no dropout, the last weights evaluated)
DIAGNOSTIC = f"{uniform_check.PAGE}.md"  # beside this page: why uniform q ends near a uniform guess
HEADLINES = {RECORDS: "lm1b-adaptive-speed-ppl"}  # README.md's status table: the row heading the records of the rows
CLOSE_RATIO = 1.10  # "close to that of the full softmax": adaptive's test perplexity at most 1.10x the full softmax's
CLOSE = Comparison("softmax", "adaptive", "log test ppl", Design.PAIRED_BY_SEED, margin=math.log(CLOSE_RATIO),
                   margin_source="ours: the abstract gives no number for \"close\"; 10% worse", better="lower")
# "At no cost in accuracy" (the introduction): the same margin, its own source
NO_COST_SOURCE = "ours: the paper gives no number for \"no cost\" in the parts we could read; 10% worse"
FORMS = {  # each ledger row's form (reports/_forms.py), by id
    "lm1b-adaptive-speed-ppl": ClaimForm(
        ClaimKind.NON_INFERIORITY, "achieving an accuracy close to that of the full softmax",
        measure="log test ppl, adaptive − full softmax", better="lower", margin=CLOSE.margin,
        margin_source=CLOSE.margin_source),
    "lm1b-no-cost-in-accuracy": ClaimForm(
        ClaimKind.NON_INFERIORITY, "at no cost in accuracy for a given amount of training data",
        measure="log test ppl at equal training steps, adaptive − full softmax", better="lower", margin=CLOSE.margin,
        margin_source=NO_COST_SOURCE),
    "lm1b-cpu-speedup-3x": ClaimForm(ClaimKind.DESCRIPTIVE, ">= 3x faster", measure="training step tokens/s ratio"),
    "lm1b-adaptive-43.9": ClaimForm(ClaimKind.NOT_TESTED, "43.9 test perplexity"),
    "lm1b-adaptive-gpu": ClaimForm(ClaimKind.NOT_TESTED, "particularly suited for graphical processing units"),
    "lm1b-adaptive-cutoffs": ClaimForm(ClaimKind.NOT_TESTED, "clusters that explicitly minimize the expectation of computation time"),
    "lm1b-europarl": ClaimForm(ClaimKind.NOT_TESTED, "EuroParl"),
    "lm1b-vocabulary-cost": ClaimForm(ClaimKind.DESCRIPTIVE, "circumvents the linear dependency on the vocabulary size",
                                      measure="forward + backward time against C"),
}
SPEEDUP_TARGET = 3.0  # the project's CPU target: an adaptive step >= 3x faster than full softmax, at TARGET_MIN_COUNT
TARGET_MIN_COUNT = 1  # the target's vocabulary: every training word
# Full against adaptive softmax time at several class counts: scripts/bench_cases/adaptive.py's VOCAB_GROUP groups
VOCAB_GROUP = "adaptive softmax vs full softmax: time vs C"
VOCAB_COMMAND = 'python scripts/bench_losses.py --only "full softmax: time vs C"'
VOCAB_BENCH = "bench_losses_cpu_full-softmax--time-vs-c.json"  # under results_dir
LSTM = "lstm_lm"  # the task's own model: the head comparison that the speed measurement and the claims are about
MAKE_TARGETS = {LSTM: "make reproduce-lm1b", "transformer_lm": "make reproduce-lm1b-transformer"}
BUDGET = (("train", "max_steps"), ("train", "batch_size"), ("task", "bptt"))  # the settings that fix the training tokens
LINESTYLES = ("-", "--", ":", "-.")  # one per model, the LSTM first
FIGURE = template_words("_lm_figures.j2")  # lm1b.png's words


def plot(summaries: dict[str, dict[Head, dict[str, Any]]], path: Path) -> None:
    """Validation curves of every run: one colour per head, one line style per model."""
    heads = sorted({head for summary in summaries.values() for head in summary})
    sizes = sorted({n for summary in summaries.values() for s in summary.values() for n in s["curve_tokens"]})
    with line_plot(path, **FIGURE.lm1b, ylabel=str(FIGURE.lm1b_ylabel(sizes)), legend_outside=True) as ax:
        for style, (model, summary) in zip(LINESTYLES, summaries.items()):
            for head, s in sorted(summary.items()):
                for i, curve in enumerate(c for c in s["curves"] if c):
                    ax.plot(*zip(*curve), marker=".", linestyle=style, color=f"C{heads.index(head)}",
                            label=str(FIGURE.run(head.label, model if model != LSTM else None)) if i == 0 else None)
        ax.set_yscale("log")


def closeness(summary: dict[Head, dict[str, Any]], speed: float, ratio: float) -> dict[str, Any]:
    """"Accuracy close to that of the full softmax", non-inferiority (:data:`CLOSE`): Δ = log test ppl (adaptive) − log
    test ppl (softmax), paired by seed, no more than log 1.10 worse; the speed-up beside it, without a verdict."""
    softmax, adaptive = (dict(zip(summary[h]["seeds"], map(math.log, summary[h]["test"]))) for h in (SOFTMAX, ADAPTIVE))
    compared = compare_values(CLOSE, softmax, adaptive)
    decided = compared.verdict()
    exp = lambda interval: tuple(math.exp(x) for x in interval)  # noqa: E731  (log ratio -> ratio)
    return {"seeds": list(compared.delta.seeds), "speed": speed, "ratio": ratio, "geo": math.exp(compared.delta.delta),
            "one_sided": exp(decided.data["interval"]), "interval": exp(compared.delta.interval), "margin": CLOSE_RATIO,
            "verdict": decided, "kind": decided.kind}


def approximations(summary: dict[Head, dict[str, Any]], speed: dict[str, float],
                   floor: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Adaptive against the sampled heads that are baselines (the ablations left out, :func:`ablation`): per head how much
    faster adaptive is, how much higher the head's test perplexity is and whether it is :func:`trivial`, and from 3 seeds
    each head's verdict on log test perplexity (paired by seed)."""
    sampled = sorted(h for h in summary if h.loss == SAMPLED and not ablation(h))
    if not sampled:
        return None
    seeds = sorted(set(summary[ADAPTIVE]["seeds"]).intersection(*(summary[h]["seeds"] for h in sampled)))
    each = {h: {"faster": speed[ADAPTIVE] / speed[h], "worse": mean(summary[h]["test"]) / mean(summary[ADAPTIVE]["test"]),
                    "trivial": trivial(mean(summary[h]["test"]), summary[h]["vocab"]),
                    "below_floor": below_floor(mean(summary[h]["test"]), floor)} for h in sampled}
    out = {"heads": each, "seeds": seeds, "n": len(sampled), "kind": too_few(len(seeds)), "verdicts": {},
           "ablations": sorted(h for h in summary if ablation(h)),
           "faster": sum(p["faster"] > 1 for p in each.values()), "lower": sum(p["worse"] > 1 for p in each.values())}
    if out["kind"] is None:
        log_ppl = {h: dict(zip(summary[h]["seeds"], map(math.log, summary[h]["test"]))) for h in (ADAPTIVE, *sampled)}
        trivial_ppl = min(summary[ADAPTIVE]["vocab"], floor["test"] if floor else math.inf)  # the best trivial predictor
        out["verdicts"] = {h: gated(compare_values(Comparison("adaptive", h.label, "log test ppl", Design.PAIRED_BY_SEED),
                                                   log_ppl[ADAPTIVE], log_ppl[h]).verdict(direction=+1),
                                    failures(TRIVIAL, {h.label: mean(summary[h]["test"]) / trivial_ppl})) for h in sampled}
        kinds = {v.kind for v in out["verdicts"].values()}
        out["kind"] = next((k for k in (VerdictKind.CONTRADICTS, VerdictKind.NOT_COMPARABLE, VerdictKind.INCONCLUSIVE) if k in kinds),
                           VerdictKind.SUPPORTED if out["faster"] == len(sampled) else VerdictKind.INCONCLUSIVE)
    return out


def model_section(model: str, records: list[RunRecord], lstm_records: list[RunRecord], earlier: bool = False) -> dict[str, Any]:
    """A model other than the LSTM: its description, seeds, rows beside the LSTM's test perplexity (``lstm_records``, of
    the same settings), ratios to the LSTM; ``earlier``: its records are :data:`EARLIER`'s."""
    lstm, summary = per_head(lstm_records), per_head(records)
    first = min(records, key=lambda r: head_of(r) != SOFTMAX)  # the softmax run's parameter count if there is one
    m, lstm0 = first.setting("model"), lstm_records[0]
    return {
        "model": model, "command": MAKE_TARGETS.get(model), "earlier": earlier, "commits": commits(records),
        "vocab": first.info("vocab_size"), "min_count": first.info("min_count"),
        "seeds": seeds_of(records), "rows": head_rows(summary, lstm=lstm),
        "transformer": model == "transformer_lm", "m": m, "head": head_of(first), "parameters": first.info("parameters"),
        "bptt": first.setting("task", "bptt"), "same_width": m["hidden_size"] == lstm0.setting("model", "hidden_size"),
        "budget": [first.setting(*k) for k in BUDGET], "lstm_budget": [lstm0.setting(*k) for k in BUDGET],
        "ratios": {h: mean(s["test"]) / mean(lstm[h]["test"]) for h, s in sorted(summary.items()) if h in lstm},
        "adaptive_ratio": (mean(summary[ADAPTIVE]["test"]) / mean(summary[SOFTMAX]["test"])
                           if SOFTMAX in summary and ADAPTIVE in summary else None),
    }


def decided(summary: dict[Head, dict[str, Any]], measured: dict[str, Any] | None, min_count: int | None = None,
            floor: dict[str, Any] | None = None) -> dict[str, Any]:
    """The LSTM's comparisons: speed-ups, the "close" test, adaptive against the sampled heads, the kernel sampler's cost."""
    speed, test = speedups(summary, measured), {h: mean(s["test"]) for h, s in summary.items()}
    kernel = [[v for h, v in speed.items() if h.loss == SAMPLED and h.sampler == name] for name in ("quadratic", "uniform")]
    return {"speed": speed, "trade_off": closeness(summary, speed[ADAPTIVE], test[ADAPTIVE] / test[SOFTMAX]),
            "tokens": mean(summary[ADAPTIVE]["tokens"]), "approximations": approximations(summary, speed, floor),
            "sampled": {h: test[h] / test[SOFTMAX] for h in sorted(summary) if h.loss == SAMPLED},
            "adaptive_test": test[ADAPTIVE], "met": speed[ADAPTIVE] >= SPEEDUP_TARGET,
            "target_setting": min_count in (None, TARGET_MIN_COUNT), "target_min_count": TARGET_MIN_COUNT,
            "kernel": (kernel[0][0], kernel[1][0]) if all(kernel) and not math.isnan(kernel[0][0] / kernel[1][0]) else None}


def claims(records: list[RunRecord], decision: dict[str, Any] | None, measured: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The ledger's rows, each with the dirty note of the records (or the speed measurement) its numbers come from."""
    behind: dict[str, list[RunRecord | dict[str, Any]]] = {}  # a decided row -> the records (or measurement) behind its numbers
    a = decision and decision["approximations"]
    if decision:
        pair = runs_of(records, (SOFTMAX, ADAPTIVE), decision["trade_off"]["seeds"])
        behind = {"lm1b-adaptive-speed-ppl": pair, "lm1b-no-cost-in-accuracy": pair,
                  "lm1b-cpu-speedup-3x": [measured] if measured else pair}
        if a:
            behind["lm1b-adaptive-vs-approximations"] = runs_of(records, (ADAPTIVE, *a["heads"]), a["seeds"])
    ids = [*behind, *["lm1b-adaptive-43.9"] * bool(decision), "lm1b-adaptive-gpu", "lm1b-adaptive-cutoffs", "lm1b-europarl",
           "lm1b-vocabulary-cost"]
    forms = FORMS | ({"lm1b-adaptive-vs-approximations": approximations_form(sorted(a["heads"]))} if decision and a else {})
    return [{"id": i, "source": EXPERIMENT, "dirty": dirty_note(behind.get(i, [])), "form": forms[i]} for i in ids]


def approximations_form(heads: list[Head]) -> ClaimForm:
    """"A large gain … over standard approximations": adaptive beats every sampled head that is a baseline (the members
    named by their labels, as the ledger words them)."""
    return ClaimForm(ClaimKind.EVERY_MEMBER, "a large gain in efficiency over standard approximations", measure="log test ppl",
                     better="lower", members=[h.label for h in heads],
                     rule="every sampled head that is a baseline (the ablations left out)")


def runs_of(records: list[RunRecord], heads: tuple[Head, ...], seeds: list[int]) -> list[RunRecord]:
    """The records of ``heads`` at ``seeds``."""
    return [r for r in records if head_of(r) in heads and r.seed in seeds]


def by_model(records: list[RunRecord]) -> tuple[list[RunRecord], dict[str, list[RunRecord]]]:
    """(the LSTM's records, every other model's by name); a record that keeps no model ran the LSTM."""
    others: dict[str, list[RunRecord]] = {}
    for r in records:
        if (model := r.choices.get("model")) not in (None, LSTM):
            others.setdefault(model, []).append(r)
    return [r for r in records if r.choices.get("model") in (None, LSTM)], others


def facts(r: RunRecord) -> dict[str, Any]:
    """The setting of one LSTM run as the page states it: vocabulary, sizes, data and training budget."""
    return {"vocab_size": r.info("vocab_size"), "min_count": r.info("min_count"), "unk_train_tokens": r.info("unk_train_tokens"),
            "hidden_size": r.setting("model", "hidden_size"), "embedding_dim": r.setting("model", "embedding_dim"),
            "bptt": r.setting("task", "bptt"), "tokens_with_eos": below(r.data, ("splits", "train", "tokens_with_eos")),
            **{key: r.setting("train", key) for key in ("batch_size", "optim", "lr", "max_grad_norm")},
            "global_steps": r.timing.get("global_steps")}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the LSTM runs' setting, rows, speed source, decisions, other models' sections, claims."""
    runs = runs_dir(results_dir)
    every = load_runs(runs, RECORDS)
    records, others = by_model(every)
    if not records:
        raise FileNotFoundError(f"no {'LSTM ' if every else ''}records in {runs / RECORDS}; run `make reproduce-lm1b` first")
    earlier_lstm, earlier = by_model(load_runs(runs, EARLIER) if (runs / EARLIER).is_dir() else [])
    earlier = {model: rs for model, rs in earlier.items() if model not in others and earlier_lstm}
    summary = per_head(records)
    measured, source = side_by_side(results_dir, records)
    floor = unigram_floor(results_dir, records[0].info("vocab_size"))
    decision = (decided(summary, measured, records[0].info("min_count"), floor)
                if {SOFTMAX, ADAPTIVE} <= set(summary) else None)
    return {
        "make": MAKE_TARGETS[LSTM], "folder": shown_path(runs / RECORDS), "commits": commits(every),
        "earlier_folder": shown_path(runs / EARLIER), "diagnostic": diagnostic(results_dir),
        "earlier_vocab": sorted({r.info("vocab_size") for r in earlier_lstm}),
        "earlier_min_count": sorted({r.info("min_count") for r in earlier_lstm}),
        "steps": sorted({r.timing["global_steps"] for r in records}),
        "selection": sorted({((r.selection or {}).get("metric"), r.setting("train", "eval_steps"), r.setting("train", "validation_subset"))
                             for r in records}, key=str),
        "validation_tokens": sorted({int(h["eval_val/tokens"]) for r in records for h in r.history if "eval_val/tokens" in h}),
        "dropout": joined(records, lambda r: r.setting("model", "dropout")),
        "command": page_command(EXPERIMENT, results_dir),
        "facts": facts(records[0]),
        "measured": measured, "source": source, "close": (1 / CLOSE_RATIO, CLOSE_RATIO), "vocab": vocab_timing(results_dir),
        "cutoffs": joined([r for r in records if head_of(r) == ADAPTIVE], lambda r: r.option("loss", "cutoffs")),
        "div": joined(records, lambda r: r.option("loss", "div_value")),
        "m": joined([r for r in records if head_of(r).loss == SAMPLED], lambda r: r.option("loss", "num_samples")),
        "seeds": seeds_of(records), "rows": head_rows(summary, measured, floor=floor), "unigram": floor,
        "summaries": {LSTM: summary, **{model: per_head(rs) for model, rs in others.items()}},
        "sections": [*(model_section(model, rs, records) for model, rs in others.items()),
                     *(model_section(model, rs, earlier_lstm, earlier=True) for model, rs in earlier.items())],
        "decided": decision,
        "sampler_powers": joined([r for r in records if head_of(r).sampler == "unigram"], lambda r: r.setting("loss", "sampler", "power")),
        "claims": claims(records, decision, measured),
    }


def diagnostic(results_dir: str | Path) -> dict[str, Any]:
    """The uniform-sampler diagnostic the flags link to: its page (relative to the results folder) and the V it ran at."""
    path = Path(results_dir) / uniform_check.MEASUREMENT
    measured = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return {"page": DIAGNOSTIC, "vocab": below(measured, ("config", "vocab_size"))}  # the measurement's own config, not a record's


def vocab_timing(results_dir: str | Path) -> dict[str, Any]:
    """The full and adaptive softmax's forward + backward ms per class count C (:data:`VOCAB_BENCH`; no rows if not run), and
    ``growth``: from the smallest C to the largest, the factor of C and of each head's time."""
    out: dict[str, Any] = {"file": f"results/{VOCAB_BENCH}", "command": VOCAB_COMMAND, "rows": [], "growth": None}
    _, report = bench_group(Path(results_dir) / VOCAB_BENCH, VOCAB_GROUP)  # ({}, {}) without the file
    for group in (g for g in report.get("groups", ()) if g["title"].startswith(VOCAB_GROUP)):
        c = int(re.search(r"C=([\d,]+)", group["title"]).group(1).replace(",", ""))
        ms = {row["variant"]: row["ms"] for row in group["rows"]}
        out["rows"].append((c, ms["SoftmaxHead (full softmax)"], ms["AdaptiveSoftmaxHead"]))
    out["rows"].sort()
    if len(out["rows"]) >= 2:
        (c0, f0, a0), (c1, f1, a1) = out["rows"][0], out["rows"][-1]
        out["growth"] = (c1 / c0, f1 / f0, a1 / a0)
    return out | {"date": report.get("date"), "machine": report.get("machine")}


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write lm1b.md, lm1b.png and the lm1b rows of claims.md into ``out`` (default ``results_dir``)."""
    data = summarise(results_dir)
    out = Path(out or results_dir)
    plot(data["summaries"], out / "lm1b.png")
    publish(out, EXPERIMENT, data)
