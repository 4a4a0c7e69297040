"""Benchmark rows: the sparse head's output layer (forward + backward) beside the softmax head and the three-GEMM floor.

    OMP_NUM_THREADS=1 python scripts/bench_losses.py --only "sparse backward"              # every size
    OMP_NUM_THREADS=1 python scripts/bench_losses.py --only "sparse backward N=4096"       # N=4,096 only

Sparse-softmax's gradient has k + 1 nonzeros a row (Sun et al. 2021), so its head's backward is a
gather and a scatter of k + 1 rows a row (``losses/machinery/sparse_linear.py``) instead of the two backward
GEMMs. Sizes: N = 4,096 and 8,192 rows, d = 512, C = 32,000 and 128,000, float32, gradients for the
hidden states and the weight, no bias; every head with ``chunk_size="auto"``. Rows of a group:

* ``SoftmaxHead`` (the baseline) and ``SparseSoftmaxHead`` at k = 10, 20, 100;
* the three-GEMM floor: the forward GEMM and the two backward GEMMs of the same chunks, nothing else
  (what the softmax head cannot go below);
* the forward GEMM alone, and the forward GEMM + ``torch.topk`` at each k: what the sparse head
  cannot go below, and how much of it the top-k is.

Targets: the sparse head at k = 20 within 0.5× the softmax head's time and within its peak memory. Every
row's setup first runs one step of a tiny head (:func:`warm_up`), so that a row's peak memory is its step's
buffers, not the code of ops met for the first time in that process.

The title's "Faster" at the paper's own sizes (``--only "sparse step"``): the output layer's training step
(forward + backward, plain heads as its configs run them, with a bias, d = 768 as BERT-base and UniLM's) of
``SparseSoftmaxHead`` (k = 20) beside ``SoftmaxHead``, at each task's classes and batch (``PAPER_STEPS``).
"""

from __future__ import annotations

import torch

from bench_cases import Case
from bench_cases.chunked_heads import inputs, module_case
from softmax_zoo.losses import SoftmaxHead, SparseSoftmaxHead
from softmax_zoo.losses.machinery.chunked import auto_chunk_size
from softmax_zoo.losses.machinery.memory import chunk_logits

KS = (10, 20, 100)
TARGET_K = 20  # the paper's k (Sun et al. 2021, Fig. 1 and 2) and the target's
BASELINE = 'SoftmaxHead (chunk_size="auto")'
GROUP = "sparse backward"
STEP_GROUP = "sparse step"
STEP_BASELINE = "SoftmaxHead (plain)"
STEP_D = 768  # BERT-base's hidden size: the paper's classifiers and UniLM
# task -> (rows of one training batch, classes): configs/task/*.yaml's paper-scale batch sizes; Gigaword: a batch of
# 64 headlines (UniLM's --train_batch_size 128 over 2 GPUs) of 16 target tokens, BERT's 30,522-word vocabulary.
PAPER_STEPS = {"clinc_oos": (32, 151), "iflytek": (32, 119), "wos": (16, 134), "gigaword": (1024, 30_522)}


def chunk_rows(n: int, c: int, hidden: torch.Tensor, weight: torch.Tensor) -> int:
    """The rows per chunk the heads' chunk_size="auto" takes at these sizes."""
    return auto_chunk_size(n, c, chunk_logits(hidden.device, weight.numel()))


def warm_up(cls: type, extra: dict) -> None:
    """One step of a tiny ``cls`` head: the ops' code paged in before a row's peak memory is read (every row alike)."""
    head = cls(16, 256, chunk_size="auto", **extra)
    hidden = torch.randn(64, 16, requires_grad=True)
    head(hidden, torch.randint(0, 256, (64,))).backward()


def head_case(group: str, name: str, cls: type, extra: dict, n: int, d: int, c: int, chunk_size, baseline: str,
              **kw) -> Case:
    """``chunked_heads.module_case`` after :func:`warm_up` of the same head class."""
    case = module_case(group, name, cls, extra, n, d, c, chunk_size, baseline, **kw)
    setup = case.setup

    def warmed_setup():
        warm_up(cls, extra)
        return setup()

    case.setup = warmed_setup
    return case


def gemm_case(group: str, name: str, n: int, d: int, c: int, backward: bool, k: int | None = None, **kw) -> Case:
    """The heads' chunks with the GEMMs alone: z = h W^T (and top-k of z), and with ``backward`` G W and G^T h for G = z."""
    def setup():
        warm_up(SparseSoftmaxHead, {"k": 5})  # mm, topk
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


def step_cases(quick: bool) -> list[Case]:
    """The output layer's training step at the paper's sizes: plain heads with a bias, softmax beside sparse (k=20)."""
    out = []
    for task, (n, c) in PAPER_STEPS.items():
        n, d = (min(n, 64), 32) if quick else (n, STEP_D)
        group = f"{STEP_GROUP} {task} N={n} C={c}: the output layer's training step, sparse beside softmax (d={d}, float32)"
        repeats = 5 if quick else 200 if c < 1000 else 10  # the small steps take well under a millisecond
        out.append(head_case(group, STEP_BASELINE, SoftmaxHead, {}, n, d, c, None, STEP_BASELINE, repeats=repeats))
        out.append(head_case(group, f"SparseSoftmaxHead (k={TARGET_K}, plain)", SparseSoftmaxHead, {"k": TARGET_K}, n, d, c,
                             None, STEP_BASELINE, repeats=repeats))
    return out


def cases(quick: bool) -> list[Case]:
    sizes = [(256, 64, 4000)] if quick else [(n, 512, c) for n in (4096, 8192) for c in (32_000, 128_000)]
    out = []
    for n, d, c in sizes:
        group = f"{GROUP} N={n} C={c}: the sparse head's output layer beside the softmax head (d={d}, float32)"
        repeats = 3
        out.append(head_case(group, BASELINE, SoftmaxHead, {"bias": False}, n, d, c, "auto", BASELINE, repeats=repeats))
        out.append(gemm_case(group, "three GEMMs alone (the floor)", n, d, c, backward=True, repeats=repeats))
        for k in KS:
            target = {"target": ("<=", 0.5), "memory_target": 1.0} if k == TARGET_K else {}
            out.append(head_case(group, f'SparseSoftmaxHead (k={k}, chunk_size="auto")', SparseSoftmaxHead,
                                 {"k": k, "bias": False}, n, d, c, "auto", BASELINE, repeats=repeats, **target))
        out.append(gemm_case(group, "forward GEMM alone", n, d, c, backward=False, repeats=repeats))
        out += [gemm_case(group, f"forward GEMM + top-k (k={k})", n, d, c, backward=False, k=k, repeats=repeats) for k in KS]
    return out + step_cases(quick)
