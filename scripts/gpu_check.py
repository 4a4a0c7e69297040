"""Check a CUDA machine before any paper-scale job, in at most 8 minutes on one GPU.

    make gpu-check          # or: python scripts/gpu_check.py [--budget-s 480] [--gigaword data/gigaword]

Runs, each part in its own process under a hard time limit (``PARTS``, killed when it runs past
it), each started only while its limit fits in what is left of the whole (less ``SLACK_S``), else
marked NOT RUN with the reason; each marked pass/fail:
1. the tests marked ``cuda`` (pytest -m cuda);
2. the GPU rows of the losses benchmark (scripts/bench_cases/gpu_linear_ce.py): full / stable /
   sparse cross-entropy, unchunked and as chunked linear heads, beside ``F.cross_entropy`` and the
   fused kernels of Liger-Kernel and cut-cross-entropy, at N=8,192 tokens, d=4,096, C=128,000, in
   float32 and bfloat16: time and peak memory -> results/bench_losses_cuda.md;
3. the output heads under autocast at a vocabulary of 32,768 (:func:`autocast_heads`): sampled
   softmax with ``bias=False`` (quadratic-kernel tree, its partial refresh after each step, and
   uniform), and the chunked softmax head, 3 optimiser steps each; the tree's log q checked against
   its exact kernel; the streamed linear KD (every divergence, a top-K teacher) against float64
   (:func:`linear_kd_check`);
4. the sparse head's sparse backward (:func:`sparse_backward`): its gradients against the dense
   path's in float64, bit for bit the same twice under ``torch.use_deterministic_algorithms``, and
   its forward + backward time and peak memory beside the chunked softmax head's under autocast at
   N=8,192 tokens, d=4,096, C=128,000, k=20;
5. a paper-scale slice of Table 5: ``experiment=table5_softmax scale=paper`` for a few hundred
   optimiser steps with model=unilm_minilm_random (all-MiniLM-L6-v2's architecture, random
   weights: time and memory only), decoding 4 test examples: steps/s, peak memory, and from them
   an estimate of the full run's training time. It reads the prepared Gigaword-10k where it is
   (``--gigaword``), else generates 10,000 pairs of Gigaword's mean lengths (:func:`gigaword_like`);
6. every pipeline at paper settings with a tiny model (softmax_zoo.dry_run) on generated data:
   classification (fig2), Sparse-softmax Table 5 and Table 3 (UniLM, decoding included), One
   Billion Word (lm1b) and the kernel-sampler bias study, 2 optimiser steps and a small
   evaluation/decode each, on the GPU.

Writes results/gpu_check.md (device, versions, each item, the Table 5 slice) and
results/bench_losses_cuda.md, and exits non-zero if anything failed. Without CUDA it prints one line
saying so and exits with status 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import importlib.util
import json
import math
import platform
import random
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]

from bench_cases import gpu_linear_ce  # noqa: E402
from softmax_zoo.data.prepare.generated import WORDS, write_pairs  # noqa: E402

BUDGET_S = 480  # 8 minutes
SLACK_S = 60  # left unplanned: process start-ups, writing the pages, a slow first CUDA context
# Each part's hard limit in seconds on one H200; their sum is BUDGET_S - SLACK_S.
PARTS = {"cuda-marked tests": 70, "losses bench": 90, "autocast heads": 30, "sparse backward": 20, "Table 5 slice": 90,
         "pipelines": 120}
TABLE5_STEPS = 300
GIGAWORD_TRAIN_PAIRS = 10_000  # Gigaword-10k (configs/task/gigaword.yaml): a full run's epoch
# Test modules that import wandb at collection: left out where wandb is not installed (it is only
# imported under logger=wandb, which no cuda-marked test uses).
NEEDS_WANDB = ("tests/engine/test_multirun.py", "tests/engine/test_report_wandb.py")
PIPELINES = {
    "classification (fig2)": ["fig2", "fig2_softmax"],
    "Table 5 (Gigaword, UniLM)": ["table5_softmax", "table5_sparse_softmax"],
    "Table 3 (SQuAD QG, UniLM)": ["table3_softmax", "table3_sparse_softmax"],
    "lm1b": ["lm1b_softmax", "lm1b_adaptive", "lm1b_sampled_quadratic", "lm1b_sampled_uniform"],
    "kernel bias (PTB)": ["kernel_bias_full", "kernel_bias_sampled"],
}


def cuda_test_command() -> list[str]:
    """pytest -m cuda over tests/, leaving out the modules that need wandb where it is not installed."""
    ignore = [] if importlib.util.find_spec("wandb") else [f"--ignore={m}" for m in NEEDS_WANDB]
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda", *ignore, "tests"]


def run_cuda_tests(timeout_s: float) -> str:
    """pytest -m cuda in a subprocess; returns its summary line (raises on failure)."""
    cmd = cuda_test_command()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=max(10.0, timeout_s))
    summary = (out.stdout.strip().splitlines() or ["(no output)"])[-1]
    if out.returncode != 0:
        raise RuntimeError(f"pytest -m cuda: {summary}\n{out.stdout[-3000:]}{out.stderr[-1000:]}")
    left_out = [a.removeprefix("--ignore=") for a in cmd if a.startswith("--ignore=")]
    return summary + (f" (left out, wandb not installed: {', '.join(left_out)})" if left_out else "")


def run_bench(rows: list, budget_s: float, device: torch.device) -> str:
    """Both dtypes of scripts/bench_cases/gpu_linear_ce.py, half the budget each; rows appended to ``rows``."""
    for dtype in (torch.float32, torch.bfloat16):
        rows.extend(gpu_linear_ce.run(dtype, device, budget_s=budget_s / 2))
    timed = [r for r in rows if r.skipped is None]
    return f"{len(timed)} rows timed, {len(rows) - len(timed)} not run; table: results/bench_losses_cuda.md"


def table5_overrides(data_dir: Path, steps: int, root: Path) -> list[str]:
    """Table 5's softmax arm at paper scale, ``steps`` optimiser steps, random MiniLM, 4 test examples decoded."""
    return [
        "experiment=table5_softmax", "scale=paper", "model=unilm_minilm_random", f"task.data_dir={data_dir}",
        f"train.max_steps={steps}", "train.save_steps=0", "task.eval_size=4", "task.decode.batch_size=4",
        f"results_dir={root / 'results'}", f"output_dir={root / 'checkpoints' / 'table5_slice'}",
        "allow_dirty=true",  # a timing slice, not a reproduction record: it may run from a changed tree
    ]  # fmt: skip


