"""The lm1b page's table of heads: each head's runs summed up over seeds, its speed-up and its flags.

:func:`per_head` groups the records by head; :func:`side_by_side` reads the heads' training steps timed side by side
(:data:`SPEED_FILE`) when made at the records' size; :func:`head_rows` makes the table's rows, each flagged where it
is at or above a uniform guess (:func:`trivial`) or the unigram frequency predictor (:func:`below_floor`), or kept as
an ablation (:func:`ablation`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, NamedTuple

from ..losses.machinery.registry import variant_label
from ..run_record import GitState, RunRecord
from ._pages import file_commit
from ._stats import mean

UNIGRAM = "diagnostics/lm1b_unigram_baseline.json"  # under results_dir: the context-free frequency predictor's perplexities
SAMPLED = "sampled_softmax"  # configs/loss/ name of the sampled heads (their sampler: loss/sampler's choice)
ABLATION_SAMPLERS = ("uniform",)  # the sampled heads kept as an ablation, not a baseline
SPEED_FILE = "diagnostics/lm1b_speed.json"  # written by python -m softmax_zoo.studies.lm_speed
METRICS = {"val": "val/perplexity", "test": "test/perplexity", "tps": "train/tokens_per_second", "tokens": "train/tokens"}


class Head(NamedTuple):
    """A head of the table as the run's config names it: its loss choice and, for a sampled head, its sampler and m."""

    loss: str
    sampler: str | None = None
    m: int | None = None

    @property
    def label(self) -> str:
        """The registered label the page words the head by: "softmax", "adaptive", "sampled (quadratic, m=64)"."""
        return variant_label(self.loss, {"num_samples": self.m}, {"sampler": self.sampler})


SOFTMAX, ADAPTIVE = Head("softmax"), Head("adaptive_softmax")


def head_of(record: RunRecord) -> Head:
    """The :class:`Head` a record's run trained."""
    if (loss := record.choice("loss")) != SAMPLED:
        return Head(loss)
    return Head(loss, record.choices.get("sampler"), record.option("loss", "num_samples"))


def per_head(records: list[RunRecord]) -> dict[Head, dict[str, Any]]:
    """Per head: its seeds, metric lists over seeds, each run's training seconds, steps and evaluated step (the chosen
    checkpoint's, else the last), vocabulary, width and parameters, and each run's validation curve of (training tokens,
    perplexity)."""
    out: dict[Head, dict[str, Any]] = {}
    for r in records:
        s = out.setdefault(head_of(r), {"seeds": [], "train_s": [], "steps": [], "evaluated_step": [], "curves": [], "curve_tokens": [],
                                           "vocab": r.info("vocab_size"), "width": r.setting("model", "hidden_size"),
                                           "bias": r.option("loss", "bias"), "parameters": r.info("parameters"),
                                           **{k: [] for k in METRICS}})
        s["seeds"].append(r.seed)
        s["train_s"].append(r.timing["train_s"])
        s["steps"].append(r.timing["global_steps"])
        s["evaluated_step"].append((r.selection or {}).get("step", r.timing["global_steps"]))
        for key, metric in METRICS.items():
            s[key].append(r.metrics.get(metric, math.nan))
        s["curves"].append([(h["train/tokens"], h["val/curve_perplexity"]) for h in r.history if "val/curve_perplexity" in h])
        s["curve_tokens"] += [h["val/curve_tokens"] for h in r.history if "val/curve_tokens" in h][:1]
    return out


def side_by_side(results_dir: str | Path, records: list[RunRecord]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the side-by-side speed measurement, with ``code`` (its commit) and ``step_tps`` (head -> tokens/second of a step), if
    made at the records' scale, embedding and LSTM sizes and min_count (hence vocabulary), else None; the speed-up's source
    ``{"file", "found", "theirs", "ours"}``)."""
    path = Path(results_dir) / SPEED_FILE
    source: dict[str, Any] = {"file": SPEED_FILE, "found": path.is_file(), "theirs": None, "ours": None}
    if not path.is_file():
        return None, source
    measured = json.loads(path.read_text(encoding="utf-8"))
    st = measured["settings"]
    ours = {(r.choice("scale"), r.setting("model", "embedding_dim"), r.setting("model", "hidden_size"), r.setting("task", "min_count"))
            for r in records}
    theirs = (st["scale"], st["embedding_dim"], st["hidden_size"], st.get("min_count"))
    if ours != {theirs}:
        return None, source | {"theirs": theirs, "ours": sorted(ours, key=str)}
    step_tps = {head_of(RunRecord.of_row(row)): row["tokens_per_s"] for row in measured["rows"]}
    return measured | {"code": file_commit(measured), "step_tps": step_tps}, source


def speedups(summary: dict[Head, dict[str, Any]], measured: dict[str, Any] | None = None) -> dict[str, float]:
    """Each head's tokens/second over the full softmax's (nan if either is missing): ``measured`` side by side, else the runs'."""
    tps = measured["step_tps"] if measured else {head: mean(s["tps"]) for head, s in summary.items()}
    return {head: tps.get(head, math.nan) / tps.get(SOFTMAX, math.nan) for head in summary}


