"""Sampler bias at a fixed language-model checkpoint (Blanc & Rendle 2018; no training).

    python -m softmax_zoo.studies.sampler_bias CHECKPOINT [OVERRIDES ...] [--batches 3] [--draws 16]
        [--samples 8 32 128 512] [--samplers uniform unigram quadratic quadratic_centred softmax]
        [--out DIR] [--name NAME] [--trained-by COMMAND]

CHECKPOINT is a checkpoint folder (``.../checkpoint-400``) or ``init`` (the model as the seeded
initialisation of the run builds it, step 0). OVERRIDES are
the Hydra overrides of the training run (e.g. ``experiment=kernel_bias_full scale=cpu``): they
rebuild the same task and model (an LM task: ``task=ptb|lm1b|wikitext2``). ``make
sampler-diagnostic CKPT=...`` runs it on the PTB study's model.

The model runs (evaluation mode, the state carried as in training) over the first ``--batches``
batches of the training stream; on each batch's output-layer inputs, for every sampler (the
``configs/loss/sampler/`` files) and m, the measures of
:mod:`softmax_zoo.diagnostics.bias_measures` give KL(p̃ ‖ q̃), the sampled loss's bias and the
output layer's gradient bias and cosine over ``--draws`` draws, averaged over the batches, plus
the logit sizes of ``logit_stats``. Writes ``<out>/<name>.json`` and ``<out>/<name>.md`` (out:
``<results_dir>/diagnostics/sampler_bias/<experiment>`` of the run's config, where the kernel_bias
page reads them; name: ``<run>_step<N>``).
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import transformers
from omegaconf import OmegaConf
from torch.utils.data import DataLoader

from ..cli_args import ArgumentError, Option, Parser, fail
from ..config import compose
from ..data.layout import IGNORE_INDEX
from ..data.tokenizers import WordVocab
from ..diagnostics.bias_measures import OutputLayer, kl_to_model, logit_stats, sampled_bias
from ..engine import build_task, initialise_from
from ..files import write_text
from ..markdown import markdown_table
from ..models import evaluating
from ..models.heads import build_head
from ..reports.kernel_bias import DIAGNOSTICS

log = logging.getLogger(__name__)

SAMPLERS = ("uniform", "unigram", "quadratic", "quadratic_centred", "softmax")
SAMPLES = (8, 32, 128, 512)
KL_FLOATS = 1 << 24  # rows per log_prob call in KL: rows·C·d ≤ this (the kernel's closed form gathers (rows, C, d))


def checkpoint_step(checkpoint: str) -> int:
    """0 for ``init``, N for a ``checkpoint-N`` folder; ValueError for anything else."""
    if checkpoint == "init":
        return 0
    name = Path(checkpoint).name
    if name.startswith("checkpoint-") and name.split("-")[-1].isdigit():
        return int(name.split("-")[-1])
    raise ValueError(f"CHECKPOINT must be 'init' or a checkpoint-N folder, got {checkpoint!r}")


def output_layers(model: torch.nn.Module, dataset, collate, batches: int) -> list[OutputLayer]:
    """The output layer's inputs on the first ``batches`` batches of ``dataset`` (evaluation mode)."""
    head = model.head
    layers = []
    with evaluating(model):
        model.reset_eval_state()
        for i, batch in enumerate(DataLoader(dataset, batch_size=dataset.batch_size, collate_fn=collate)):
            if i == batches:
                break
            hidden = model(batch["input_ids"], reset=batch["reset"])["hidden"]  # (B, T, d)
            keep = batch["labels"] != IGNORE_INDEX
            layers.append(OutputLayer(hidden[keep], batch["labels"][keep], head.weight.detach(),
                                      None if head.bias is None else head.bias.detach()))
    if not layers:
        raise ValueError("the training stream gave no batch")
    return layers


def sampler_head(name: str, m: int, d: int, C: int, bias: bool, counts: torch.Tensor):
    """The training head of ``loss=sampled_softmax loss/sampler=<name>`` with m negatives and the checkpoint's bias."""
    loss_cfg = compose(["loss=sampled_softmax", f"loss/sampler={name}"]).loss
    loss_cfg.num_samples, loss_cfg.bias = m, bias
    return build_head(loss_cfg, d, C, class_counts=counts)