def table5_slice(overrides: list[str], full_train_pairs: int = GIGAWORD_TRAIN_PAIRS) -> dict:
    """Run the slice; its steps/s, peak GPU memory and the full run's estimated training time.

    Returns:
        steps, steps_per_s (optimiser steps / the Trainer's training seconds), peak_mib
        (torch.cuda.max_memory_allocated over the run; None on a CPU), precision, device, and
        full_steps = epochs × ceil(full_train_pairs / effective batch), estimate_h = full_steps / steps_per_s / 3600.
    """
    from softmax_zoo import config, engine

    cfg = config.compose(overrides)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    record = engine.run(cfg)
    timing = record["timing"]
    steps_per_s = timing["global_steps"] / timing["train_s"]
    effective_batch = cfg.train.batch_size * cfg.train.grad_accum * record["device"]["world_size"]
    full_steps = cfg.train.epochs * math.ceil(full_train_pairs / effective_batch)
    return {
        "steps": timing["global_steps"],
        "train_s": timing["train_s"],
        "steps_per_s": steps_per_s,
        "peak_mib": torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else None,
        "precision": record["device"]["precision"],
        "device": record["device"]["type"],
        "batch": effective_batch,
        "epochs": cfg.train.epochs,
        "full_steps": full_steps,
        "estimate_h": full_steps / steps_per_s / 3600,
    }


def gigaword_like(rng: random.Random, n: int) -> list[dict]:
    """n generated pairs of Gigaword's mean lengths (source ~31 words, headline ~8), for the timing slice."""
    rows = []
    for _ in range(n):
        source = rng.choices(WORDS, k=rng.randint(20, 43))
        rows.append({"source": " ".join(source), "target": " ".join(rng.choices(source, k=rng.randint(5, 11)))})
    return rows


