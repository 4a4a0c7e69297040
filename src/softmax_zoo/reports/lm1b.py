"""One Billion Word head comparison (Grave et al. 2017): results/lm1b.md, results/lm1b.png, claims.

Reads the records of ``experiment_name=lm1b`` (``make reproduce-lm1b``): the same LSTM trained for
the same steps with the full softmax, adaptive softmax and the sampled softmax (quadratic and
uniform samplers, same m). The table gives validation and test perplexity of each head's own
normalised distribution (full softmax for the sampled heads) and the speed-up over the full
softmax. The speed-up comes from the side-by-side measurement of the heads' training steps
(:mod:`softmax_zoo.studies.lm_speed`, ``<results_dir>/diagnostics/lm1b_speed.json``) when it exists
and was made at the records' scale and model size: there every head's step is timed in one process,
interleaved, under the same load. The runs' own tokens/second (each timed alone, at its own time and
load) stay in the table as a secondary column; without the measurement the speed-up is their ratio,
labelled so. The plot shows validation perplexity (on the first ``task.curve_tokens`` tokens)
against each run's own training wall time.

Records of another model (``model=transformer_lm``, ``make reproduce-lm1b-transformer``: the same heads,
steps and batches) get a table of their own beside the LSTM's, with each head's LSTM test perplexity
next to theirs; the speed measurement, the verdicts and the claims rows are the LSTM's.

Build: ``python -m softmax_zoo.reports lm1b``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..losses.registry import variant_label
from ..records import choice, get, load_records, runs_dir
from ._pages import commits, line_plot, markdown_table, page_command, shown_path, write_page
from ._stats import UnpairedSeedDelta, format_mean_ci, mean, seeds_label
from ._verdicts import MIN_SEEDS, VerdictKind, verdict

EXPERIMENT = "lm1b"
# The paper's One Billion Word numbers (Grave et al. 2017, ICML).
PAPER = {
    "adaptive_1layer_test_ppl": 43.9,  # one LSTM-2048 layer, under three days on one GPU
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
        s = out.setdefault(head_label(r), {"seeds": [], "val": [], "test": [], "tps": [], "train_s": [], "tokens": [], "curves": []})
        m = r["metrics"]
        s["seeds"].append(r["seed"])
        s["val"].append(m.get("val/perplexity", math.nan))
        s["test"].append(m.get("test/perplexity", math.nan))
        s["tps"].append(m.get("train/tokens_per_second", math.nan))
        s["train_s"].append(r["timing"]["train_s"])
        s["tokens"].append(m.get("train/tokens", math.nan))
        curve = [(h["train_wall_s"], h["val/curve_perplexity"]) for h in r.get("history", []) if "val/curve_perplexity" in h]
        s["curves"].append(curve)
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


LINESTYLES = ("-", "--", ":", "-.")  # one per model, in by_model's order


def plot(summaries: dict[str, dict[str, dict[str, Any]]], path: Path) -> None:
    """Validation curves of every run: one colour per head, one line style per model."""
    heads = sorted({head for summary in summaries.values() for head in summary})
    with line_plot(path, xlabel="training wall time of each run (min; runs timed separately)", ylabel="validation perplexity (first curve_tokens tokens)",
                   title="One Billion Word subset: validation perplexity vs time") as ax:
        for style, (model, summary) in zip(LINESTYLES, summaries.items()):
            for head, s in sorted(summary.items()):
                label = head if model == LSTM else f"{head}, {model}"
                for i, curve in enumerate(s["curves"]):
                    if curve:
                        xs, ys = zip(*curve)
                        ax.plot([x / 60 for x in xs], ys, marker=".", linestyle=style, color=f"C{heads.index(head)}",
                                label=label if i == 0 else None)
        ax.set_yscale("log")


def model_table(summary: dict[str, dict[str, Any]], lstm: dict[str, dict[str, Any]]) -> str:
    """Another model's rows: its perplexities beside the LSTM's test perplexity for the same head, its runs' own speed."""
    speed = speedups(summary)
    rows = [
        [
            head,
            format_mean_ci(s["val"], digits=1),
            format_mean_ci(s["test"], digits=1),
            f"{mean(lstm[head]['test']):.1f}" if head in lstm else "-",
            f"{mean(s['tps']):.0f}",
            f"{speed[head]:.2f}x",
            f"{mean(s['train_s']) / 60:.1f}",
            f"{mean(s['tokens']):.3g}",
        ]
        for head, s in sorted(summary.items(), key=lambda kv: (kv[0] != "softmax", kv[0]))
    ]
    header = ["head", "val ppl", "test ppl", "LSTM test ppl (same head)", "run tokens/s (own record)",
              "speed-up vs softmax (separate runs)", "train min", "train tokens"]
    return markdown_table(header, rows)


