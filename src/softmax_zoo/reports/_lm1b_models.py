"""The lm1b page's figure and its sections for models other than the LSTM (``model=transformer_lm``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records import get
from ._lm1b_summary import LSTM, MAKE_TARGETS, head_label, speedups, summarize
from ._pages import line_plot, markdown_table
from ._stats import format_mean_ci, mean

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
