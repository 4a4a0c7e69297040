"""Linear cross-entropy at a large vocabulary on a GPU: our losses and chunked heads beside the fused kernels.

    python scripts/bench_cases/gpu_linear_ce.py                       # CUDA, full sizes -> prints the table
    python scripts/bench_cases/gpu_linear_ce.py --quick --device cpu  # tiny sizes (a check that it runs)
    python scripts/bench_cases/gpu_linear_ce.py --liger-shape         # Liger's shape, CUDA only \
-> results/bench_losses_cuda_liger-shape.{md,json}

``make gpu-check`` (scripts/gpu_check.py) runs it and writes results/bench_losses_cuda.md.
Sizes: N = 8,192 tokens, d = 4,096 hidden, C = 128,000 classes (a LLaMA-3-size vocabulary and
model width). Every row computes loss(hidden @ weight.T) forward + backward, with gradients for
``hidden`` (N, d) and ``weight`` (C, d), in float32 and in bfloat16:

* unchunked: ``F.cross_entropy`` (the baseline) and our full, stable and sparse (k=10) cross-entropy
  on the (N, C) logits;
* chunked: :func:`softmax_zoo.losses.linear_cross_entropy` with ``chunk_size="auto"``
  for the same three losses, which never hold the (N, C) logits at once;
* fused kernels, when installed: Liger-Kernel's ``LigerFusedLinearCrossEntropyLoss``
  (Hsu et al. 2024, "Liger Kernel: Efficient Triton Kernels for LLM Training"; pinned 0.8.5) and
  cut-cross-entropy's ``linear_cross_entropy`` (Wijmans et al. 2025, "Cut Your Losses in
  Large-Vocabulary Language Models"; pinned 25.1.1). A row whose package is missing is skipped with
  a line saying so.

``--liger-shape``: the shape of Liger-Kernel's published fused-linear-cross-entropy benchmark
(hidden 4,096, V = 128,256, bfloat16, 4,096 to 32,768 tokens), with torch's own
``F.linear_cross_entropy`` (torch >= 2.13) beside the rows above: ``options=None`` (its default,
the reference path), ``LinearCrossEntropyOptions()`` (its "auto" chunking) and each
``batch_chunk_size`` of ``TORCH_CHUNK_SWEEP``. Without CUDA it prints one line and runs nothing.

The rows of one dtype share the inputs and are timed round-robin in one process
(:func:`softmax_zoo.timing.time_interleaved`), after one untimed round that compiles and
autotunes the Triton kernels; each row's peak memory is the rise of
``torch.cuda.max_memory_allocated`` over the inputs during one more call, gradients freed first, so
it counts the logits, the gradients of hidden and weight, and every buffer the step creates.
float32 rows run torch's matmuls at torch's default precision (no TF32); Triton kernels pick their
own (TF32 tensor cores for float32 dots).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "src")]

from softmax_zoo.losses import linear_cross_entropy, softmax_cross_entropy, sparse_softmax_cross_entropy, stable_cross_entropy  # noqa: E402
from softmax_zoo.timing import time_interleaved  # noqa: E402

SIZES = {"full": (8192, 4096, 128_000), "quick": (64, 32, 500)}  # (N, d, C)
LIGER_SHAPE = {"tokens": (4096, 8192, 16384, 32768), "d": 4096, "C": 128_256}  # Liger's published FLCE benchmark, bf16
TORCH_CHUNK_SWEEP = (1024, 2048, 4096, 8192)  # torch's batch_chunk_size candidates at N >= 4,096 tokens
K = 10  # the sparse-softmax k of the speed targets (scripts/bench_cases/logit_losses.py)
BASELINE = "F.cross_entropy(hidden @ W.T)"
# Fused kernels: row name -> (the module that must be importable, its pinned version).
FUSED = {
    "Liger LigerFusedLinearCrossEntropyLoss": ("liger_kernel", "0.8.5"),
    "cut-cross-entropy linear_cross_entropy": ("cut_cross_entropy", "25.1.1"),
}

Loss = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]  # (hidden, weight, target) -> scalar


@dataclass
class Row:
    """One measured row: all timed seconds, peak MiB over the inputs, the loss value; or why it was not run."""

    name: str
    dtype: str
    seconds: list[float]
    peak_mib: float | None
    loss: float | None = None
    skipped: str | None = None

    @property
    def median_ms(self) -> float:
        return statistics.median(self.seconds) * 1e3


def liger_loss() -> Loss:
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

    module = LigerFusedLinearCrossEntropyLoss()
    return lambda h, w, t: module(w, h, t)  # its forward takes (lin_weight, input, target)


def cce_loss() -> Loss:
    from cut_cross_entropy import linear_cross_entropy as cce

    return lambda h, w, t: cce(h, w, t)  # (embeddings (N, d), classifier (C, d), targets (N,))


def torch_lce_losses(sweep=TORCH_CHUNK_SWEEP) -> dict[str, Loss]:
    """torch's own F.linear_cross_entropy: its default (the reference path), its auto chunking, a batch_chunk_size sweep."""
    opts = {"options=None": None, "LinearCrossEntropyOptions()": torch.nn.LinearCrossEntropyOptions()}
    opts |= {f"batch_chunk_size={b}": torch.nn.LinearCrossEntropyOptions(batch_chunk_size=b, chunking_method=None) for b in sweep}
    return {f"F.linear_cross_entropy ({name})": (lambda h, w, t, o=o: F.linear_cross_entropy(h, w, t, options=o))
            for name, o in opts.items()}