def output_parameters(summary: dict[Head, dict[str, Any]]) -> dict[str, int | None]:
    """Each head's output-layer parameters: its model's less the body every head of the table shares, the body being the
    full-softmax model less its V x d weights and V biases (None for every head without such a softmax run)."""
    softmax = summary.get(SOFTMAX)
    if softmax is None or not softmax["bias"]:
        return {head: None for head in summary}
    body = softmax["parameters"] - softmax["vocab"] * (softmax["width"] + 1)
    return {head: s["parameters"] - body for head, s in summary.items()}


def trivial(test_ppl: float, vocab: int) -> bool:
    """At or above a uniform guess's score: a test perplexity >= V, what predicting 1/V for every word gets."""
    return test_ppl >= vocab


def unigram_floor(results_dir: str | Path, vocab: int) -> dict[str, Any] | None:
    """The unigram frequency predictor's test perplexity (:data:`UNIGRAM`, written by
    ``python -m softmax_zoo.studies.unigram_baseline``) and its command; None without it or when it scored another V."""
    path = Path(results_dir) / UNIGRAM
    measured = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if measured.get("vocab_size") != vocab or "test" not in measured.get("splits", {}):
        return None
    git = GitState.of_file(measured)
    return {"test": measured["splits"]["test"]["perplexity"], "command": measured["command"], "file": UNIGRAM,
            "commit": str(git.commit)[:7], "dirty": git.dirty}


def below_floor(test_ppl: float, floor: dict[str, Any] | None) -> bool:
    """At or above the unigram frequency predictor's test perplexity: the head learnt less than a frequency count."""
    return floor is not None and test_ppl >= floor["test"]


def ablation(head: Head) -> bool:
    """A head kept as an ablation (a sampled head with a sampler of :data:`ABLATION_SAMPLERS`), not as a baseline."""
    return head.loss == SAMPLED and head.sampler in ABLATION_SAMPLERS


def head_rows(summary: dict[Head, dict[str, Any]], measured: dict[str, Any] | None = None,
              lstm: dict[Head, dict[str, Any]] | None = None, floor: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The table's rows, softmax first; with ``lstm`` (another model's table) the LSTM's test perplexity of the head.

    Each row flags ``trivial`` (:func:`trivial` on its mean test perplexity), ``below_floor`` (:func:`below_floor`) and
    ``ablation`` (:func:`ablation`)."""
    speed, step_tps = speedups(summary, measured), (measured["step_tps"] if measured else {})
    output = output_parameters(summary)
    return [{"head": head, "val": s["val"], "test": s["test"], "step_tps": step_tps.get(head, math.nan), "speed": speed[head],
             "run_tps": mean(s["tps"]), "train_min": mean(s["train_s"]) / 60, "tokens": mean(s["tokens"]),
             "train_mins": [t / 60 for t in s["train_s"]], "evaluated_step": s["evaluated_step"], "steps": s["steps"],
             "output_parameters": output[head], "parameters": s["parameters"], "vocab": s["vocab"],
             "trivial": trivial(mean(s["test"]), s["vocab"]), "ablation": ablation(head),
             "below_floor": below_floor(mean(s["test"]), floor),
             "lstm_test": mean(lstm[head]["test"]) if lstm and head in lstm else None,
             "lstm_trivial": bool(lstm and head in lstm and trivial(mean(lstm[head]["test"]), lstm[head]["vocab"]))}
            for head, s in sorted(summary.items(), key=lambda kv: (kv[0] != SOFTMAX, kv[0]))]