def table5_data(prepared: Path, tmp: Path) -> tuple[Path, str]:
    """The Table 5 slice's data folder and its description: ``prepared`` if it holds train.jsonl,
    else GIGAWORD_TRAIN_PAIRS generated pairs of Gigaword's lengths written under ``tmp``."""
    if (prepared / "train.jsonl").is_file():
        return prepared, f"{prepared.name} (the prepared Gigaword-10k: the real lengths, dynamic padding)"
    rng = random.Random(0)
    write_pairs(tmp / "gigaword_like", {"train": gigaword_like(rng, GIGAWORD_TRAIN_PAIRS), "test": gigaword_like(rng, 8)})
    return tmp / "gigaword_like", (f"generated ({prepared} holds no train.jsonl): {GIGAWORD_TRAIN_PAIRS:,} pairs "
                                   "of Gigaword's mean lengths, ~31 source and ~8 target words")


def run_table5(out: dict, data_dir: Path, steps: int, root: Path) -> str:
    out.update(table5_slice(table5_overrides(data_dir, steps, root)))
    if out["device"] != "cuda":
        raise RuntimeError(f"the Table 5 slice ran on {out['device']}, not the GPU")
    return f"{out['steps_per_s']:.2f} steps/s, peak {out['peak_mib']:.0f} MiB; full run ≈ {out['estimate_h']:.1f} h (estimate)"