def losses(device: torch.device, with_torch_lce: bool = False) -> tuple[dict[str, Loss], dict[str, str]]:
    """Row name -> loss; and row name -> why it is skipped (a fused kernel not installed, or no GPU).
    ``with_torch_lce``: torch's F.linear_cross_entropy rows too (:func:`torch_lce_losses`)."""
    rows: dict[str, Loss] = {
        BASELINE: lambda h, w, t: F.cross_entropy(h @ w.T, t),
        "softmax_cross_entropy(hidden @ W.T)": lambda h, w, t: softmax_cross_entropy(h @ w.T, t),
        "stable_cross_entropy(hidden @ W.T)": lambda h, w, t: stable_cross_entropy(h @ w.T, t),
        f"sparse_softmax_cross_entropy(hidden @ W.T, k={K})": lambda h, w, t: sparse_softmax_cross_entropy(h @ w.T, t, k=K),
        'linear_cross_entropy(loss="softmax", chunk_size="auto")': lambda h, w, t: linear_cross_entropy(h, w, t, loss="softmax"),
        'linear_cross_entropy(loss="stable_softmax", chunk_size="auto")':
            lambda h, w, t: linear_cross_entropy(h, w, t, loss="stable_softmax"),
        f'linear_cross_entropy(loss="sparse_softmax", k={K}, chunk_size="auto")':
            lambda h, w, t: linear_cross_entropy(h, w, t, loss="sparse_softmax", k=K),
    }
    if with_torch_lce:
        rows |= torch_lce_losses((16, 32) if device.type == "cpu" else TORCH_CHUNK_SWEEP)
    skipped = {}
    for (name, (module, version)), make in zip(FUSED.items(), (liger_loss, cce_loss)):
        if device.type != "cuda":
            skipped[name] = "a Triton kernel: CUDA only"
        elif importlib.util.find_spec(module) is None:
            skipped[name] = f"`{module}` not installed (pip install {module.replace('_', '-')}=={version})"
        else:
            rows[name] = make()
    return rows, skipped


def inputs(n: int, d: int, c: int, dtype: torch.dtype, device: torch.device):
    """hidden (n, d) and weight (c, d), both requiring grad, logits of unit scale; target (n,)."""
    gen = torch.Generator(device=device).manual_seed(0)
    hidden = torch.randn(n, d, generator=gen, device=device).to(dtype).requires_grad_(True)
    weight = torch.randn(c, d, generator=gen, device=device).mul_(d**-0.5).to(dtype).requires_grad_(True)
    return hidden, weight, torch.randint(0, c, (n,), generator=gen, device=device)


def measured_call(step: Callable[[], torch.Tensor], free: Callable[[], None], device: torch.device) -> tuple[float | None, float]:
    """One more call: the MiB it adds to the allocated peak over what is allocated before it
    (CUDA only, else None), and the loss it returns."""
    free()
    if device.type != "cuda":
        return None, step().item()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    loss = step()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20, loss.item()


