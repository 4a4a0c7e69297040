"""Benchmark rows for the sampled softmax (Blanc & Rendle 2018) and its samplers.

Sizes (those of the speed targets in README.md): N = 1024 rows, d = 64, m = 64 negatives, C = 50,000 and 500,000 classes;
weight initialised as ``nn.Linear`` (the heads' default), hidden ~ N(0, 1), targets uniform.
Sampling rows time one ``sample`` call with the targets excluded; the naive row draws the same
kernel q with one ``torch.multinomial`` over all classes. The training step of the sampled head
is sampling + tree refresh + forward + backward + an SGD update of the weight (the update bumps
the weight's version, so the next step refreshes the tree as in training); the full softmax row
is ``SoftmaxHead`` forward + backward only. The candidate-logits rows time the two ways the head
computes its (n, 1 + m) logits (``softmax_zoo.losses.methods.sampled.candidate_logits``), forward + backward,
at the Penn Treebank study's sizes (n = 640 rows, d = 200, C = 10,000, uniform candidates).
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

from bench_cases import Case
from softmax_zoo.losses import (
    CentredQuadraticKernelSampler,
    QuadraticKernelSampler,
    SampledSoftmaxHead,
    SoftmaxHead,
    SoftmaxSampler,
    UniformSampler,
    UnigramSampler,
)
from softmax_zoo.losses.methods import sampled
from softmax_zoo.losses.reference.sampled import naive_kernel_sample

D, M, ALPHA = 64, 64, 100.0  # d, negatives per row, the paper's α
LR = 0.1  # SGD step of the sampled training step (only its in-place update matters here)


@lru_cache(maxsize=2)
def inputs(n: int, c: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """weight (c, d) as nn.Linear initialises it, hidden (n, d), target (n,); built once per size."""
    gen = torch.Generator().manual_seed(0)
    weight = (torch.rand(c, D, generator=gen) * 2 - 1) / math.sqrt(D)  # kaiming_uniform(a=√5) bound
    return weight, torch.randn(n, D, generator=gen), torch.randint(0, c, (n,), generator=gen)


def zipf_counts(c: int) -> torch.Tensor:
    return 1.0 / torch.arange(1, c + 1, dtype=torch.float64)


def make_sampler(kind: str, c: int):
    if kind == "uniform":
        return UniformSampler(c)
    if kind == "unigram":
        return UnigramSampler(zipf_counts(c), power=0.75)
    if kind == "kernel":
        return QuadraticKernelSampler(alpha=ALPHA)
    if kind == "centred":
        return CentredQuadraticKernelSampler(alpha=ALPHA)
    return SoftmaxSampler()


def sampling_case(group: str, kind: str, n: int, c: int, **kw) -> Case:
    def setup():
        weight, hidden, target = inputs(n, c)
        if kind == "naive":
            return lambda: naive_kernel_sample(hidden, weight, ALPHA, M, exclude=target)
        sampler = make_sampler(kind, c)
        sampler.refresh(weight)
        return lambda: sampler.sample(hidden, weight, M, exclude=target)

    name = {
        "uniform": "UniformSampler",
        "unigram": "UnigramSampler (Zipf counts, power 0.75)",
        "kernel": f"QuadraticKernelSampler tree (C={c:,})",
        "centred": "CentredQuadraticKernelSampler tree (ours: centred kernel, d + 1)",
        "softmax": "SoftmaxSampler (exact, O(C·d))",
        "naive": "naive torch.multinomial over all C, kernel q",
    }[kind]
    return Case(group=group, name=name, setup=setup, **kw)


def refresh_case(group: str, name: str, n: int, c: int, changed_rows: int | None, **kw) -> Case:
    """Tree refresh: a full rebuild (``changed_rows=None``) or an update after that many rows moved."""

    def setup():
        weight, _, _ = inputs(n, c)
        sampler = QuadraticKernelSampler(alpha=ALPHA)
        sampler.refresh(weight)
        moving = weight.clone()
        rows = None if changed_rows is None else torch.randperm(c, generator=torch.Generator().manual_seed(1))[:changed_rows]

        def step():
            if rows is None:
                sampler._W = None  # forget the tree: the next refresh rebuilds it
            else:
                moving[rows] += 1e-3
            sampler.refresh(moving)

        return step

    return Case(group=group, name=name, setup=setup, **kw)


def train_case(group: str, name: str, kind: str, n: int, c: int, **kw) -> Case:
    def setup():
        weight, hidden, target = inputs(n, c)
        hidden = hidden.clone().requires_grad_(True)
        if kind == "full":
            head = SoftmaxHead(D, c, bias=False)
        else:
            head = SampledSoftmaxHead(D, c, sampler=make_sampler(kind, c), num_samples=M)
        with torch.no_grad():
            head.weight.copy_(weight)

        def step():
            hidden.grad = head.weight.grad = None
            head(hidden, target).backward()
            if kind != "full":
                with torch.no_grad():
                    head.weight.sub_(head.weight.grad, alpha=LR)  # SGD: next step refreshes the sampler

        return step

    return Case(group=group, name=name, setup=setup, baseline="SoftmaxHead forward+backward", **kw)


def logits_case(group: str, name: str, ratio: float, n: int, c: int, d: int, m: int, **kw) -> Case:
    """candidate_logits forward+backward with its path forced (ratio 0: per-row gather; inf: shared GEMM)."""
    def setup():
        gen = torch.Generator().manual_seed(0)
        hidden = torch.randn(n, d, generator=gen, requires_grad=True)
        weight = torch.randn(c, d, generator=gen, requires_grad=True)
        cand = torch.randint(0, c, (n, 1 + m), generator=gen)

        def step():
            saved, sampled.SHARED_GEMM_RATIO = sampled.SHARED_GEMM_RATIO, ratio
            try:
                hidden.grad = weight.grad = None
                sampled.candidate_logits(hidden, weight, cand).logsumexp(1).sum().backward()
            finally:
                sampled.SHARED_GEMM_RATIO = saved

        return step

    return Case(group=group, name=name, setup=setup, **kw)


def logits_cases(quick: bool) -> list[Case]:
    n, c, d = (64, 1_000, 32) if quick else (640, 10_000, 200)
    rows = []
    for m in (32, 512, 2048) if not quick else (8, 256):
        distinct = c * (1 - (1 - 1 / c) ** (n * (1 + m)))  # expected distinct uniform candidates
        shared = distinct <= sampled.SHARED_GEMM_RATIO * (1 + m)
        group = f"sampled softmax: candidate logits at m={m} (n={n}, d={d}, C={c:,}, fwd+bwd)"
        gather = "per-row gather" + ("" if shared else " (the head's choice)")
        rows += [
            logits_case(group, gather, 0.0, n, c, d, m, baseline=gather),
            logits_case(group, "one GEMM over the distinct candidates" + (" (the head's choice)" if shared else ""),
                        math.inf, n, c, d, m, baseline=gather),
        ]
    return rows


def cases(quick: bool) -> list[Case]:
    n = 64 if quick else 1024
    small, large = (2_000, 20_000) if quick else (50_000, 500_000)
    rows = []
    naive = "naive torch.multinomial over all C, kernel q"
    for c, kinds, repeats in ((small, ("naive", "kernel", "centred", "uniform", "unigram", "softmax"), 5),
                              (large, ("naive", "kernel", "centred", "uniform", "unigram"), 3)):  # softmax ≈ naive: O(C·d)
        group = f"sampled softmax: sampling time per sampler (N={n}, m={M}, d={D}, C={c:,}, targets excluded)"
        rows += [sampling_case(group, k, n, c, baseline=naive, repeats=repeats) for k in kinds]
    group = f"sampled softmax: tree sampling time vs C (N={n}, m={M}, d={D})"
    base = f"QuadraticKernelSampler tree (C={small:,})"
    rows += [
        sampling_case(group, "kernel", n, small, baseline=base, repeats=7),
        sampling_case(group, "kernel", n, large, baseline=base, target=("<=", 1.6), repeats=7),
    ]
    group = f"sampled softmax: tree refresh (d={D}, C={large:,})"
    rebuild = "rebuild from scratch"
    rows += [
        refresh_case(group, rebuild, n, large, None, baseline=rebuild),
        refresh_case(group, f"after {n * (M + 1):,} changed rows (one sampled step's: compare, then rebuild)", n, large, n * (M + 1),
                     baseline=rebuild),
        refresh_case(group, "update after 1,000 changed rows", n, large, 1000, baseline=rebuild),
    ]
    group = f"sampled softmax: training step (N={n}, m={M}, d={D}, C={large:,})"
    rows += [
        train_case(group, "SoftmaxHead forward+backward", "full", n, large, repeats=3),
        train_case(group, "SampledSoftmaxHead + QuadraticKernelSampler (sample+refresh+fwd+bwd+SGD)", "kernel", n, large,
                   target=(">=", 3.0), repeats=3),
        train_case(group, "SampledSoftmaxHead + UniformSampler (sample+fwd+bwd+SGD)", "uniform", n, large, repeats=3),
        train_case(group, "SampledSoftmaxHead + UnigramSampler (sample+fwd+bwd+SGD)", "unigram", n, large, repeats=3),
    ]
    return rows + logits_cases(quick)