def diagnose(layers: list[OutputLayer], samplers, samples, draws: int, counts: torch.Tensor) -> dict[str, Any]:
    """Logit stats and, per sampler and m, the bias measures averaged over ``layers``."""
    C, d = layers[0].weight.shape
    bias = layers[0].bias is not None
    rows, stats = [], [logit_stats(layer) for layer in layers]
    for name in samplers:
        kl_rows = max(1, KL_FLOATS // (C * d))
        kl = None
        for m in samples:
            head = sampler_head(name, m, d, C, bias, counts)
            if kl is None:
                kl = sum(kl_to_model(layer, head.sampler, kl_rows) for layer in layers) / len(layers)
            t0 = time.perf_counter()
            per = [sampled_bias(layer, head, draws) for layer in layers]
            row = {"sampler": name, "m": m, "kl": kl}
            row.update({k: sum(p[k] for p in per) / len(per) for k in per[0]})
            rows.append(row)
            log.info("%s m=%d: %s (%.1f s)", name, m, {k: round(v, 4) for k, v in row.items() if isinstance(v, float)},
                     time.perf_counter() - t0)
    return {
        "stats": {k: sum(s[k] for s in stats) / len(stats) for k in stats[0]},
        "rows": rows,
    }


def markdown(result: dict[str, Any]) -> str:
    """The result as a page section: a line of logit sizes and one table row per sampler and m."""
    s, meta = result["stats"], result["meta"]
    lines = [
        f"Checkpoint {meta['checkpoint']} (step {meta['step']}), {meta['rows']} rows from {meta['batches']} "
        f"training batches, {meta['draws']} draws per point. Command: `{meta['command']}`",
        "",
        f"mean |h·w| {s['mean_abs_hw']:.2f}; row mean of h·w {s['row_mean_hw']:+.2f} (std over rows "
        f"{s['row_mean_hw_std']:.2f}); ‖w̄‖ {s['mean_row_norm']:.2f} against mean ‖w_c − w̄‖ {s['class_part_norm']:.2f}.",
        "",
    ]
    table = [
        [r["sampler"], f"{r['kl']:.3f}", str(r["m"]), f"{r['loss_bias']:+.4f} ± {r['loss_bias_se']:.4f}",
         f"{r['grad_bias']:.3f} ({r['grad_noise']:.3f})", f"{r['grad_cosine']:.3f}"]
        for r in result["rows"]
    ]
    header = ["sampler", "KL(p̃‖q̃)", "m", "loss bias ± s.e. (nats)", "‖E[ĝ]−g‖/‖g‖ (noise)", "cos(ḡ, g)"]
    return "\n".join(lines) + "\n" + markdown_table(header, table)


PARSER = Parser("python -m softmax_zoo.studies.sampler_bias", [
    Option("batches", 3, "training batches the model runs over", minimum=1),
    Option("draws", 16, "sample draws per batch", minimum=1),
    Option("samples", list(SAMPLES), "sample sizes m", minimum=1),
    Option("samplers", list(SAMPLERS), "names of configs/loss/sampler/ files"),
    Option("seed", 0, "seed of the draws"),
    Option("out", None, "folder (default <results_dir>/diagnostics/sampler_bias/<experiment>)", kind=str),
    Option("trained_by", None, "the command that trained the checkpoint (kept in the JSON, shown on the page)", kind=str),
    Option("name", None, "file name (default <run_name>_step<N>)", kind=str),
], synopsis="CHECKPOINT", rest="Hydra overrides of the training run", dashed=True, max_positional=1)


def parse_args(argv: list[str]) -> SimpleNamespace:
    """CHECKPOINT, the run's Hydra overrides (every ``key=value``) and the ``--option value`` settings of :data:`PARSER`."""
    args = PARSER.parse(argv)
    if len(args.positional) != 1:
        raise ArgumentError(f"{PARSER.prog}: give one CHECKPOINT (a checkpoint-N folder, or 'init'), got {args.positional}")
    return SimpleNamespace(**args.options, checkpoint=args.positional[0], overrides=args.rest, argv=list(argv))


def run(args: SimpleNamespace) -> dict[str, Any]:
    """Build the run's model, load the checkpoint, measure, write <out>/<name>.{json,md}; return the result."""
    cfg = compose(args.overrides)
    if not str(cfg.task.builder).endswith("tasks.lm.build_task"):
        raise ValueError(f"the diagnostic needs a language-modelling task (task=ptb|lm1b|wikitext2), got task={cfg.task.name}")
    step = checkpoint_step(args.checkpoint)
    transformers.set_seed(cfg.seed)  # as engine.run: the same initialisation for `init`
    task = build_task(cfg)
    if args.checkpoint != "init":
        initialise_from(task.model, args.checkpoint)
    counts = torch.tensor(WordVocab.load(Path(cfg.task.data_dir) / "vocab.txt", min_count=cfg.task.min_count).counts, dtype=torch.float)
    layers = output_layers(task.model, task.train_dataset, task.collator, args.batches)
    torch.manual_seed(args.seed)
    result = diagnose(layers, args.samplers, args.samples, args.draws, counts)
    result["meta"] = {
        "checkpoint": args.checkpoint,
        "step": step,
        "experiment": cfg.experiment_name,
        "run_name": cfg.run_name,
        "overrides": list(args.overrides),
        "batches": len(layers),
        "rows": sum(layer.target.numel() for layer in layers),
        "draws": args.draws,
        "seed": args.seed,
        "num_classes": int(layers[0].weight.shape[0]),
        "output_bias": layers[0].bias is not None,
        "trained_by": args.trained_by,
        "command": shlex.join(["python", "-m", "softmax_zoo.studies.sampler_bias", *args.argv]),
        "config": OmegaConf.to_container(cfg.model, resolve=True),
    }
    name = args.name or f"{cfg.run_name}_step{step}"
    out = Path(args.out or Path(cfg.results_dir) / DIAGNOSTICS / cfg.experiment_name)
    write_text(out / f"{name}.json", json.dumps(result, indent=1) + "\n")
    write_text(out / f"{name}.md", markdown(result))
    log.info("wrote %s.{json,md}", out / name)
    return result


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