BUDGET_KEYS = ("config.train.max_steps", "config.train.batch_size", "config.task.bptt")  # what fixes the training tokens


def describe_transformer(r: dict[str, Any], lstm: dict[str, Any]) -> str:
    """The transformer_lm rows' model, how it reads the BPTT windows, and its budget against the LSTM record ``lstm``'s."""
    m = get(r, "config.model")
    bptt = get(r, "config.task.bptt")
    width = f"width {m['hidden_size']}"
    if m["hidden_size"] == get(lstm, "config.model.hidden_size"):
        width += " (the LSTM's: every head sees the same d)"
    blocks = f"{m['num_layers']} block{'s' if m['num_layers'] > 1 else ''}"
    same = all(get(r, key) == get(lstm, key) for key in BUDGET_KEYS)
    budget = ("the LSTM rows' streams, batches and steps" if same else
              "steps, batch, BPTT " + "/".join(str(get(r, k)) for k in BUDGET_KEYS) + " (the LSTM rows': "
              + "/".join(str(get(lstm, k)) for k in BUDGET_KEYS) + ")")
    return (
        f"Model: a randomly initialised {m['architecture']} decoder (transformers), {width}, {blocks}, {m['num_heads']} "
        f"attention heads, MLP {m['intermediate_size'] or 4 * m['hidden_size']}, {r['task_info'].get('parameters'):,} "
        f"parameters with the {head_label(r)} head; {budget}. The LSTM carries its state through each stream; the transformer "
        f"reads each BPTT window of {bptt} tokens with the previous window of its stream as context ({bptt} to "
        f"{2 * bptt - 1} tokens of context), in training and evaluation."
    )


def model_section(model: str, records: list[dict[str, Any]], lstm_records: list[dict[str, Any]]) -> str:
    """The page's section for the records of a model other than the LSTM."""
    lstm = summarize(lstm_records)
    seeds = sorted({r["seed"] for r in records})
    seeds_note = (f"1 seed (seed {seeds[0]}) per head: the rows are single runs, without error bars"
                  if len(seeds) == 1 else f"{len(seeds)} seeds per head (mean ± 95% CI)")
    first = min(records, key=lambda r: head_label(r) != "softmax")  # the softmax run's parameter count if there is one
    description = describe_transformer(first, lstm_records[0]) if model == "transformer_lm" else f"Model: {model}."
    command = MAKE_TARGETS.get(model, f"python -m softmax_zoo.train -m experiment=... model={model}")
    return (
        f"## The same heads on {model}\n\n"
        f"Made by `{command}`. {description} {seeds_note}. "
        "Run tokens/s and train min are each run's own (the Trainer's whole loop, timed alone); the make target "
        "trains with one torch thread (LM1B_TRANSFORMER_THREADS in make/lm.mk) and the CPU is shared with other jobs "
        "whose load is not controlled, so these numbers are one-thread rates under that load: the speed-up column is "
        "a ratio of separate runs and carries the change of load between them, and speeds are not comparable with "
        "the LSTM table's.\n\n"
        + model_table(summarize(records), lstm)
        + "\n"
        + model_sentence(model, summarize(records), lstm)
        + "\n\n"
    )


