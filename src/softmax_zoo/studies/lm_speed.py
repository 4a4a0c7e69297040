"""Training-step speed of the lm1b heads, measured side by side in one process.

    python -m softmax_zoo.studies.lm_speed [scale=cpu] [repeats=100] [warmup=5] [batches=8] [threads=N]
        [experiments=lm1b_softmax,lm1b_adaptive,lm1b_sampled_quadratic,lm1b_sampled_unigram,lm1b_sampled_uniform]
        [out=results/diagnostics/lm1b_speed.json] [<override> ...]

The throughput in a run's record (``train/tokens_per_second``) is that run's alone: runs made at
different times see different loads on the cores, so the ratio of two records' throughputs mixes
the change of load into the speed-up. Here every head's whole-model training step is timed in the
same process, the heads interleaved (:func:`softmax_zoo.timing.time_interleaved`: warm-up rounds,
then rounds in rotated order), so each ratio compares steps made under the same load.

Each head's model is the one its run trains: ``experiment=<e> scale=<scale> <override> ...`` is
composed (:func:`softmax_zoo.config.compose`) and built by the task's own builder
(:func:`softmax_zoo.engine.build_task`, seeded as a run is), with the optimiser the Trainer would
create from the run's ``TrainingArguments`` (``Trainer.get_optimizer_cls_and_kwargs``: Adagrad,
lr 0.1 for the LM family). One step, as the Trainer does it: forward on a real training batch
(the first ``batches`` batches of the training stream, cycled; the LSTM state carried as in
training), backward, ``clip_grad_norm_`` to ``train.max_grad_norm``, optimiser step, zero grad.
The Trainer's own overhead (data loading, logging, callbacks) is not included.

Writes ``out`` (JSON): per head the median step time and its quartiles, tokens/s (labelled tokens
per step / median step time) and the ratio to the first experiment's tokens/s; with the machine,
load average at start and end, torch threads, date, command and the code's commit (``git``). ``reports/lm1b.py`` takes the
page's speed column from it.
"""

from __future__ import annotations

import itertools
import json
import logging
import shlex
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf
from torch.utils.data import DataLoader

from ..cli_args import ArgumentError, Option, Parser, fail
from ..config import compose, hydra_choices
from ..data.layout import IGNORE_INDEX
from ..files import write_text
from ..provenance import git_state
from ..timing import load_average, machine, time_interleaved, utc_now

log = logging.getLogger(__name__)

EXPERIMENTS = "lm1b_softmax,lm1b_adaptive,lm1b_sampled_quadratic,lm1b_sampled_unigram,lm1b_sampled_uniform"
COMMAND = "python -m softmax_zoo.studies.lm_speed"
PARSER = Parser(COMMAND, [
    Option("scale", "cpu", "scale of every model"),
    Option("repeats", 100, "timed rounds", minimum=1),
    Option("warmup", 5, "untimed rounds first", minimum=0),
    Option("batches", 8, "training batches, cycled", minimum=1),
    Option("threads", None, "torch threads (default: torch's own)", kind=int, minimum=1),
    Option("experiments", EXPERIMENTS.split(","), "experiments to time; the first is the ratios' baseline"),
    Option("out", "results/diagnostics/lm1b_speed.json", "the JSON written"),
], rest="overrides of every model", max_positional=0)


def model_and_optimizer(cfg) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """The model the run of ``cfg`` trains (seeded as engine.run seeds it) and the optimiser the Trainer would give it."""
    import transformers  # the training stack, imported once the options are known to be good

    from ..engine import build_task, training_arguments

    transformers.set_seed(cfg.seed)
    model = build_task(cfg).model
    optimizer_cls, kwargs = transformers.Trainer.get_optimizer_cls_and_kwargs(training_arguments(cfg), model)
    return model, optimizer_cls([p for p in model.parameters() if p.requires_grad], **kwargs)


