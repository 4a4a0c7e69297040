"""Benchmark rows: the sparse head's output layer (forward + backward) beside the softmax head and the three-GEMM floor.

    OMP_NUM_THREADS=1 python scripts/bench_losses.py --only "sparse backward"              # every size
    OMP_NUM_THREADS=1 python scripts/bench_losses.py --only "sparse backward N=4096"       # N=4,096 only

Sparse-softmax's gradient has k + 1 nonzeros a row (Sun et al. 2021), so its head's backward is a
gather and a scatter of k + 1 rows a row (``losses/sparse_linear.py``) instead of the two backward
GEMMs. Sizes: N = 4,096 and 8,192 rows, d = 512, C = 32,000 and 128,000, float32, gradients for the
hidden states and the weight, no bias; every head with ``chunk_size="auto"``. Rows of a group:

* ``SoftmaxHead`` (the baseline) and ``SparseSoftmaxHead`` at k = 10, 20, 100;
* the three-GEMM floor: the forward GEMM and the two backward GEMMs of the same chunks, nothing else
  (what the softmax head cannot go below);
* the forward GEMM alone, and the forward GEMM + ``torch.topk`` at each k: what the sparse head
  cannot go below, and how much of it the top-k is.

Targets: the sparse head at k = 20 within 0.5× the softmax head's time and within its peak memory.
"""

from __future__ import annotations

import torch

from bench_cases import Case
from bench_cases.chunked_heads import inputs, module_case
from softmax_zoo.losses import SoftmaxHead, SparseSoftmaxHead
from softmax_zoo.losses.chunked import auto_chunk_size
from softmax_zoo.losses.memory import chunk_logits

KS = (10, 20, 100)
TARGET_K = 20  # the paper's k (Sun et al. 2021, Fig. 1 and 2) and the target's
BASELINE = 'SoftmaxHead (chunk_size="auto")'
GROUP = "sparse backward"


def chunk_rows(n: int, c: int, hidden: torch.Tensor, weight: torch.Tensor) -> int:
    """The rows per chunk the heads' chunk_size="auto" takes at these sizes."""
    return auto_chunk_size(n, c, chunk_logits(hidden.device, weight.numel()))


def gemm_case(group: str, name: str, n: int, d: int, c: int, backward: bool, k: int | None = None, **kw) -> Case:
    """The heads' chunks with the GEMMs alone: z = h W^T (and top-k of z), and with ``backward`` G W and G^T h for G = z."""
    def setup():
        hidden, _, weight = inputs(n, d, c)
        h = hidden.detach()
        rows = chunk_rows(n, c, h, weight)
        buffer = h.new_empty(min(n, rows), c)

        def step():
            gh, gw = (torch.empty_like(h), torch.zeros_like(weight)) if backward else (None, None)
            for s in range(0, n, rows):
                hr = h[s : s + rows]
                z = torch.mm(hr, weight.t(), out=buffer[: hr.shape[0]])  # (r, C)
                if k is not None:
                    z.topk(k, dim=1, sorted=False)
                if backward:
                    torch.mm(z, weight, out=gh[s : s + rows])
                    gw.addmm_(z.t(), hr)

        return step

    return Case(group=group, name=name, setup=setup, baseline=BASELINE, **kw)


def cases(quick: bool) -> list[Case]:
    sizes = [(256, 64, 4000)] if quick else [(n, 512, c) for n in (4096, 8192) for c in (32_000, 128_000)]
    out = []
    for n, d, c in sizes:
        group = f"{GROUP} N={n} C={c}: the sparse head's output layer beside the softmax head (d={d}, float32)"
        repeats = 3
        out.append(module_case(group, BASELINE, SoftmaxHead, {"bias": False}, n, d, c, "auto", BASELINE, repeats=repeats))
        out.append(gemm_case(group, "three GEMMs alone (the floor)", n, d, c, backward=True, repeats=repeats))
        for k in KS:
            target = {"target": ("<=", 0.5), "memory_target": 1.0} if k == TARGET_K else {}
            out.append(module_case(group, f'SparseSoftmaxHead (k={k}, chunk_size="auto")', SparseSoftmaxHead,
                                   {"k": k, "bias": False}, n, d, c, "auto", BASELINE, repeats=repeats, **target))
        out.append(gemm_case(group, "forward GEMM alone", n, d, c, backward=False, repeats=repeats))
        out += [gemm_case(group, f"forward GEMM + top-k (k={k})", n, d, c, backward=False, k=k, repeats=repeats) for k in KS]
    return out