def autocast_heads(device: torch.device, dtype: torch.dtype, num_classes: int = 32_768, d: int = 64,
                   num_samples: int = 16, rows: int = 8, steps: int = 3) -> str:
    """The output heads as a paper run trains them, under ``dtype`` autocast at a large vocabulary.

    Sampled softmax with ``bias=False`` and the quadratic-kernel tree (every refresh after the first
    partial: ``rows`` × (1 + ``num_samples``) candidates change fewer than half of the 512 leaves of
    64 classes), the same with the uniform sampler, and the chunked softmax head: ``steps`` Adagrad
    steps each, finite losses; then the tree's log q of 64 draws per row against its exact kernel
    (float64, all C classes). Raises on any failure.
    """
    from softmax_zoo.losses import QuadraticKernelSampler, SampledSoftmaxHead, SoftmaxHead, UniformSampler
    from softmax_zoo.losses.reference.sampled import kernel_probs

    gen = torch.Generator(device).manual_seed(0)
    heads = {
        "sampled quadratic": SampledSoftmaxHead(d, num_classes, sampler=QuadraticKernelSampler(), num_samples=num_samples),
        "sampled uniform": SampledSoftmaxHead(d, num_classes, sampler=UniformSampler(num_classes), num_samples=num_samples),
        "chunked softmax": SoftmaxHead(d, num_classes, chunk_size="auto", bias=False),
    }
    tree = heads["sampled quadratic"].sampler
    done = []
    for name, head in heads.items():
        head.to(device)
        opt = torch.optim.Adagrad(head.parameters(), lr=0.1)
        for step in range(steps):
            hidden = torch.randn(rows, d, device=device, generator=gen).requires_grad_()
            target = torch.randint(0, num_classes, (rows,), device=device, generator=gen)
            before = head.weight.detach().clone()
            with torch.autocast(device.type, dtype=dtype):
                loss = head(hidden, target)
            if not bool(torch.isfinite(loss.detach())):
                raise RuntimeError(f"{name}: loss {float(loss.detach())} at step {step}")
            loss.backward()
            opt.step()
            opt.zero_grad()
            changed = torch.unique((head.weight.detach() != before).any(1).nonzero()[:, 0] // tree.leaf_size).numel()
            leaves = tree.level_sizes(num_classes)[0]
            if head is heads["sampled quadratic"] and not 0 < 2 * changed < leaves:
                raise RuntimeError(f"{name}: {changed} of {leaves} leaves changed, not a partial refresh")
        done.append(f"{name} {float(loss.detach()):.2f}")
    hidden = torch.randn(rows, d, device=device, generator=gen)
    target = torch.randint(0, num_classes, (rows,), device=device, generator=gen)
    weight = heads["sampled quadratic"].weight.detach()
    with torch.autocast(device.type, dtype=dtype):
        heads["sampled quadratic"].refresh_sampler()  # a partial refresh under autocast
        ids, log_q = tree.sample(hidden, weight, 64, exclude=target)
    error = float((log_q.double() - kernel_probs(hidden, weight, tree.alpha, target).log().gather(1, ids)).abs().max())
    if not error < 1e-3:
        raise RuntimeError(f"the tree's log q is {error:.2g} off its exact kernel under {dtype} autocast")
    return f"C={num_classes:,}, {dtype}, {steps} steps: final losses {', '.join(done)}; tree log q max error {error:.1e}"


def sparse_backward(device: torch.device, dtype: torch.dtype, n: int = 8192, d: int = 4096, num_classes: int = 128_000,
                    k: int = 20, repeats: int = 3) -> str:
    """The sparse head's sparse backward on ``device``; raises on any failure.

    Its gradients (hidden, weight, bias) against the dense path's (the logits through ``F.linear``) in float64 at
    N=64, C=5,000; the same gradients twice, bit for bit, under ``torch.use_deterministic_algorithms(True)`` (the
    sorted segment sum; cuBLAS's deterministic workspace set for the process); then the forward + backward time
    (median of ``repeats``) and peak memory of ``SparseSoftmaxHead(k)`` beside ``SoftmaxHead``, both
    ``chunk_size="auto"`` without a bias, under ``dtype`` autocast at (n, d, num_classes).
    """
    import os
    import statistics

    from softmax_zoo.losses import SoftmaxHead, SparseSoftmaxHead
    from softmax_zoo.losses.machinery.head import LinearHead

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS, read when it starts
    gen = torch.Generator(device).manual_seed(0)

    def grads(forward, head, hidden, target):
        x = hidden.clone().requires_grad_()
        head.zero_grad(set_to_none=True)
        forward(x, target).backward()
        return [x.grad, head.weight.grad, head.bias.grad]

    small = SparseSoftmaxHead(32, 5000, k=k, chunk_size=16, label_smoothing=0.1).double().to(device)
    hidden = torch.randn(64, 32, device=device, dtype=torch.float64, generator=gen)
    target = torch.randint(0, 5000, (64,), device=device, generator=gen)
    dense = lambda x, t: LinearHead.forward(small, x, t)  # noqa: E731
    got, want = grads(small, small, hidden, target), grads(dense, small, hidden, target)
    error = max(float((a - b).abs().max() / b.abs().max()) for a, b in zip(got, want))
    if not error < 1e-10:
        raise RuntimeError(f"the sparse backward is {error:.2g} off the dense path's gradients in float64")
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        small = small.float()
        runs = [grads(small, small, hidden.float(), target) for _ in range(2)]
    finally:
        torch.use_deterministic_algorithms(before)
    if not all(torch.equal(a, b) for a, b in zip(*runs)):
        raise RuntimeError("the sparse backward differs between two runs under torch.use_deterministic_algorithms(True)")
    hidden = torch.randn(n, d, device=device, generator=gen)
    target = torch.randint(0, num_classes, (n,), device=device, generator=gen)
    cuda = device.type == "cuda"
    measured = {}
    for name, cls, extra in (("softmax", SoftmaxHead, {}), (f"sparse k={k}", SparseSoftmaxHead, {"k": k})):
        with device:  # the (C, d) weight made where it is used
            head = cls(d, num_classes, chunk_size="auto", bias=False, **extra)
        seconds = []
        for _ in range(repeats + 1):  # the first: warm-up
            x = hidden.clone().requires_grad_()
            head.zero_grad(set_to_none=True)
            if cuda:
                torch.cuda.synchronize(device)
                torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device) if cuda else 0
            start = time.perf_counter()
            with torch.autocast(device.type, dtype=dtype):
                loss = head(x, target)
            loss.backward()
            if cuda:
                torch.cuda.synchronize(device)
            seconds.append(time.perf_counter() - start)
        if not bool(torch.isfinite(loss.detach())):
            raise RuntimeError(f"{name}: loss {float(loss.detach())}")
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20 if cuda else math.nan
        measured[name] = (statistics.median(seconds[1:]), peak)
        del head, x, loss
    (soft_s, soft_mib), (sparse_s, sparse_mib) = measured.values()
    return (f"float64 error {error:.1e}, deterministic runs equal; N={n:,} d={d:,} C={num_classes:,} {dtype}: softmax "
            f"{soft_s * 1e3:.1f} ms {soft_mib:.0f} MiB, sparse k={k} {sparse_s * 1e3:.1f} ms {sparse_mib:.0f} MiB "
            f"({sparse_s / soft_s:.2f}x the time, {sparse_mib / soft_mib:.2f}x the memory)")


