"""Memory of every paper-scale experiment arm against one 141 GB GPU (an H200), no GPU needed.

    python scripts/paper_memory.py            # -> results/paper_memory.md and results/paper_memory.json
    python scripts/paper_memory.py --experiments kernel_bias_full --scale smoke --out /tmp/x

Each experiment of :data:`EXPERIMENTS` is composed at ``scale=paper`` (``task=`` and ``model=`` as
make/classification.mk gives fig2 at paper scale), one arm per value of its sweep (its file's
``hydra.sweeper.params``, seeds left out: they change no size), and its model is built on the meta
device (no memory allocated) from the config with the sizes of the task's data (:data:`TASK_SIZES`:
the data are not prepared here at paper scale). A model whose checkpoint is loaded in a real run is
built from the checkpoint's architecture with random weights instead (:func:`architecture`; the row
says so): the sizes are the same. The plan of each arm is :func:`softmax_zoo.memory_plan.plan`,
the one the engine checks before training on a GPU: parameters, gradients, optimiser state,
autocast's weight copies and the heads' per-step buffers; activations are not estimated.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import torch
from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from softmax_zoo import memory_plan  # noqa: E402
from softmax_zoo.config import CONFIG_DIR, compose  # noqa: E402
from softmax_zoo.losses.machinery import memory  # noqa: E402
from softmax_zoo.models import build_model, head_factory  # noqa: E402

H200 = 141 * 10**9  # bytes
GIB = 2**30
EXPERIMENTS = [
    "table5_softmax", "table5_sparse_softmax", "table3_softmax", "table3_sparse_softmax", "sparse_regime_start",
    "fig2_softmax", "fig2", "fig2_finetune_softmax", "fig2_finetune",
    "kernel_bias_full", "kernel_bias_sampled", "kernel_bias_paper_full", "kernel_bias_paper_sampled",
    "stable_kd_ptb_teacher", "stable_kd_ptb",
    "lm1b_softmax", "lm1b_adaptive", "lm1b_sampled_uniform", "lm1b_sampled_quadratic", "lm1b_sampled_unigram",
]  # fmt: skip
# Arms beside the paper's: a setting that makes an arm fit where the paper's does not.
VARIANTS = {"lm1b_sampled_quadratic": [["+loss.sampler.leaf_size=1024"]]}
# Not planned: sparse_regime (every arm starts from a sparse_regime_start checkpoint: the same model and sizes).
FIG2_PAPER = {"clinc_oos": "model=bert", "iflytek": "model=bert_chinese"}  # make/classification.mk's FIG2_MODEL_paper_*
# Classes and vocabulary of each task's data at paper scale, and where the numbers come from.
TASK_SIZES = {
    "lm1b": (793_471, "the benchmark's vocabulary (min_count 3 over the full training set, configs/task/lm1b.yaml)"),
    "ptb": (10_000, "PTB's 10,000-word vocabulary"),
    "clinc_oos": (151, "150 intents + out-of-scope"),
    "iflytek": (119, "IFLYTEK's 119 app categories"),
}
# BERT-base's published config.json (bert-base-uncased, bert-base-chinese): the hub is not reached here.
BERT_BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
             "max_position_embeddings": 512, "type_vocab_size": 2}
BERT_VOCAB = {"bert-base-uncased": 30_522, "bert-base-chinese": 21_128}


def sweep_arms(experiment: str) -> list[list[str]]:
    """The overrides of each arm of ``experiment``'s sweep (its file's hydra.sweeper.params but the seeds)."""
    params = OmegaConf.load(CONFIG_DIR / "experiment" / f"{experiment}.yaml").get("hydra", {}).get("sweeper", {}).get("params", {})
    grid = [[f"{key}={value.strip()}" for value in str(values).split(",")] for key, values in params.items() if key != "seed"]
    return [list(arm) for arm in itertools.product(*grid)]


def arms(experiment: str) -> list[list[str]]:
    """Every arm of ``experiment`` as command-line overrides (fig2's: per task, with its paper model)."""
    if experiment in ("fig2", "fig2_softmax"):
        return [[f"task={task}", model, *arm] for task, model in FIG2_PAPER.items() for arm in sweep_arms(experiment)]
    return sweep_arms(experiment) + VARIANTS.get(experiment, [])


def minilm_config() -> dict:
    """all-MiniLM-L6-v2's BertConfig fields, as configs/model/unilm_minilm_random.yaml holds them."""
    return OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "model" / "unilm_minilm_random.yaml").config)


