"""One Billion Word head comparison (Grave et al. 2017): results/lm1b.md, results/lm1b.png, claims.

Reads the records of ``experiment_name=lm1b`` (``make reproduce-lm1b``): the same LSTM trained for
the same steps with the full softmax, adaptive softmax and the sampled softmax (quadratic and
uniform samplers, same m). The table gives validation and test perplexity of each head's own
normalised distribution (full softmax for the sampled heads) and the speed-up over the full
softmax. The speed-up comes from the side-by-side measurement of the heads' training steps
(:mod:`softmax_zoo.studies.lm_speed`, ``<results_dir>/diagnostics/lm1b_speed.json``) when it exists
and was made at the records' scale and model size; without it, the ratio of the runs' own
tokens/second. Perplexities are compared unpaired over seeds, on their logs
(:data:`softmax_zoo.reports._compare.Design.UNPAIRED`, Welch).

Records of another model (``model=transformer_lm``, ``make reproduce-lm1b-transformer``) get a table
of their own; the speed measurement, the verdicts and the claims rows are the LSTM's. The words are
templates/lm1b.md.j2.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..records import get, load_records, runs_dir
from ._compare import Comparison, Design, compare_values
from ._lm1b_summary import (
    EXPERIMENT,
    LSTM,
    MAKE_TARGETS,
    NEAR_SAME_PPL,
    PAPER,
    SPEED_FILE,  # noqa: F401  (where the side-by-side measurement is read from)
    SPEEDUP_TARGET,
    by_model,
    head_label,
    head_rows,
    plot,
    side_by_side,
    speedups,
    summarize,
)
from ._pages import commits, page_command, shown_path, write_page
from ._render import render_page
from ._settings import joined
from ._stats import mean
from ._verdicts import MIN_SEEDS, VerdictKind

BUDGET_KEYS = ("config.train.max_steps", "config.train.batch_size", "config.task.bptt")  # what fixes the training tokens


def log_ppl(summary: dict[str, dict[str, Any]], head: str) -> dict[int, float]:
    """seed -> log test perplexity of ``head``."""
    return dict(zip(summary[head]["seeds"], map(math.log, summary[head]["test"])))


def few_seeds(seeds: list[int]) -> VerdictKind | None:
    """SINGLE_RUN / TOO_FEW_SEEDS below :data:`MIN_SEEDS` seeds, else None."""
    if len(seeds) >= MIN_SEEDS:
        return None
    return VerdictKind.SINGLE_RUN if len(seeds) == 1 else VerdictKind.TOO_FEW_SEEDS


def trade_off(summary: dict[str, dict[str, Any]], seeds: list[int], speed: float, ratio: float) -> dict[str, Any]:
    """The speed/perplexity claim decided: from 3 seeds the test perplexity ratio's 95% Welch interval (on log
    perplexity) must lie within :data:`NEAR_SAME_PPL` and the speed-up reach the low end of the quoted 2-10x."""
    out = {"seeds": seeds, "speed": speed, "ratio": ratio, "within": speed >= 2.0 and ratio <= NEAR_SAME_PPL, "interval": None,
           "kind": few_seeds(seeds)}
    if out["kind"] is None:
        low, high = compare_values(Comparison("softmax", "adaptive", "log test ppl", Design.UNPAIRED),
                                   log_ppl(summary, "softmax"), log_ppl(summary, "adaptive")).interval
        out["interval"] = (math.exp(low), math.exp(high))
        out["kind"] = (VerdictKind.CONTRADICTS if speed < 2.0 or low > math.log(NEAR_SAME_PPL) else
                       VerdictKind.SUPPORTED if high <= math.log(NEAR_SAME_PPL) else VerdictKind.INCONCLUSIVE)
    return out


def approximations(summary: dict[str, dict[str, Any]], speed: dict[str, float]) -> dict[str, Any] | None:
    """Adaptive against our standard approximations (the sampled heads): per head how much faster adaptive is and how
    much higher the head's test perplexity is, and from 3 seeds each head's verdict on log test perplexity."""
    sampled = sorted(h for h in summary if h.startswith("sampled"))
    if not sampled:
        return None
    seeds = sorted(set(summary["adaptive"]["seeds"]).intersection(*(summary[h]["seeds"] for h in sampled)))
    per_head = {h: {"faster": speed["adaptive"] / speed[h], "worse": mean(summary[h]["test"]) / mean(summary["adaptive"]["test"])}
                for h in sampled}
    out = {"heads": per_head, "seeds": seeds, "n": len(sampled), "kind": few_seeds(seeds), "verdicts": {},
           "faster": sum(p["faster"] > 1 for p in per_head.values()), "lower": sum(p["worse"] > 1 for p in per_head.values())}
    if out["kind"] is None:
        out["verdicts"] = {h: compare_values(Comparison("adaptive", h, "log test ppl", Design.UNPAIRED),
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
        "measured": measured, "source": source, "quoted": PAPER, "near": NEAR_SAME_PPL,
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
            "speed": speed, "trade_off": trade_off(summary, seeds, speed["adaptive"],
                                                  mean(summary["adaptive"]["test"]) / mean(summary["softmax"]["test"])),
            "tokens": mean(summary["adaptive"]["tokens"]), "approximations": approximations(summary, speed),
            "sampled": {h: mean(summary[h]["test"]) / mean(summary["softmax"]["test"]) for h in sorted(summary) if h.startswith("sampled")},
            "adaptive_test": mean(summary["adaptive"]["test"]), "met": speed["adaptive"] >= SPEEDUP_TARGET,
        }
        kernel = [[v for h, v in speed.items() if h.startswith(f"sampled ({name}")] for name in ("quadratic", "uniform")]
        data["decided"]["kernel"] = (kernel[0][0], kernel[1][0]) if all(kernel) and not math.isnan(kernel[0][0] / kernel[1][0]) else None
    ids = []
    if data["decided"]:
        ids = (["lm1b-adaptive-speed-ppl", "lm1b-cpu-speedup-3x"]
               + ["lm1b-adaptive-vs-approximations"] * bool(data["decided"]["approximations"]))
        ids.append("lm1b-adaptive-43.9")
    data["claims"] = [{"id": i, "source": EXPERIMENT} for i in ids + ["lm1b-adaptive-gpu", "lm1b-adaptive-cutoffs"]]
    return data


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write lm1b.md, lm1b.png and the lm1b rows of claims.md into ``out`` (default ``results_dir``)."""
    data = summarise(results_dir)
    out = Path(out or results_dir)
    plot(data["summaries"], out / "lm1b.png")
    write_page(out, EXPERIMENT, *render_page(f"{EXPERIMENT}.md.j2", data))