def linear_kd_check(device: torch.device, dtype: torch.dtype, num_classes: int = 32_768, d: int = 64,
                    rows: int = 256, k: int = 32) -> str:
    """The streamed linear KD (``linear_kd_loss``) under ``dtype`` autocast at a large vocabulary, on ``device``.

    Every divergence (and a top-K teacher) in class blocks of 4,096: its loss and student gradients
    against the materialised reference (``reference.distill``) in float64 on the logits autocast
    rounds to, within 2 % (relative norm); then identical student and teacher, an exactly zero
    gradient. Raises on any failure.
    """
    from softmax_zoo.losses import linear_kd_loss
    from softmax_zoo.losses.reference.distill import divergence_ref, teacher_log_probs

    gen = torch.Generator(device).manual_seed(0)
    h = torch.randn(rows, d, device=device, generator=gen)
    w = torch.randn(num_classes, d, device=device, generator=gen) * d**-0.5 * 3
    th = torch.randn(rows, d, device=device, generator=gen)
    tw = torch.randn(num_classes, d, device=device, generator=gen) * d**-0.5 * 3
    t_logits = (th.to(dtype) @ tw.to(dtype).T).float()  # the teacher's logits as an autocast model gives them
    ids = t_logits.topk(k, dim=1).indices
    teachers = {"logits": {"teacher_logits": t_logits}, "top-K": {"teacher_topk": (ids, t_logits.gather(1, ids))}}
    errors = []
    for name, beta, teacher in [("forward_kl", 0.5, "logits"), ("reverse_kl", 0.5, "logits"), ("jsd", 0.3, "logits"),
                                ("forward_kl", 0.5, "top-K")]:
        x, wp = h.clone().requires_grad_(), w.clone().requires_grad_()
        with torch.autocast(device.type, dtype=dtype):
            loss = linear_kd_loss(x, wp, divergence=name, beta=beta, temperature=2.0, class_chunk_size=4096, **teachers[teacher])
        loss.backward()
        z = (h.to(dtype) @ w.to(dtype).T).double().requires_grad_()  # the logits autocast rounds to, then float64
        log_p = teacher_log_probs(t_logits.double(), temperature=2.0) if teacher == "logits" else teacher_log_probs(
            topk=(ids, t_logits.gather(1, ids).double()), num_classes=num_classes, temperature=2.0)
        ref = divergence_ref(z, log_p, divergence=name, beta=beta, temperature=2.0)
        ref.backward()
        ref_grads = (z.grad @ w.to(dtype).double(), z.grad.T @ h.to(dtype).double())  # d/dh, d/dW
        err = max(abs(loss.item() - ref.item()) / abs(ref.item()),
                  *(float((a.grad.double() - b).norm() / b.norm()) for a, b in zip((x, wp), ref_grads)))
        if not err < 2e-2:
            raise RuntimeError(f"linear KD {name} ({teacher} teacher) is {err:.2g} off float64 under {dtype} autocast")
        errors.append(f"{name}{' top-K' if teacher == 'top-K' else ''} {err:.1e}")
    x, wp = h.clone().requires_grad_(), w.clone().requires_grad_()
    linear_kd_loss(x, wp, teacher_hidden=h, teacher_weight=w, class_chunk_size=4096).backward()
    if bool(x.grad.any()) or bool(wp.grad.any()):
        raise RuntimeError("linear KD of identical student and teacher: a nonzero gradient")
    return f"linear KD C={num_classes:,}, {dtype}: relative error against float64 {', '.join(errors)}; identical: exactly 0"


def run_pipeline(experiments: list[str], data: dict[str, Path], root: Path) -> str:
    """Each experiment at paper scale, 2 steps + a small evaluation, on the GPU."""
    from softmax_zoo import config, engine
    from softmax_zoo.dry_run import FIG2_TASK, paper_overrides

    done = []
    for experiment in experiments:
        task = [f"task={FIG2_TASK[experiment]}"] if experiment in FIG2_TASK else []
        task_name = config.compose([f"experiment={experiment}", *task]).task.name
        cfg = config.compose([
            *paper_overrides(experiment, task_name, data),
            f"results_dir={root / 'results'}", f"output_dir={root / 'checkpoints' / experiment}",
        ])
        record = engine.run(cfg)
        if record["device"]["type"] != "cuda":
            raise RuntimeError(f"{experiment} ran on {record['device']['type']}, not the GPU")
        if record["timing"]["global_steps"] != 2:
            raise RuntimeError(f"{experiment}: {record['timing']['global_steps']} optimiser steps, expected 2")
        done.append(experiment)
    return ", ".join(done)