def model_sentence(model: str, summary: dict[str, dict[str, Any]], lstm: dict[str, dict[str, Any]]) -> str:
    """Another model's test perplexities against the LSTM's, head by head, and its adaptive/softmax ratio."""
    ratios = [
        f"{head} {mean(s['test']) / mean(lstm[head]['test']):.2f}x" for head, s in sorted(summary.items()) if head in lstm
    ]
    text = f"Test perplexity of {model} over the LSTM's, per head: " + ", ".join(ratios) + "."
    if "softmax" in summary and "adaptive" in summary:
        text += (f" Within {model}, adaptive softmax's test perplexity is "
                 f"{mean(summary['adaptive']['test']) / mean(summary['softmax']['test']):.3f}x the full softmax's.")
    return text + " These rows do not enter the claims ledger."


def speed_source(measured: dict[str, Any] | None) -> str:
    """How the speed-up was measured, for the claims ledger."""
    if measured is None:
        return "tokens/s of separate runs"
    return f"training-step tokens/s measured side by side, load average {measured['load_average_start']}"


def claims(summary: dict[str, dict[str, Any]], measured: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """Ledger rows: the speed/perplexity trade-off, the project's CPU speed target, the absolute perplexity."""
    if "softmax" not in summary or "adaptive" not in summary:
        return []
    speed = speedups(summary, measured)["adaptive"]
    ratio = mean(summary["adaptive"]["test"]) / mean(summary["softmax"]["test"])
    trade_ok = speed >= 2.0 and ratio <= NEAR_SAME_PPL
    seeds = sorted(set(summary["softmax"]["seeds"]) & set(summary["adaptive"]["seeds"]))
    return [
        {
            "id": "lm1b-adaptive-speed-ppl",
            "claim": "adaptive softmax trains 2-10x faster than the full softmax at nearly the same perplexity (One Billion Word)",
            "paper": PAPER["speedup"],
            "ours": f"{speed:.2f}x ({speed_source(measured)}), test ppl {ratio:.3f}x the full softmax's (CPU scale, our subset, "
                    f"{seeds_label(seeds)})",
            "verdict": trade_off_verdict(summary, seeds, speed, ratio),
            "source": EXPERIMENT,
        },
        {
            "id": "lm1b-cpu-speedup-3x",
            "claim": "project target: an adaptive training step of the whole model >= 3x faster than full softmax (min_count 1, CPU)",
            "paper": ">= 3x (target)",
            "ours": f"{speed:.2f}x ({speed_source(measured)}, {seeds_label(seeds)})",
            "verdict": "met" if speed >= SPEEDUP_TARGET else "not met",
            "source": EXPERIMENT,
        },
        *approximations_claim(summary, measured),
        {
            "id": "lm1b-adaptive-43.9",
            "claim": "43.9 test perplexity with one LSTM-2048 layer (39.8 with two) on the full One Billion Word",
            "paper": f"{PAPER['adaptive_1layer_test_ppl']} / {PAPER['adaptive_2layer_test_ppl']}",
            "ours": f"{mean(summary['adaptive']['test']):.1f} (small LSTM, 2 held-out shards of training text)",
            "verdict": "not tested: needs scale=paper on the full corpus (GPU)",
            "source": EXPERIMENT,
        },
    ]


def approximations_claim(summary: dict[str, dict[str, Any]], measured: dict[str, Any] | None = None) -> list[dict[str, str]]:
    """The abstract's "large gain in efficiency over standard approximations": adaptive against our sampled heads.

    Our standard approximations are the sampled-softmax heads (their perplexity that of the full
    softmax of their weights); the paper's own baselines are not named in the text we hold.
    """
    sampled = sorted(h for h in summary if h.startswith("sampled"))
    if not sampled:
        return []
    speed = speedups(summary, measured)
    adaptive = summary["adaptive"]
    seeds = sorted(set(adaptive["seeds"]).intersection(*(summary[h]["seeds"] for h in sampled)))
    label = seeds_label(seeds)
    per_head = {h: (speed["adaptive"] / speed[h], mean(summary[h]["test"]) / mean(adaptive["test"])) for h in sampled}
    ours = "; ".join(f"adaptive vs {h}: {fast:.2f}x its step tokens/s, its test ppl {worse:.1f}x the adaptive one's"
                     for h, (fast, worse) in per_head.items())
    faster = sum(fast > 1 for fast, _ in per_head.values())
    lower = sum(worse > 1 for _, worse in per_head.values())
    result = f"adaptive faster than {faster} and at a lower test perplexity than {lower} of {len(sampled)} sampled heads"
    if len(seeds) < MIN_SEEDS:
        kind = VerdictKind.SINGLE_RUN if len(seeds) == 1 else VerdictKind.TOO_FEW_SEEDS
        text = f"{kind.value} ({label}): {result}; one run per head decides nothing"
    else:
        logs = {h: dict(zip(summary[h]["seeds"], map(math.log, summary[h]["test"]))) for h in ("adaptive", *sampled)}
        text = "; ".join(f"{h}, log test ppl: {verdict(UnpairedSeedDelta.from_values(logs['adaptive'], logs[h]), +1)}"
                         for h in sampled) + f" ({result}; the speed-ups have no interval)"
    return [{
        "id": "lm1b-adaptive-vs-approximations",
        "claim": "\"our approach brings a large gain in efficiency over standard approximations while achieving an accuracy "
                 "close to that of the full softmax\" (EuroParl, One Billion Word; our standard approximations: sampled softmax)",
        "paper": "a large gain in efficiency over standard approximations, accuracy close to the full softmax (no number in the abstract)",
        "ours": f"{ours} ({speed_source(measured)}; CPU scale, our subset, {label})",
        "verdict": text,
        "source": EXPERIMENT,
    }]


def trade_off_verdict(summary: dict[str, dict[str, Any]], seeds: list[int], speed: float, ratio: float) -> str:
    """The speed/perplexity claim's verdict: a single run or too few seeds say so; from 3 seeds the test
    perplexity ratio's 95% Welch interval (on log perplexity) must lie within NEAR_SAME_PPL."""
    within = speed >= 2.0 and ratio <= NEAR_SAME_PPL
    result = f"{'speed and perplexity within' if within else 'speed or perplexity outside'} the claim ({speed:.2f}x, ppl {ratio:.3f}x)"
    if len(seeds) < MIN_SEEDS:
        kind = VerdictKind.SINGLE_RUN if len(seeds) == 1 else VerdictKind.TOO_FEW_SEEDS
        return f"{kind.value} ({seeds_label(seeds)}): {result}"
    logs = {name: dict(zip(summary[name]["seeds"], map(math.log, summary[name]["test"]))) for name in ("softmax", "adaptive")}
    low, high = UnpairedSeedDelta.from_values(logs["softmax"], logs["adaptive"]).interval
    if speed < 2.0 or low > math.log(NEAR_SAME_PPL):
        kind = VerdictKind.CONTRADICTS
    elif high <= math.log(NEAR_SAME_PPL):
        kind = VerdictKind.SUPPORTED
    else:
        kind = VerdictKind.INCONCLUSIVE
    return f"{kind.value} ({seeds_label(seeds)}): {result}, ppl ratio 95% interval [{math.exp(low):.3f}, {math.exp(high):.3f}]x"


def verdict_sentence(summary: dict[str, dict[str, Any]], measured: dict[str, Any] | None = None) -> str:
    if "softmax" not in summary or "adaptive" not in summary:
        return "The full-softmax or the adaptive run is missing, so no comparison is made."
    speed = speedups(summary, measured)["adaptive"]
    ratio = mean(summary["adaptive"]["test"]) / mean(summary["softmax"]["test"])
    how = "in a side-by-side measurement of the training step" if measured is not None else "in separate runs"
    return (
        f"At CPU scale adaptive softmax processed {speed:.2f}x the full softmax's training tokens per second ({how}), "
        f"and its test perplexity is {ratio:.3f}x the full softmax's after the same number of tokens. "
        f"The ledger's verdict: {trade_off_verdict(summary, sorted(set(summary['softmax']['seeds']) & set(summary['adaptive']['seeds'])), speed, ratio)}. "
        "Our model is small, trained on ~0.3M words for a few epochs, so the absolute "
        f"perplexities are far from the paper's {PAPER['adaptive_1layer_test_ppl']}, which needs the full corpus and an LSTM-2048."
        + sampled_sentence(summary, measured)
    )


def sampled_sentence(summary: dict[str, dict[str, Any]], measured: dict[str, Any] | None = None) -> str:
    """What the sampled heads' full-softmax perplexities say (Blanc & Rendle's bias, seen on lm1b)."""
    sampled = sorted(h for h in summary if h.startswith("sampled"))
    if not sampled or "softmax" not in summary:
        return ""
    speed = speedups(summary, measured)
    parts = [
        f"{h}: test perplexity {mean(summary[h]['test']) / mean(summary['softmax']['test']):.1f}x the full softmax's "
        f"at {speed[h]:.2f}x its tokens/s"
        for h in sampled
    ]
    return (
        " The sampled heads, evaluated with the full softmax of their weights, are far worse after the same "
        "tokens (" + "; ".join(parts) + "): with m=64 of ~33k classes the sampled loss is a biased estimate of the "
        "full one, and the lower of the sampled perplexities shows which sampler's q is closer to the softmax "
        "(Blanc & Rendle predict the quadratic kernel)" + kernel_cost_clause(speed)
    )


def kernel_cost_clause(speed: dict[str, float]) -> str:
    """What the quadratic sampler's tree costs in training speed, next to the uniform sampler and the full softmax."""
    quadratic = [v for h, v in speed.items() if h.startswith("sampled (quadratic")]
    uniform = [v for h, v in speed.items() if h.startswith("sampled (uniform")]
    if not quadratic or not uniform or math.isnan(quadratic[0] / uniform[0]):
        return "."
    q, u = quadratic[0], uniform[0]
    than_softmax = "slower than the full softmax itself" if q < 1 else f"{q:.2f}x the full softmax's speed"
    return f"; on this CPU the kernel sampler's tree makes its step {u / q:.1f}x slower than the uniform sampler's ({than_softmax})."


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write lm1b.md, lm1b.png and the lm1b rows of claims.md into ``out`` (default ``results_dir``)."""
    runs = runs_dir(results_dir)
    records = load_records(runs, EXPERIMENT)
    if not records:
        raise FileNotFoundError(f"no records in {runs / EXPERIMENT}; run `make reproduce-lm1b` first")
    origin = commits(records)
    out = Path(out or results_dir)
    models = by_model(records)
    records = models.pop(LSTM, [])
    if not records:
        raise FileNotFoundError(f"no LSTM records in {runs / EXPERIMENT}; run `make reproduce-lm1b` first")
    summary = summarize(records)
    measured, speed_note = side_by_side(results_dir, records)
    plot({LSTM: summary, **{model: summarize(rs) for model, rs in models.items()}}, out / "lm1b.png")
    r0 = records[0]
    text = (
        "# One Billion Word: full, adaptive and sampled softmax (Grave et al. 2017)\n\n"
        f"Made by `{MAKE_TARGETS[LSTM]}` (records in {shown_path(runs / EXPERIMENT)}/, from {origin}; table by `{page_command(EXPERIMENT, results_dir)}`).\n\n"
        f"Data: held-out shards 10-11 for training, 12 validation, 13 test (the only shards here); vocabulary "
        f"{r0['task_info'].get('vocab_size')} words (min_count {r0['task_info'].get('min_count')}). "
        f"Model: LSTM {get(r0, 'config.model.hidden_size')} units, embedding {get(r0, 'config.model.embedding_dim')}, "
        f"BPTT {get(r0, 'config.task.bptt')}, every head trained for the same {r0['timing']['global_steps']} steps. "
        "Perplexity is that of each head's normalised distribution (full softmax for sampled heads, the adaptive model's own). "
        + speed_note
        + "\n\n"
        + table(summary, measured)
        + "\nPaper (Grave et al. 2017, full One Billion Word, one GPU): adaptive softmax 43.9 test perplexity with one "
        "LSTM-2048 layer (39.8 with two), 2-10x faster than the full softmax at nearly the same perplexity.\n\n"
        + verdict_sentence(summary, measured)
        + "\n\n"
        + "".join(model_section(model, rs, records) for model, rs in models.items())
        + "![validation perplexity against wall time](lm1b.png)\n"
    )
    write_page(out, EXPERIMENT, text, claims(summary, measured))
