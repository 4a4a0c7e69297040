"""Benchmark rows: our chunked heads beside torch's own ``F.linear_cross_entropy`` (torch >= 2.13).

    python scripts/bench_losses.py --only torch-lce                    # every size -> results/bench_losses_<device>_torch-lce.{md,json}
    python scripts/bench_losses.py --only "torch-lce N=4096 C=32000"   # one size, its own page
    python scripts/bench_losses.py --only "torch-lce N=8192 C=32000"   # (the same for N=4096 C=128000, N=8192 C=128000)

Sizes: N = 4,096 and 8,192 rows, d = 512, C = 32,000 and 128,000, float32, forward + backward with
gradients for the hidden states (N, d) and the weight (C, d). Rows of a group share the inputs:

* ours: ``SoftmaxHead``, ``StableSoftmaxHead`` and ``SparseSoftmaxHead`` (k = 10), each with
  ``chunk_size="auto"`` and nothing tuned, and without a bias, as torch's rows (no ``linear_bias``);
* torch: ``F.linear_cross_entropy`` with ``options=None`` (its default: the reference path, which
  holds the (N, C) logits; not run where they would exceed ``REFERENCE_MAX_GIB``), with
  ``LinearCrossEntropyOptions()`` (chunking picked by torch's "auto" heuristic) and with each
  ``batch_chunk_size`` of ``CHUNK_SWEEP``; the fastest of those is "tuned torch" (the sweep line under
  the table).

Targets (relative to our ``SoftmaxHead``): stable and sparse within 1.1× its time; our softmax at
≤ 1.0× the tuned torch time and ≤ its memory is stated in the sweep line.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from bench_cases import Case
from bench_cases.chunked_heads import inputs, module_case
from softmax_zoo.losses import SoftmaxHead, SparseSoftmaxHead, StableSoftmaxHead

K = 10  # the sparse head's k, as in logit_losses.py
CHUNK_SWEEP = (512, 1024, 2048)  # torch's batch_chunk_size candidates
REFERENCE_MAX_GIB = 1.0  # the reference path holds logits and their gradient: 3-4× this in RAM
OURS = "SoftmaxHead (chunk_size=\"auto\")"
SWEEP = "torch batch_chunk_size"
HEADS = {  # bias=False: the same linear map as torch's rows
    OURS: (SoftmaxHead, {"bias": False}),
    "StableSoftmaxHead (chunk_size=\"auto\")": (StableSoftmaxHead, {"bias": False}),
    f"SparseSoftmaxHead (k={K}, chunk_size=\"auto\")": (SparseSoftmaxHead, {"k": K, "bias": False}),
}


def head_case(group: str, name: str, n: int, d: int, c: int, **kw) -> Case:
    return module_case(group, name, *HEADS[name], n, d, c, "auto", OURS, **kw)


def torch_case(group: str, name: str, n: int, d: int, c: int, options, **kw) -> Case:
    def setup():
        hidden, target, weight = inputs(n, d, c)
        weight = torch.nn.Parameter(weight)
        opts = options() if callable(options) else options

        def step():
            hidden.grad = weight.grad = None
            F.linear_cross_entropy(hidden, weight, target, options=opts).backward()

        return step

    return Case(group=group, name=name, setup=setup, baseline=OURS, **kw)


def cases(quick: bool) -> list[Case]:
    if not hasattr(F, "linear_cross_entropy"):
        return []  # torch < 2.13
    sizes = [(256, 64, 4000)] if quick else [(n, 512, c) for c in (32_000, 128_000) for n in (4096, 8192)]
    sweep = (32, 64) if quick else CHUNK_SWEEP
    out = []
    for n, d, c in sizes:
        group = f"torch-lce N={n} C={c}: our heads beside F.linear_cross_entropy (d={d}, float32)"
        repeats = 5 if c <= 32_000 else 3  # the per-round ratios of the sweep line show the spread
        out += [head_case(group, OURS, n, d, c, repeats=repeats)]
        out += [head_case(group, name, n, d, c, target=("<=", 1.1), repeats=repeats) for name in list(HEADS)[1:]]
        gib = 4 * n * c / 2**30
        if gib <= REFERENCE_MAX_GIB:
            out.append(torch_case(group, "F.linear_cross_entropy (options=None: its default, the reference path)", n, d, c, None,
                                  repeats=repeats))
        out.append(torch_case(group, "F.linear_cross_entropy (LinearCrossEntropyOptions(): auto chunking)", n, d, c,
                              torch.nn.LinearCrossEntropyOptions, repeats=repeats))
        out += [
            torch_case(group, f"F.linear_cross_entropy (batch_chunk_size={b})", n, d, c,
                       lambda b=b: torch.nn.LinearCrossEntropyOptions(batch_chunk_size=b, chunking_method=None),
                       repeats=repeats, sweep=SWEEP)
            for b in sweep
        ]
    return out