def table5_section(t5: dict, data_note: str) -> list[str]:
    """The Table 5 slice's lines of results/gpu_check.md (empty if it did not run)."""
    if not t5:
        return []
    return [
        "",
        f"## Table 5 slice: experiment=table5_softmax scale=paper, {t5['steps']} optimiser steps",
        "",
        "Random weights of the all-MiniLM-L6-v2 architecture (model=unilm_minilm_random): time and memory only,",
        f"no quality. Data: {data_note};",
        f"batch {t5['batch']}, {t5['precision']}, 4 test examples decoded at beams 1 and 5.",
        "",
        "| steps/s | peak GPU memory (MiB) | full run: steps | full run: training time |",
        "|---:|---:|---:|---:|",
        f"| {t5['steps_per_s']:.2f} | {t5['peak_mib']:.0f} | {t5['full_steps']:,} "
        f"({t5['epochs']} epochs × ⌈{GIGAWORD_TRAIN_PAIRS:,} / {t5['batch']}⌉) | ≈ {t5['estimate_h']:.2f} h (estimate) |",
        "",
        "The estimate is full-run steps / the slice's steps/s (the Trainer's training seconds, start-up included):",
        "training only, one GPU; decoding the 1,951 test pairs at beams 1 and 5 and the paper's UniLM",
        "checkpoint (unilm1-base-cased, larger than MiniLM) are not in it.",
    ]


def render_check(meta: dict, results: list[tuple[str, str, float, str]], t5: dict, data_note: str) -> str:
    """results/gpu_check.md from the run's metadata, its items (name, status, seconds, detail), the Table 5
    slice and the words saying which data it read."""
    ok = all(status == "pass" for _, status, _, _ in results)
    lines = [
        "# GPU check",
        "",
        f"- command: `make gpu-check` (`python scripts/gpu_check.py`), budget {meta['budget_s']:.0f} s: each part in its "
        f"own process under a hard limit ({', '.join(f'{k} {v} s' for k, v in PARTS.items())}), {SLACK_S} s of slack",
        f"- device: {meta['device']}",
        f"- versions: {meta['versions']}",
        f"- date: {meta['date']}; total {meta['total_s']:.0f} s; verdict: {'pass' if ok else 'FAIL'}",
        "",
        "| item | result | time (s) | detail |",
        "|---|---|---:|---|",
        *(f"| {n} | {s} | {t:.1f} | {d.replace('|', '/')} |" for n, s, t, d in results),
        *table5_section(t5, data_note),
    ]
    return "\n".join(lines) + "\n"


def render_bench(meta: dict, rows: list) -> str:
    """results/bench_losses_cuda.md from the run's metadata and the benchmark rows."""
    n, d, c = gpu_linear_ce.SIZES["full"]
    lines = [
        "# Losses benchmark (cuda): linear cross-entropy at a large vocabulary",
        "",
        "- command: `make gpu-check` (`python scripts/gpu_check.py`; the rows: scripts/bench_cases/gpu_linear_ce.py)",
        f"- device: {meta['device']}",
        f"- versions: {meta['versions']}",
        f"- date: {meta['date']}",
        f"- sizes: N={n:,} tokens, d={d:,}, C={c:,}; loss(hidden @ W.T) forward + backward, gradients for hidden and W",
        "- time: median of the timed calls (after one untimed round), rows of a dtype interleaved in one process;",
        "  × baseline = this row / F.cross_entropy(hidden @ W.T) of the same dtype",
        "- peak mem: rise of torch.cuda.max_memory_allocated over the inputs in one more call, gradients freed first",
        "- float32: torch matmuls at torch's default precision (no TF32); the Triton kernels choose their own",
        "",
        *gpu_linear_ce.table(rows),
    ]
    return "\n".join(lines) + "\n"


