"""Linear cross-entropy at a large vocabulary on a GPU: our losses and chunked heads beside the fused kernels.

    python scripts/bench_cases/gpu_linear_ce.py                       # CUDA, full sizes -> prints the table
    python scripts/bench_cases/gpu_linear_ce.py --quick --device cpu  # tiny sizes (a check that it runs)

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
import importlib.util
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "src")]

from softmax_zoo.losses import linear_cross_entropy, softmax_cross_entropy, sparse_softmax_cross_entropy, stable_cross_entropy  # noqa: E402
from softmax_zoo.timing import time_interleaved  # noqa: E402

SIZES = {"full": (8192, 4096, 128_000), "quick": (64, 32, 500)}  # (N, d, C)
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


def losses(device: torch.device) -> tuple[dict[str, Loss], dict[str, str]]:
    """Row name -> loss; and row name -> why it is skipped (a fused kernel not installed, or no GPU)."""
    rows: dict[str, Loss] = {
        BASELINE: lambda h, w, t: F.cross_entropy(h @ w.T, t),
        "softmax_cross_entropy(hidden @ W.T)": lambda h, w, t: softmax_cross_entropy(h @ w.T, t),
        "stable_cross_entropy(hidden @ W.T)": lambda h, w, t: stable_cross_entropy(h @ w.T, t),
        f"sparse_softmax_cross_entropy(hidden @ W.T, k={K})": lambda h, w, t: sparse_softmax_cross_entropy(h @ w.T, t, k=K),
        'linear_cross_entropy(loss="softmax", chunk_size="auto")': lambda h, w, t: linear_cross_entropy(h, w, t, loss="softmax"),
        'linear_cross_entropy(loss="stable_softmax", chunk_size="auto")': lambda h, w, t: linear_cross_entropy(h, w, t, loss="stable_softmax"),
        f'linear_cross_entropy(loss="sparse_softmax", k={K}, chunk_size="auto")': lambda h, w, t: linear_cross_entropy(h, w, t, loss="sparse_softmax", k=K),
    }
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


def run(dtype: torch.dtype, device: torch.device, quick: bool = False, repeats: int = 5, budget_s: float | None = None) -> list[Row]:
    """Every row at one dtype: one untimed round (compilation, autotuning), up to ``repeats`` timed
    rounds (fewer where ``budget_s`` would be exceeded; at least one), then one call per row for its
    memory and loss value."""
    n, d, c = SIZES["quick" if quick else "full"]
    start = time.perf_counter()
    hidden, weight, target = inputs(n, d, c, dtype, device)
    rows, skipped = losses(device)

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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"sizes N, d, C = {SIZES['quick']} instead of {SIZES['full']}")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    device = torch.device(args.device)
    rows = [r for dtype in (torch.float32, torch.bfloat16) for r in run(dtype, device, args.quick, args.repeats)]
    print("\n".join(table(rows)))


if __name__ == "__main__":
    main()
