"""Benchmark rows for the logit-level losses: full, stable and sparse cross-entropy, stable KD.

Sizes: N = 4096 rows (a batch of 8 × 512 tokens) × C = 32,000 classes (a LLaMA-size vocabulary),
the setting of the speed targets in README.md; distillation at N = 2048 (8 × 256 tokens), T = 2.
Every row of a group uses the same inputs (one shared tensor, to keep memory low) and times
one forward + backward, the logits' gradient freed before each call as in a training step.
"""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F

from bench_cases import Case
from softmax_zoo.losses import softmax_cross_entropy, sparse_softmax_cross_entropy, stable_cross_entropy, stable_kd_loss
from softmax_zoo.losses.reference.logits import kd_ref, sparse_cross_entropy_ref

K = 10  # the sparse-softmax k of the speed target
TEMPERATURE = 2.0


@lru_cache(maxsize=None)
def ce_inputs(n: int, c: int) -> tuple[torch.Tensor, torch.Tensor]:
    """logits (n, c) requiring grad, target (n,): built once, shared by the rows of a group."""
    gen = torch.Generator().manual_seed(0)
    return torch.randn(n, c, generator=gen).requires_grad_(True), torch.randint(0, c, (n,), generator=gen)


@lru_cache(maxsize=None)
def kd_inputs(n: int, c: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Student logits (n, c) requiring grad and detached teacher logits (n, c)."""
    gen = torch.Generator().manual_seed(0)
    # In-place scaling: no transient copy raises the peak memory measured over the inputs.
    student = torch.randn(n, c, generator=gen).mul_(2).requires_grad_(True)
    return student, torch.randn(n, c, generator=gen).mul_(3)


def ce_case(group: str, name: str, fn, n: int, c: int, **kw) -> Case:
    def setup():
        logits, target = ce_inputs(n, c)

        def step():
            logits.grad = None
            fn(logits, target).backward()

        return step

    return Case(group=group, name=name, setup=setup, baseline="F.cross_entropy", **kw)


def kd_case(group: str, name: str, fn, n: int, c: int, **kw) -> Case:
    def setup():
        student, teacher = kd_inputs(n, c)

        def step():
            student.grad = None
            fn(student, teacher, temperature=TEMPERATURE).backward()

        return step

    return Case(group=group, name=name, setup=setup, baseline="reference KD (F.kl_div, autograd)", **kw)


def cases(quick: bool) -> list[Case]:
    n, c = (64, 1000) if quick else (4096, 32000)
    group = f"cross-entropy (N={n}, C={c})"
    kd_n = 32 if quick else 2048
    kd_group = f"distillation (N={kd_n}, C={c}, T={TEMPERATURE:g})"
    return [
        ce_case(group, "F.cross_entropy", F.cross_entropy, n, c),
        ce_case(group, "softmax_cross_entropy", softmax_cross_entropy, n, c),
        ce_case(group, "stable_cross_entropy", stable_cross_entropy, n, c, target=("<=", 1.2)),
        ce_case(
            group,
            f"sparse_softmax_cross_entropy (k={K})",
            lambda z, t: sparse_softmax_cross_entropy(z, t, K),
            n,
            c,
            target=("<=", 0.8),
        ),
        ce_case(
            group,
            f"reference sparse (autograd of topk + gather, k={K})",
            lambda z, t: sparse_cross_entropy_ref(z, t, K),
            n,
            c,
        ),
        kd_case(kd_group, "reference KD (F.kl_div, autograd)", kd_ref, kd_n, c),
        kd_case(kd_group, "stable_kd_loss", stable_kd_loss, kd_n, c),
    ]