def architecture(model_cfg) -> tuple[dict, dict, str]:
    """(model config to build, sizes it needs beside the head, how it is built): a loaded checkpoint
    replaced by its architecture with random weights, which has the same parameters."""
    plain = OmegaConf.to_container(model_cfg, resolve=True)
    random = "random weights"
    if plain.get("checkpoint") == "minilm":  # a UniLM of MiniLM
        return {**plain, "checkpoint": None, "config": minilm_config()}, {}, f"all-MiniLM-L6-v2's architecture, {random}"
    if plain.get("pretrained") == "minilm":
        note = f"all-MiniLM-L6-v2's architecture, {random}"
        if plain.get("cache_layers"):
            note += f"; only its top {plain['cache_layers']} layer(s) in the model (the lower ones' states are cached outside it)"
        return {**plain, "pretrained": None, "bert_config": minilm_config()}, {"pad_id": 0}, note
    if plain.get("pretrained") in BERT_VOCAB:
        name = plain["pretrained"]
        sizes = {"pad_id": 0, "vocab_size": BERT_VOCAB[name]}
        return {**plain, "pretrained": None, "bert_config": BERT_BASE}, sizes, f"{name}'s published architecture, {random}"
    return plain, {}, "the config's model"


def vocab_size(cfg) -> int:
    """The tokenizer's size for a seq2seq or classification model (read from its local files)."""
    from softmax_zoo.tasks.seq2seq import load_tokenizer

    return len(load_tokenizer(cfg.model.tokenizer, cfg.model.get("lowercase")))


def build_on_meta(cfg) -> tuple[torch.nn.Module, dict]:
    """The model of ``cfg`` on the meta device, and what the row says about how it was built."""
    model_cfg, sizes, note = architecture(cfg.model)
    if "bptt" in cfg.task:  # a language model: the head predicts its vocabulary
        classes, source = TASK_SIZES[cfg.task.name]
        sizes = {"vocab_size": classes}
    elif cfg.task.name in TASK_SIZES:  # a classifier: C classes over a tokenizer's vocabulary
        classes, source = TASK_SIZES[cfg.task.name]
        sizes = {"pad_id": 0, **sizes, "vocab_size": sizes.get("vocab_size") or vocab_size(cfg)}
    else:  # seq2seq: the head predicts the tokenizer's vocabulary
        classes = sizes.get("vocab_size") or vocab_size(cfg)
        source, sizes = f"the {cfg.model.tokenizer} tokenizer's vocabulary", {"vocab_size": classes}
    counts = torch.ones(classes)  # for counts: auto (unigram sampler); a size, not the data
    # The unigram sampler checks its counts' values, which a meta tensor has not: such a model is built on the CPU.
    device = "cpu" if "counts: auto" in OmegaConf.to_yaml(cfg.loss) else "meta"
    if device == "cpu":
        note += "; built on the CPU (the unigram sampler reads its counts' values)"
    with torch.device(device):
        model = build_model(OmegaConf.create(model_cfg), head_factory(cfg.loss, classes, counts), **sizes)
    return model, {"classes": classes, "classes_from": source, "model_built": note, **{k: v for k, v in sizes.items() if k == "vocab_size"}}