def run(dtype: torch.dtype, device: torch.device, quick: bool = False, repeats: int = 5, budget_s: float | None = None,
        size: tuple[int, int, int] | None = None, with_torch_lce: bool = False) -> list[Row]:
    """Every row at one dtype: one untimed round (compilation, autotuning), up to ``repeats`` timed
    rounds (fewer where ``budget_s`` would be exceeded; at least one), then one call per row for its
    memory and loss value. ``size``: (N, d, C) instead of ``SIZES``."""
    n, d, c = size or SIZES["quick" if quick else "full"]
    start = time.perf_counter()
    hidden, weight, target = inputs(n, d, c, dtype, device)
    rows, skipped = losses(device, with_torch_lce)

    def free() -> None:
        hidden.grad = weight.grad = None

    def make_step(loss: Loss) -> Callable[[], torch.Tensor]:
        def step() -> torch.Tensor:
            free()
            value = loss(hidden, weight, target)
            value.backward()
            return value.detach()

        return step

    steps = {name: make_step(loss) for name, loss in rows.items()}
    for name in [n for n in steps if n in FUSED]:  # a fused kernel that fails (e.g. at this dtype) becomes a skipped row
        try:
            steps[name]()
        except Exception as err:  # noqa: BLE001 - reported in the row
            skipped[name] = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:200] if str(err) else ''}"
            del steps[name]
    times = time_interleaved(steps, repeats=1, warmup=1)
    per_round = sum(ts[0] for ts in times.values())
    left = repeats - 1 if budget_s is None else min(repeats - 1, int((budget_s - (time.perf_counter() - start)) / (2 * per_round)))
    if left > 0:  # each later round also pays one memory call per row: hence the 2x above
        for name, ts in time_interleaved(steps, repeats=left, warmup=0).items():
            times[name] += ts
    label = str(dtype).removeprefix("torch.")
    out = [Row(name, label, times[name], *measured_call(step, free, device)) for name, step in steps.items()]
    free()
    return out + [Row(name, label, [], None, skipped=why) for name, why in skipped.items()]


def table(rows: list[Row]) -> list[str]:
    """Markdown: time, × the baseline of the same dtype, peak memory and × the baseline's."""
    base = {r.dtype: r for r in rows if r.name == BASELINE and r.skipped is None}
    lines = [
        "| loss | dtype | time (ms) | × baseline | peak mem (MiB) | × baseline mem | loss value | timed calls |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r.skipped:
            lines.append(f"| {r.name} | {r.dtype} | not run: {r.skipped} | | | | | |")
            continue
        b = base.get(r.dtype)
        ratio = f"{r.median_ms / b.median_ms:.2f}" if b else ""
        mem = "" if r.peak_mib is None else f"{r.peak_mib:.0f}"
        mem_ratio = f"{r.peak_mib / b.peak_mib:.2f}" if b and r.peak_mib is not None and b.peak_mib else ""
        lines.append(f"| {r.name} | {r.dtype} | {r.median_ms:.1f} | {ratio} | {mem} | {mem_ratio} | {r.loss:.4f} | {len(r.seconds)} |")
    return lines


def liger_shape(repeats: int, out: Path) -> int:
    """``--liger-shape``: bfloat16 rows at each token count of ``LIGER_SHAPE`` -> ``out`` (.md and .json); CUDA only."""
    from softmax_zoo.files import write_text
    from softmax_zoo.timing import load_average, machine, utc_now

    if not torch.cuda.is_available():
        print("--liger-shape: CUDA only, and no CUDA device here; nothing run")
        return 0
    device, d, c = torch.device("cuda"), LIGER_SHAPE["d"], LIGER_SHAPE["C"]
    meta = {"command": "python scripts/bench_cases/gpu_linear_ce.py --liger-shape", "machine": machine(), "date": utc_now(),
            "load_average_start": load_average(), "d": d, "C": c, "dtype": "bfloat16", "groups": []}
    lines = [f"# Linear cross-entropy at Liger's shape (cuda): d={d:,}, C={c:,}, bfloat16", "",
             f"- command: `{meta['command']}`", f"- machine: {meta['machine']}", f"- date: {meta['date']}",
             "- rows: see scripts/bench_cases/gpu_linear_ce.py; peak mem: the rise of max_memory_allocated over the inputs.",
             f"- data: {out.with_suffix('.json').name}"]
    for n in LIGER_SHAPE["tokens"]:
        rows = run(torch.bfloat16, device, repeats=repeats, size=(n, d, c), with_torch_lce=True)
        torch.cuda.empty_cache()
        lines += ["", f"## N = {n:,} tokens", "", *table(rows)]
        meta["groups"].append({"tokens": n, "rows": [dataclasses.asdict(r) for r in rows]})
        print("\n".join(lines[-len(rows) - 2:]), flush=True)
    write_text(out.with_suffix(".json"), json.dumps(meta, indent=1) + "\n")
    write_text(out, "\n".join(lines) + "\n")
    print(f"wrote {out} and {out.with_suffix('.json').name}")
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"sizes N, d, C = {SIZES['quick']} instead of {SIZES['full']}")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--liger-shape", action="store_true", help="Liger's published shape with torch's own rows (CUDA only)")
    ap.add_argument("--out", type=Path, default=ROOT / "results" / "bench_losses_cuda_liger-shape.md", help="--liger-shape's page")
    args = ap.parse_args()
    if args.liger_shape:
        sys.exit(liger_shape(args.repeats, args.out))
    device = torch.device(args.device)
    rows = [r for dtype in (torch.float32, torch.bfloat16) for r in run(dtype, device, args.quick, args.repeats)]
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