def versions() -> str:
    import transformers

    extra = []
    for module in ("liger_kernel", "cut_cross_entropy", "triton"):
        if importlib.util.find_spec(module):
            from importlib.metadata import version

            extra.append(f"{module} {version(module.replace('_', '-'))}")
    return (
        f"torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}), "
        f"transformers {transformers.__version__}, {', '.join(extra) + ', ' if extra else ''}"
        f"Python {platform.python_version()}, {platform.platform()}"
    )


def run_items(items: list[tuple[str, float, Callable[[], str]]], budget_s: float,
              slack_s: float = SLACK_S) -> list[tuple[str, str, float, str]]:
    """Run (name, its hard limit in s, fn) in order: an item starts only if its limit fits in what is
    left of ``budget_s`` less ``slack_s``; every failure is reported, then the next item runs."""
    start = time.monotonic()
    results = []
    for name, needs_s, fn in items:
        left = budget_s - slack_s - (time.monotonic() - start)
        if left < needs_s:
            results.append((name, "NOT RUN", 0.0, f"needs up to {needs_s:.0f} s, {max(left, 0):.0f} s of the "
                                                  f"{budget_s:.0f} s budget left after {slack_s:.0f} s of slack"))
            print(f"[gpu-check] NOT RUN {name}: {results[-1][3]}", flush=True)
            continue
        t0 = time.monotonic()
        try:
            detail, status = fn(), "pass"
        except Exception as err:  # noqa: BLE001 - every failure is reported, then the next item runs
            detail, status = f"{type(err).__name__}: {err}".splitlines()[0][:300], "FAIL"
            traceback.print_exc()
        results.append((name, status, time.monotonic() - t0, str(detail)))
        print(f"[gpu-check] {status} {name} ({results[-1][2]:.1f} s): {detail}", flush=True)
    return results


def in_child(argv: list[str], limit_s: float, state: Path, part: str, collected: dict) -> Callable[[], str]:
    """A function that runs ``part`` of this script in its own process, killed after ``limit_s``;
    it returns the part's detail, merges the part's data (``state/<part>.json``: "t5", the slice's
    numbers; "bench", rows as dicts) into ``collected`` and raises on the part's failure or on the limit."""

    def run() -> str:
        result = state / f"{part}.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), *argv, "--part", part, "--state", str(state)]
        try:
            subprocess.run(cmd, cwd=ROOT, timeout=limit_s, check=False)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"killed at its hard limit of {limit_s:.0f} s") from None
        if not result.is_file():
            raise RuntimeError("the part's process ended without a result (see the log above)")
        data = json.loads(result.read_text())
        if "error" in data:
            raise RuntimeError(data["error"])
        collected.setdefault("t5", {}).update(data.get("t5", {}))
        collected.setdefault("bench", []).extend(data.get("bench", []))
        return data["detail"]

    return run


def part_functions(args, state: Path) -> dict[str, Callable[[dict], str]]:
    """part id -> fn(out) for one part, run in a child process (``--part``): its detail, its data into ``out``."""
    budget = {k: v * args.budget_s / BUDGET_S for k, v in PARTS.items()}  # a smaller --budget-s shrinks each part alike
    cuda = torch.device("cuda")
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16

    def bench(out: dict) -> str:
        rows: list = []
        detail = run_bench(rows, 0.8 * budget["losses bench"], cuda)  # 0.8: room for the inputs and the memory call
        out["bench"] = [dataclasses.asdict(r) for r in rows]
        return detail

    def table5(out: dict) -> str:
        data_dir = Path(args.table5_data)
        out["t5"] = {"data": args.table5_data_note}
        return run_table5(out["t5"], data_dir, args.table5_steps, state)

    fns = {
        "tests": lambda out: run_cuda_tests(budget["cuda-marked tests"] - 10),  # pytest's own limit, inside the part's
        "bench": bench,
        "autocast": lambda out: f"{autocast_heads(cuda, dtype)}; {linear_kd_check(cuda, dtype)}",
        "sparse": lambda out: sparse_backward(cuda, dtype),
        "table5": table5,
    }
    data = {task: state / "data" / rel for task, rel in json.loads((state / "data.json").read_text()).items()}
    for i, experiments in enumerate(PIPELINES.values()):
        fns[f"pipeline{i}"] = lambda out, e=experiments: run_pipeline(e, data, state)
    return fns


