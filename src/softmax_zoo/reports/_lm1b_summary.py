"""The lm1b records summarised: per model and head, metrics over seeds, the speed-up over the full softmax
(from the side-by-side measurement when it matches the records), the table's rows and the figure."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..losses.registry import variant_label
from ..records import choice, get
from ._pages import line_plot
from ._stats import mean

EXPERIMENT = "lm1b"
# Numbers quoted for Grave et al. 2017 on One Billion Word. Neither the abstract we hold nor the README of the
# authors' repository (facebookresearch/adaptive-softmax) states them: the page and the ledger mark them unverified.
PAPER = {
    "adaptive_1layer_test_ppl": 43.9,  # quoted for one LSTM-2048 layer
    "adaptive_2layer_test_ppl": 39.8,
    "speedup": "2-10x",
}
NEAR_SAME_PPL = 1.10  # "nearly the same perplexity": adaptive within 10% of the full softmax (our reading)
SPEEDUP_TARGET = 3.0  # the project's CPU target: an adaptive step >= 3x faster than full softmax, min_count 1
SPEED_FILE = "diagnostics/lm1b_speed.json"  # written by python -m softmax_zoo.studies.lm_speed
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
    throughputs. Returns (the measurement or None, ``{"file", "found", "theirs", "ours"}``).
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
    return measured, source


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