def training_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, max_grad_norm: float,
                  batches: Sequence[dict[str, torch.Tensor]]) -> Callable[[], None]:
    """One training step as the Trainer takes it, on the next of ``batches`` (cycled).

    Forward (training mode, the LSTM state carried), backward, gradient norm clipped to
    ``max_grad_norm`` (0: no clipping), optimiser step, gradients cleared.
    """
    model.train()
    cycle = itertools.cycle(batches)

    def step() -> None:
        model(**next(cycle))["loss"].backward()
        if max_grad_norm:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def first_batches(cfg, n: int) -> list[dict[str, torch.Tensor]]:
    """The first ``n`` batches of the training stream of ``cfg``'s task (as the Trainer's loader batches it)."""
    from ..engine import build_task

    task = build_task(cfg)
    loader = DataLoader(task.train_dataset, batch_size=task.train_dataset.batch_size, collate_fn=task.collator)
    out = list(itertools.islice(loader, n))
    if not out:
        raise ValueError(f"the training stream of task={cfg.task.name} gave no batch")
    return out


def quartiles(xs: Sequence[float]) -> tuple[float, float]:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    return q[0], q[2]


def measure(experiments: Sequence[str], *, scale: str, repeats: int, warmup: int, batches: int,
            extra: Sequence[str] = ()) -> dict[str, Any]:
    """Time each experiment's training step side by side; the first experiment is the ratios' baseline.

    Returns:
        ``{"rows": [{experiment, choices, config.loss, median_s, q1_s, q3_s, tokens_per_step, tokens_per_s, ratio}, ...],
        "settings": {...}}``.
    """
    if not experiments:
        raise ValueError("experiments is empty")
    cfgs, choices = {}, {}
    for e in experiments:
        cfgs[e] = compose([f"experiment={e}", f"scale={scale}", *extra])
        choices[e] = hydra_choices()  # of this composition (the report labels heads as it labels records)
    data = first_batches(cfgs[experiments[0]], batches)
    tokens = statistics.mean(int((b["labels"] != IGNORE_INDEX).sum()) for b in data)
    steps = {e: training_step(*model_and_optimizer(cfg), cfg.train.max_grad_norm, data) for e, cfg in cfgs.items()}
    load_start = load_average()
    times = time_interleaved(steps, repeats=repeats, warmup=warmup)
    load_end = load_average()
    rows = []
    for e, ts in times.items():
        median = statistics.median(ts)
        q1, q3 = quartiles(ts)
        rows.append({
            "experiment": e,
            "choices": choices[e],
            "config": {"loss": OmegaConf.to_container(cfgs[e].loss, resolve=True)},
            "median_s": median, "q1_s": q1, "q3_s": q3,
            "tokens_per_step": tokens, "tokens_per_s": tokens / median,
        })
    base = rows[0]["tokens_per_s"]
    for row in rows:
        row["ratio"] = row["tokens_per_s"] / base
    c = cfgs[experiments[0]]
    return {
        "rows": rows,
        "settings": {
            "scale": scale, "repeats": repeats, "warmup": warmup, "batches": len(data),
            "batch_size": c.train.batch_size, "bptt": c.task.bptt,
            "embedding_dim": c.model.embedding_dim, "hidden_size": c.model.hidden_size, "min_count": c.task.min_count,
            "optim": c.train.optim, "lr": c.train.lr, "max_grad_norm": c.train.max_grad_norm,
            "overrides": list(extra),
        },
        "load_average_start": load_start,
        "load_average_end": load_end,
    }


def parse(argv: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The measurement's own options (:data:`PARSER`, defaults filled) and the overrides for every model."""
    args = PARSER.parse(argv)
    return args.options, args.rest


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        options, extra = parse(argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    if options["threads"]:
        torch.set_num_threads(options["threads"])
    result = measure(
        options["experiments"], scale=options["scale"], repeats=options["repeats"],
        warmup=options["warmup"], batches=options["batches"], extra=extra,
    )
    result.update({
        "machine": machine(),
        "torch_threads": torch.get_num_threads(),
        "date": utc_now(),
        "command": shlex.join([*COMMAND.split(), *argv]),
        "git": git_state(),
    })
    out = Path(options["out"])
    write_text(out, json.dumps(result, indent=1) + "\n")
    for row in result["rows"]:
        log.info("%-26s %8.1f ms  %8.0f tokens/s  %5.2fx", row["experiment"], row["median_s"] * 1e3,
                 row["tokens_per_s"], row["ratio"])
    log.info("load average %s -> %s; wrote %s", result["load_average_start"], result["load_average_end"], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