def child(args) -> int:
    """Run one part (``--part``) and write its result to ``--state``/<part>.json."""
    out: dict = {}
    try:
        out["detail"] = part_functions(args, args.state)[args.part](out)
    except Exception as err:  # noqa: BLE001 - reported to the parent, which marks the part FAIL
        traceback.print_exc()
        out = {"error": f"{type(err).__name__}: {err}".splitlines()[0][:300]}
    (args.state / f"{args.part}.json").write_text(json.dumps(out))
    return 0 if "error" not in out else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget-s", type=float, default=BUDGET_S, help="the whole check's seconds; parts that no longer fit are not run")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "gpu_check.md")
    ap.add_argument("--bench-out", type=Path, default=ROOT / "results" / "bench_losses_cuda.md")
    ap.add_argument("--gigaword", type=Path, default=ROOT / "data" / "gigaword",
                    help="prepared Gigaword-10k for the Table 5 slice (generated pairs if absent)")
    ap.add_argument("--table5-steps", type=int, default=TABLE5_STEPS)
    ap.add_argument("--part", help=argparse.SUPPRESS)  # internal: run one part in this process
    ap.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--table5-data", help=argparse.SUPPRESS)
    ap.add_argument("--table5-data-note", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(f"gpu-check: no CUDA GPU visible to torch {torch.__version__} (torch.cuda.is_available() is False); nothing checked",
              file=sys.stderr)
        return 1
    if args.part:
        return child(args)
    from softmax_zoo.data.prepare.generated import generated_data
    from softmax_zoo.files import write_text

    start = time.monotonic()
    state = Path(tempfile.mkdtemp(prefix="gpu_check_"))
    data = generated_data(state / "data")
    (state / "data.json").write_text(json.dumps({task: str(path.relative_to(state / "data")) for task, path in data.items()}))
    t5_dir, t5_note = table5_data(args.gigaword.resolve(), state)
    argv = [f"--budget-s={args.budget_s}", f"--table5-steps={args.table5_steps}",
            f"--table5-data={t5_dir}", f"--table5-data-note={t5_note}"]
    limit = {k: v * args.budget_s / BUDGET_S for k, v in PARTS.items()}
    collected: dict = {}
    per_experiment = limit["pipelines"] / sum(len(e) for e in PIPELINES.values())
    items = [
        ("cuda-marked tests", limit["cuda-marked tests"], in_child(argv, limit["cuda-marked tests"], state, "tests", collected)),
        ("losses bench, float32 and bfloat16", limit["losses bench"], in_child(argv, limit["losses bench"], state, "bench", collected)),
        ("output heads and linear KD under autocast, C=32,768", limit["autocast heads"],
         in_child(argv, limit["autocast heads"], state, "autocast", collected)),
        ("sparse head's sparse backward, C=128,000", limit["sparse backward"],
         in_child(argv, limit["sparse backward"], state, "sparse", collected)),
        (f"Table 5 slice ({args.table5_steps} steps, paper scale)", limit["Table 5 slice"],
         in_child(argv, limit["Table 5 slice"], state, "table5", collected)),
        *((f"pipeline: {name}", per_experiment * len(e), in_child(argv, per_experiment * len(e), state, f"pipeline{i}", collected))
          for i, (name, e) in enumerate(PIPELINES.items())),
    ]  # fmt: skip
    results = run_items(items, args.budget_s)
    meta = {
        "budget_s": args.budget_s, "total_s": time.monotonic() - start, "versions": versions(),
        "device": f"{torch.cuda.get_device_name()} ({torch.cuda.device_count()} visible, "
                  f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)",
        "date": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
    }  # fmt: skip
    t5 = collected.get("t5", {})
    write_text(args.out, render_check(meta, results, t5 if "steps" in t5 else {}, t5_note))
    bench = [gpu_linear_ce.Row(**r) for r in collected.get("bench", [])]
    if bench:
        write_text(args.bench_out, render_bench(meta, bench))
    ok = all(status == "pass" for _, status, _, _ in results)
    print(f"[gpu-check] {'pass' if ok else 'FAIL'} in {meta['total_s']:.0f} s; wrote {args.out}"
          + (f" and {args.bench_out}" if bench else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
