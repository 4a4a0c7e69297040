"""The lm1b records summarised: per model and head, metrics over seeds, the speed-up over the full softmax
(from the side-by-side measurement when it matches the records), and the LSTM head table."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..losses.registry import variant_label
from ..records import choice, get
from ._pages import markdown_table
from ._stats import format_mean_ci, mean

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
        s = out.setdefault(head_label(r), {"seeds": [], "val": [], "test": [], "tps": [], "train_s": [], "tokens": [], "curves": [], "curve_tokens": []})
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


def side_by_side(results_dir: str | Path, records: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str]:
    """The side-by-side speed measurement if it matches the records, and a sentence on where the speed-up comes from.

    The measurement is used when ``<results_dir>/diagnostics/lm1b_speed.json`` exists and its scale,
    embedding and LSTM sizes are the records'; otherwise the speed-up is the ratio of the runs' own
    throughputs, and the sentence says why.
    """
    path = Path(results_dir) / SPEED_FILE
    if not path.is_file():
        return None, (f"Speed-up = the runs' own training tokens/second over the full softmax's (no {SPEED_FILE}; "
                      "run `python -m softmax_zoo.studies.lm_speed` for a side-by-side measurement).")
    measured = json.loads(path.read_text(encoding="utf-8"))
    st = measured["settings"]
    ours = {(get(r, "choices.scale"), get(r, "config.model.embedding_dim"), get(r, "config.model.hidden_size")) for r in records}
    theirs = (st["scale"], st["embedding_dim"], st["hidden_size"])
    if ours != {theirs}:
        return None, (f"Speed-up = the runs' own training tokens/second over the full softmax's: {SPEED_FILE} was "
                      f"measured at (scale, embedding, LSTM) {theirs}, the records have {sorted(ours, key=str)}.")
    return measured, (
        f"Speed-up = tokens/second of each head's whole-model training step (forward, backward, clipping, "
        f"{st['optim']} step; batch {st['batch_size']} x BPTT {st['bptt']}) over the full softmax's, measured side "
        f"by side: the heads' steps interleaved in one process, {st['warmup']} warm-up rounds, then the median of "
        f"{st['repeats']} rounds in rotated order on the first {st['batches']} training batches "
        f"(`{measured['command']}`, {measured['date']}; {measured['machine']}; load average "
        f"{measured['load_average_start']} before the timing, {measured['load_average_end']} at its end, its own threads included). "
        "Run tokens/s is each run's own throughput in its record (the Trainer's whole loop, timed alone, "
        "at its own time and load), so ratios of that column also carry the change of load between runs."
    )


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


def table(summary: dict[str, dict[str, Any]], measured: dict[str, Any] | None = None) -> str:
    speed = speedups(summary, measured)
    step_tps = step_tokens_per_second(measured) if measured is not None else {}
    rows = []
    for head, s in sorted(summary.items(), key=lambda kv: (kv[0] != "softmax", kv[0])):
        run_tps = f"{mean(s['tps']):.0f}"
        speed_cells = [run_tps, f"{speed[head]:.2f}x"]
        if measured is not None:
            speed_cells = [f"{step_tps.get(head, math.nan):.0f}", f"{speed[head]:.2f}x", run_tps]
        rows.append([
            head,
            format_mean_ci(s["val"], digits=1),
            format_mean_ci(s["test"], digits=1),
            *speed_cells,
            f"{mean(s['train_s']) / 60:.1f}",
            f"{mean(s['tokens']):.3g}",
        ])
    if measured is not None:
        speed_header = ["step tokens/s (side by side)", "speed-up vs softmax (side by side)", "run tokens/s (own record)"]
    else:
        speed_header = ["run tokens/s (own record)", "speed-up vs softmax (separate runs)"]
    header = ["head", "val ppl", "test ppl", *speed_header, "train min", "train tokens"]
    return markdown_table(header, rows)
