"""Check a CUDA machine before any paper-scale job, in at most 8 minutes on one GPU.

    make gpu-check          # or: python scripts/gpu_check.py [--budget-s 480] [--gigaword data/gigaword]

Runs, each timed and marked pass/fail, each part started only while its own budget (``PARTS``)
fits in what is left of the whole, else marked NOT RUN with the reason:
1. the tests marked ``cuda`` (pytest -m cuda);
2. the GPU rows of the losses benchmark (scripts/bench_cases/gpu_linear_ce.py): full / stable /
   sparse cross-entropy, unchunked and as chunked linear heads, beside ``F.cross_entropy`` and the
   fused kernels of Liger-Kernel and cut-cross-entropy, at N=8,192 tokens, d=4,096, C=128,000, in
   float32 and bfloat16: time and peak memory -> results/bench_losses_cuda.md;
3. a paper-scale slice of Table 5: ``experiment=table5_softmax scale=paper`` on the prepared
   Gigaword-10k for a few hundred optimiser steps with model=unilm_minilm_random (all-MiniLM-L6-v2's
   architecture, random weights: time and memory only), decoding 4 test examples: steps/s, peak
   memory, and from them an estimate of the full run's training time;
4. every pipeline at paper settings with a tiny model (softmax_zoo.dry_run): classification
   (fig2), Sparse-softmax Table 5 and Table 3 (UniLM, decoding included), One Billion Word (lm1b) and
   the kernel-sampler bias study, 2 optimiser steps and a small evaluation/decode each, on the GPU.

Writes results/gpu_check.md (device, versions, each item, the Table 5 slice) and
results/bench_losses_cuda.md, and exits non-zero if anything failed. Without CUDA it prints one line
saying so and exits with status 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import math
import platform
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

BUDGET_S = 480  # 8 minutes
# Seconds each part may take on one H200 (sum <= BUDGET_S); a part starts only if its budget is left.
PARTS = {"cuda-marked tests": 90, "losses bench": 150, "Table 5 slice": 100, "pipelines": 140}
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


def run_table5(out: dict, data_dir: Path, steps: int, root: Path) -> str:
    if not (data_dir / "train.jsonl").is_file():
        raise FileNotFoundError(f"{data_dir}/train.jsonl: prepare Gigaword-10k first (make data TASK=gigaword)")
    out.update(table5_slice(table5_overrides(data_dir, steps, root)))
    if out["device"] != "cuda":
        raise RuntimeError(f"the Table 5 slice ran on {out['device']}, not the GPU")
    return f"{out['steps_per_s']:.2f} steps/s, peak {out['peak_mib']:.0f} MiB; full run ≈ {out['estimate_h']:.1f} h (estimate)"


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


def versions() -> str:
    import transformers

    return (
        f"torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}), "
        f"transformers {transformers.__version__}, Python {platform.python_version()}, {platform.platform()}"
    )


def table5_section(t5: dict, data_dir: Path) -> list[str]:
    """The Table 5 slice's lines of results/gpu_check.md (empty if it did not run)."""
    if not t5:
        return []
    return [
        "",
        f"## Table 5 slice: experiment=table5_softmax scale=paper, {t5['steps']} optimiser steps",
        "",
        "Random weights of the all-MiniLM-L6-v2 architecture (model=unilm_minilm_random): time and memory only,",
        f"no quality. Data: {data_dir.name} (the prepared Gigaword-10k: the real lengths, dynamic padding);",
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


def render_check(meta: dict, results: list[tuple[str, str, float, str]], t5: dict, data_dir: Path) -> str:
    """results/gpu_check.md from the run's metadata, its items (name, status, seconds, detail) and the Table 5 slice."""
    ok = all(status == "pass" for _, status, _, _ in results)
    lines = [
        "# GPU check",
        "",
        f"- command: `make gpu-check` (`python scripts/gpu_check.py`), budget {meta['budget_s']:.0f} s "
        f"({', '.join(f'{k} {v} s' for k, v in PARTS.items())})",
        f"- device: {meta['device']}",
        f"- versions: {meta['versions']}",
        f"- date: {meta['date']}; total {meta['total_s']:.0f} s; verdict: {'pass' if ok else 'FAIL'}",
        "",
        "| item | result | time (s) | detail |",
        "|---|---|---:|---|",
        *(f"| {n} | {s} | {t:.1f} | {d.replace('|', '/')} |" for n, s, t, d in results),
        *table5_section(t5, data_dir),
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


def run_items(items: list[tuple[str, float, Callable[[], str]]], budget_s: float) -> list[tuple[str, str, float, str]]:
    """Run (name, its budget in s, fn) in order: an item starts only if its budget is left of the whole
    ``budget_s``; every failure is reported, then the next item runs."""
    start = time.monotonic()
    results = []
    for name, needs_s, fn in items:
        left = budget_s - (time.monotonic() - start)
        if left < needs_s:
            results.append((name, "NOT RUN", 0.0, f"needs up to {needs_s:.0f} s, {max(left, 0):.0f} s of the {budget_s:.0f} s budget left"))
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget-s", type=float, default=BUDGET_S, help="the whole check's seconds; parts that no longer fit are not run")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "gpu_check.md")
    ap.add_argument("--bench-out", type=Path, default=ROOT / "results" / "bench_losses_cuda.md")
    ap.add_argument("--gigaword", type=Path, default=ROOT / "data" / "gigaword", help="prepared Gigaword-10k for the Table 5 slice")
    ap.add_argument("--table5-steps", type=int, default=TABLE5_STEPS)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(f"gpu-check: no CUDA GPU visible to torch {torch.__version__} (torch.cuda.is_available() is False); nothing checked", file=sys.stderr)
        return 1
    from softmax_zoo.records import write_text
    from softmax_zoo.data.prepare.generated import generated_data

    start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="gpu_check_"))
    data = generated_data(tmp / "data")
    part = {k: v * args.budget_s / BUDGET_S for k, v in PARTS.items()}  # a smaller --budget-s shrinks each part alike
    bench: list = []
    t5: dict = {}
    items = [
        ("cuda-marked tests", part["cuda-marked tests"], lambda: run_cuda_tests(part["cuda-marked tests"])),
        # 0.8: the bench's own time estimate leaves room for its inputs and its last (memory) call
        ("losses bench, float32 and bfloat16", part["losses bench"], lambda: run_bench(bench, 0.8 * part["losses bench"], torch.device("cuda"))),
        (f"Table 5 slice ({args.table5_steps} steps, paper scale)", part["Table 5 slice"],
         lambda: run_table5(t5, args.gigaword.resolve(), args.table5_steps, tmp)),
        *((f"pipeline: {name}", part["pipelines"] / len(PIPELINES), lambda e=experiments: run_pipeline(e, data, tmp))
          for name, experiments in PIPELINES.items()),
    ]  # fmt: skip
    results = run_items(items, args.budget_s)
    meta = {
        "budget_s": args.budget_s, "total_s": time.monotonic() - start, "versions": versions(),
        "device": f"{torch.cuda.get_device_name()} ({torch.cuda.device_count()} visible, "
                  f"{torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)",
        "date": f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
    }  # fmt: skip
    write_text(args.out, render_check(meta, results, t5, args.gigaword))
    if bench:
        write_text(args.bench_out, render_bench(meta, bench))
    ok = all(status == "pass" for _, status, _, _ in results)
    print(f"[gpu-check] {'pass' if ok else 'FAIL'} in {meta['total_s']:.0f} s; wrote {args.out}" + (f" and {args.bench_out}" if bench else ""))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
