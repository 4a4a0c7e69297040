"""Check a CUDA machine before any paper-scale job, in at most 8 minutes on one GPU.

    make gpu-check          # or: python scripts/gpu_check.py [--budget-s 480]

Runs, each timed and marked pass/fail:
1. the tests marked ``cuda`` (pytest -m cuda);
2. the GPU rows of the losses benchmark: full / stable / sparse cross-entropy (N=4096, C=32,000, the
   sizes of scripts/bench_cases/logit_losses.py) against ``F.cross_entropy``, forward + backward, in
   float32 and bfloat16;
3. every pipeline at paper settings with a tiny model (tests/engine/paper_dry_run.py): classification
   (fig2), Sparse-softmax Table 5 and Table 3 (UniLM, decoding included), One Billion Word (lm1b) and
   the kernel-sampler bias study, 2 optimiser steps and a small evaluation/decode each, on the GPU.

Writes results/gpu_check.md (device, versions, each item, the benchmark table) and exits non-zero if
anything failed. Without CUDA it prints one line saying so and exits with status 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

BUDGET_S = 480  # 8 minutes
PIPELINES = {
    "classification (fig2)": ["fig2", "fig2_softmax"],
    "Table 5 (Gigaword, UniLM)": ["table5_softmax", "table5_sparse_softmax"],
    "Table 3 (SQuAD QG, UniLM)": ["table3_softmax", "table3_sparse_softmax"],
    "lm1b": ["lm1b_softmax", "lm1b_adaptive", "lm1b_sampled_quadratic", "lm1b_sampled_uniform"],
    "kernel bias (PTB)": ["kernel_bias_full", "kernel_bias_sampled"],
}


def run_cuda_tests(deadline: float) -> str:
    """pytest -m cuda in a subprocess; returns its summary line (raises on failure)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda", "tests"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=max(10.0, deadline - time.monotonic()))
    summary = (out.stdout.strip().splitlines() or ["(no output)"])[-1]
    if out.returncode != 0:
        raise RuntimeError(f"pytest -m cuda: {summary}\n{out.stdout[-3000:]}{out.stderr[-1000:]}")
    return summary


def bench_rows(dtype: torch.dtype, n: int = 4096, c: int = 32000, repeats: int = 10) -> list[str]:
    """Markdown rows: median ms of forward + backward of each cross-entropy on the GPU, and × F.cross_entropy."""
    from softmax_zoo.losses import softmax_cross_entropy, sparse_softmax_cross_entropy, stable_cross_entropy

    gen = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(n, c, device="cuda", generator=gen).to(dtype).requires_grad_(True)
    target = torch.randint(0, c, (n,), device="cuda", generator=gen)
    rows = {
        "F.cross_entropy": F.cross_entropy,
        "softmax_cross_entropy": softmax_cross_entropy,
        "stable_cross_entropy": stable_cross_entropy,
        "sparse_softmax_cross_entropy (k=10)": lambda z, t: sparse_softmax_cross_entropy(z, t, k=10),
    }
    times: dict[str, list[float]] = {name: [] for name in rows}
    for i in range(repeats + 1):  # the first round warms up
        for name, fn in rows.items():
            logits.grad = None
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(logits, target).backward()
            torch.cuda.synchronize()
            if i:
                times[name].append(time.perf_counter() - t0)
    base = statistics.median(times["F.cross_entropy"])
    label = str(dtype).removeprefix("torch.")
    return [f"| {name} | {label} | {statistics.median(ts) * 1e3:.2f} | {statistics.median(ts) / base:.2f} |" for name, ts in times.items()]


def run_pipeline(experiments: list[str], data: dict[str, Path], root: Path) -> str:
    """Each experiment at paper scale, 2 steps + a small evaluation, on the GPU."""
    from softmax_zoo import config, engine
    from tests.engine.paper_dry_run import FIG2_TASK, paper_overrides

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget-s", type=float, default=BUDGET_S, help="stop starting new items after this many seconds")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "gpu_check.md")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print(f"gpu-check: no CUDA GPU visible to torch {torch.__version__} (torch.cuda.is_available() is False); nothing checked", file=sys.stderr)
        return 1
    from softmax_zoo.records import write_text
    from tests.engine.paper_dry_run import generated_data

    start = time.monotonic()
    deadline = start + args.budget_s
    tmp = Path(tempfile.mkdtemp(prefix="gpu_check_"))
    data = generated_data(tmp / "data")
    bench: list[str] = []
    items = [("cuda-marked tests", lambda: run_cuda_tests(deadline))]
    for dtype in (torch.float32, torch.bfloat16):
        items.append((f"losses bench, {dtype}", lambda dtype=dtype: bench.extend(bench_rows(dtype)) or "rows below"))
    for name, experiments in PIPELINES.items():
        items.append((f"pipeline: {name}", lambda e=experiments: run_pipeline(e, data, tmp)))
    results = []
    for name, fn in items:
        if time.monotonic() > deadline:
            results.append((name, "NOT RUN", 0.0, f"the {args.budget_s:.0f} s budget was spent"))
            continue
        t0 = time.monotonic()
        try:
            detail, status = fn(), "pass"
        except Exception as err:  # noqa: BLE001 - every failure is reported, then the next item runs
            detail, status = f"{type(err).__name__}: {err}".splitlines()[0][:300], "FAIL"
            traceback.print_exc()
        results.append((name, status, time.monotonic() - t0, str(detail)))
        print(f"[gpu-check] {status} {name} ({results[-1][2]:.1f} s): {detail}", flush=True)
    total = time.monotonic() - start
    ok = all(status == "pass" for _, status, _, _ in results)
    lines = [
        "# GPU check",
        "",
        f"- command: `make gpu-check` (`python scripts/gpu_check.py`), budget {args.budget_s:.0f} s",
        f"- device: {torch.cuda.get_device_name()} ({torch.cuda.device_count()} visible)",
        f"- versions: {versions()}",
        f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; total {total:.0f} s; verdict: {'pass' if ok else 'FAIL'}",
        "",
        "| item | result | time (s) | detail |",
        "|---|---|---:|---|",
        *(f"| {n} | {s} | {t:.1f} | {d.replace('|', '/')} |" for n, s, t, d in results),
        "",
        "## Losses, GPU rows (forward + backward, median of 10; N=4096, C=32,000)",
        "",
        "| loss | dtype | time (ms) | × F.cross_entropy |",
        "|---|---|---:|---:|",
        *bench,
    ]
    write_text(args.out, "\n".join(lines) + "\n")
    print(f"[gpu-check] {'pass' if ok else 'FAIL'} in {total:.0f} s; wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
