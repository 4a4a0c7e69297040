"""Vocabulary-parallel heads against one process: peak memory per rank and time per step, side by side.

One run measures, for each head, a training step (forward + backward) of the one-process head and
of its :class:`~softmax_zoo.losses.parallel.vocab_parallel_head.VocabParallelHead` on 2 gloo processes, at
C = 131,072 classes on CPU (float32, one thread per process). Each configuration runs in fresh
processes (spawned one after the other), so their memory is measured apart:

- memory: the head's weight plus the step's peak resident set over the resident set before the
  step (``VmHWM`` reset through ``/proc/self/clear_refs``; the gradients are allocated in the step);
- time: the median of ``--steps`` steps after one warm-up step.

Usage::

    python scripts/bench_vocab_parallel.py        # -> results/bench_vocab_parallel_cpu.{json,md}
    python scripts/bench_vocab_parallel.py --classes 8192 --rows 64 --out /tmp/b   # a quick check
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from softmax_zoo.files import write_text
from softmax_zoo.losses import SoftmaxHead, SparseSoftmaxHead
from softmax_zoo.losses.parallel.vocab_parallel import VocabShard
from softmax_zoo.losses.parallel.vocab_parallel_head import VocabParallelHead

HEADS = {
    "softmax": (SoftmaxHead, {}),
    "softmax, chunked": (SoftmaxHead, {"chunk_size": "auto"}),
    "sparse (k=20)": (SparseSoftmaxHead, {"k": 20}),
}
MIB = 2**20


def _rss_peak_reset() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident set


def _status(field: str) -> int:
    """A /proc/self/status field in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _measure(rank: int, world_size: int, head_name: str, args, store_file: str, out: str) -> None:
    torch.set_num_threads(1)
    sharded = world_size > 1
    if sharded:
        dist.init_process_group("gloo", store=dist.FileStore(store_file, world_size), rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(minutes=30))
    cls, options = HEADS[head_name]
    torch.manual_seed(0)
    head = cls(args.dim, args.classes, bias=False, **options)
    if sharded:
        head = VocabParallelHead(head, VocabShard.even(args.classes))
    hidden = torch.randn(args.rows, args.dim, requires_grad=True)
    target = torch.randint(0, args.classes, (args.rows,))
    times, peaks = [], []
    for step in range(args.steps + 1):
        head.zero_grad()  # the gradients are allocated inside the step, so its peak counts them
        hidden.grad = None
        before = _status("VmRSS")
        _rss_peak_reset()
        if sharded:
            dist.barrier()
        t0 = time.perf_counter()
        head(hidden, target).backward()
        if sharded:
            dist.barrier()
        times.append(time.perf_counter() - t0)
        peaks.append(_status("VmHWM") - before)
    weight = sum(p.numel() * p.element_size() for p in head.parameters())
    result = {"rank": rank, "step_s": statistics.median(times[1:]), "step_peak_mib": max(peaks[1:]) / MIB,
              "weight_mib": weight / MIB}
    Path(out, f"{world_size}-{rank}.json").write_text(json.dumps(result))
    if sharded:
        dist.destroy_process_group()


def run(head_name: str, world_size: int, args) -> list[dict]:
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(_measure, args=(world_size, head_name, args, str(Path(tmp, "store")), tmp), nprocs=world_size)
        return [json.loads(Path(tmp, f"{world_size}-{r}.json").read_text()) for r in range(world_size)]


def page(data: dict) -> str:
    a = data["settings"]
    lines = [
        "# Vocabulary-parallel heads: memory per rank and time per step (CPU)",
        "",
        (f"`python scripts/bench_vocab_parallel.py` (data: `bench_vocab_parallel_cpu.json`). C = {a['classes']:,} classes, "
        f"d = {a['dim']}, N = {a['rows']} rows, float32, one thread per process, gloo; the one-process head against its "
        f"{a['world_size']}-rank split (`VocabParallelHead`); median of {a['steps']} steps of forward + backward. "
        "Memory: the head's weight plus the step's peak resident set over the one before it (which holds the "
        "gradients, the logits and the loss's buffers)."),
        "",
        (f"Machine: {a['machine']}. It was shared with other jobs while this ran, so the times are noisy; the ranks "
         "of a split run compete for the same cores as well."),
        "",
        "| head | memory, 1 process (MiB) | memory per rank (MiB) | ratio | step, 1 process (s) | step, split (s) | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in data["heads"].items():
        one, ranks = row["one"][0], row["split"]
        mem_one = one["step_peak_mib"] + one["weight_mib"]
        mem_rank = max(r["step_peak_mib"] + r["weight_mib"] for r in ranks)
        step_split = max(r["step_s"] for r in ranks)
        lines.append(f"| {name} | {mem_one:.0f} | {mem_rank:.0f} | {mem_rank / mem_one:.2f} | {one['step_s']:.3f} | "
                     f"{step_split:.3f} | {step_split / one['step_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=131072)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--rows", type=int, default=512)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--heads", nargs="+", default=list(HEADS), choices=list(HEADS))
    parser.add_argument("--out", default="results/bench_vocab_parallel_cpu")
    args = parser.parse_args()
    data = {"settings": {"classes": args.classes, "dim": args.dim, "rows": args.rows, "world_size": args.world_size,
                         "steps": args.steps, "machine": f"{os.cpu_count()} CPU cores, torch {torch.__version__}"},
            "heads": {}}
    for name in args.heads:
        data["heads"][name] = {"one": run(name, 1, args), "split": run(name, args.world_size, args)}
        print(name, json.dumps(data["heads"][name]))
    write_text(Path(args.out + ".json"), json.dumps(data, indent=1) + "\n")
    write_text(Path(args.out + ".md"), page(data))


if __name__ == "__main__":
    main()