def estimate(experiment: str, overrides: list[str], scale: str = "paper", device_bytes: int = H200) -> dict:
    """One row: the arm's plan against ``device_bytes`` (sizes in GiB)."""
    cfg = compose([f"experiment={experiment}", f"scale={scale}", *overrides])
    model, built = build_on_meta(cfg)
    precision = "bf16" if cfg.train.precision == "auto" else cfg.train.precision  # auto: bf16 on an H200
    plan = memory_plan.plan(model, memory_plan.head_rows(cfg), cfg.train.optim, precision, free=device_bytes)
    parts = plan.parts
    optimiser = sum(v for k, v in parts.items() if k == "gradients" or k.startswith("optimiser"))
    copies = sum(v for k, v in parts.items() if k.endswith("weight copies"))
    return {
        "experiment": experiment, "arm": " ".join(overrides), "task": cfg.task.name, "model": cfg.model.name,
        "loss": cfg.loss._target_.rsplit(".", 1)[-1], **built, "rows_per_step": plan.rows, "optim": plan.optim,
        "precision": plan.precision,
        "params_gib": parts["parameters"] / GIB, "grads_optimizer_gib": optimiser / GIB, "weight_copies_gib": copies / GIB,
        "head_buffers_gib": plan.head_bytes() / GIB,
        "head_buffers": {k.split(": ", 1)[1]: v / GIB for k, v in parts.items() if k.startswith("head")},
        "activations": memory_plan.ACTIVATIONS, "total_gib": plan.total / GIB, "fits": plan.total <= device_bytes,
    }  # fmt: skip


def render(rows: list[dict], command: str, device_bytes: int) -> str:
    """results/paper_memory.md: one row per arm."""
    lines = [
        "# Memory of the paper-scale experiments on one GPU",
        "",
        f"- command: `{command}` (scripts/paper_memory.py; no GPU: every model is built on the meta device)",
        f"- device: {device_bytes / 1e9:.0f} GB = {device_bytes / GIB:.1f} GiB (an H200); precision `auto` read as bf16",
        "- parts: parameters; gradients + optimiser state (AdamW 2, Adagrad 1, SGD 0 copies); bf16 weight copies",
        "  (autocast's cache, an upper bound); the heads' per-step buffers (`OutputHead.step_buffers`, the sizes the",
        "  heads' own checks use; the largest named); **activations not estimated**, so each total is a lower bound",
        "  and `no` means the arm cannot fit. The same plan is checked before training on a GPU (softmax_zoo.memory_plan).",
        "- sizes: the classes and vocabulary of each task's data (column `classes`), the data not being prepared here",
        *(f"- {e} `{' '.join(arm)}`: not a paper arm, a setting that fits" for e, variants in VARIANTS.items() for arm in variants),
        "",
        "| experiment | arm | model (as built) | classes | rows/step | params GiB | grads+optimiser GiB | bf16 copies GiB "
        "| head buffers GiB (largest) | activations | total GiB | fits 141 GB |",
        "|---|---|---|---:|---:|---:|---:|---:|---|---|---:|---|",
    ]
    for r in rows:
        largest = max(r["head_buffers"].items(), key=lambda kv: kv[1])[0] if r["head_buffers"] else ""
        lines.append(
            f"| {r['experiment']} | {r['arm'] or '-'} | {r['model']}: {r['model_built']} | {r['classes']:,} | {r['rows_per_step']:,} "
            f"| {r['params_gib']:.2f} | {r['grads_optimizer_gib']:.2f} | {r['weight_copies_gib']:.2f} "
            f"| {r['head_buffers_gib']:.2f} ({largest}) | {r['activations']} | {r['total_gib']:.2f} | {'yes' if r['fits'] else '**no**'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--experiments", nargs="*", default=EXPERIMENTS)
    ap.add_argument("--scale", default="paper")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "paper_memory", help="writes <out>.md and <out>.json")
    args = ap.parse_args(argv)
    from softmax_zoo.files import write_text

    rows = [estimate(e, arm, args.scale) for e in args.experiments for arm in arms(e)]
    command = " ".join(["python scripts/paper_memory.py", *(argv if argv is not None else sys.argv[1:])])
    write_text(args.out.with_suffix(".md"), render(rows, command, H200))
    write_text(args.out.with_suffix(".json"), json.dumps({"command": command, "device_bytes": H200, "rows": rows}, indent=1) + "\n")
    for r in rows:
        print(f"{r['experiment']:26} {r['arm']:45} total {r['total_gib']:8.2f} GiB  {'fits' if r['fits'] else 'DOES NOT FIT'}")
    print(f"wrote {args.out.with_suffix('.md')} and {args.out.with_suffix('.json')} ({memory.gib(H200)} device)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
