"""Benchmark rows: the streamed linear KD beside the materialised KD (both (N, C) logits, then ``stable_kd_loss``).

    python scripts/bench_losses.py --only linear-kd                  # both sizes -> results/bench_losses_<device>_linear-kd.{md,json}
    python scripts/bench_losses.py --only "linear-kd N=8192 C=32000"  # one size, its own page

Sizes: d = 512 for the student and the teacher, float32, T = 2, forward KL, forward + backward with
gradients for the student's hidden states (N, d) and weight (C, d); the teacher is given by its
hidden states and weight (no gradient). C = 32,000 at N = 8,192; at C = 128,000 the materialised KD's
(N, C) buffers (:data:`MATERIALISED_BUFFERS` of them, float32) must fit :data:`MEMORY_SHARE` of this
machine's memory, so N is the largest of :data:`ROWS` that does (:func:`rows_that_fit`), and the group
title says so.

* materialised (the baseline): ``reference.distill.materialised_kd``, ``F.linear`` for both models and
  ``stable_kd_loss`` on the whole logits;
* ``linear_kd_loss`` with ``chunk_size="auto"`` and one class block (one pass over W per row chunk).

Targets: the streamed row at ≤ 0.3× the materialised KD's peak memory and ≤ 1.2× its time.
"""

from __future__ import annotations

import os
from functools import lru_cache

import torch

from bench_cases import Case
from softmax_zoo.losses import linear_kd_loss
from softmax_zoo.losses.reference.distill import materialised_kd

TEMPERATURE = 2.0
ROWS = (8192, 4096, 2048, 1024)  # N, largest first
# The materialised KD holds both logits, stable_kd_loss's three working buffers and the student's logit gradient.
MATERIALISED_BUFFERS = 6
MEMORY_SHARE = 0.25  # of the machine's memory: six engineers' processes share it
BASELINE = "materialised KD (F.linear + stable_kd_loss)"
STREAMED = 'linear_kd_loss (chunk_size="auto")'


def machine_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def rows_that_fit(c: int, budget: float) -> int:
    """The largest N of ROWS whose materialised (N, c) float32 buffers fit ``budget`` bytes (the smallest if none)."""
    return next((n for n in ROWS if MATERIALISED_BUFFERS * 4 * n * c <= budget), ROWS[-1])


@lru_cache(maxsize=None)
def inputs(n: int, d: int, c: int):
    """Student hidden (n, d) requiring grad and weight (c, d); teacher hidden and weight: built once per group."""
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(n, d, generator=gen).requires_grad_(True)
    weight = torch.randn(c, d, generator=gen).mul_(d**-0.5).requires_grad_(True)  # logits of unit scale
    return hidden, weight, torch.randn(n, d, generator=gen), torch.randn(c, d, generator=gen).mul_(d**-0.5)


def case(group: str, name: str, loss, n: int, d: int, c: int, **kw) -> Case:
    def setup():
        hidden, weight, t_hidden, t_weight = inputs(n, d, c)

        def step():
            hidden.grad = weight.grad = None
            loss(hidden, weight, t_hidden, t_weight).backward()

        return step

    return Case(group=group, name=name, setup=setup, baseline=BASELINE, **kw)


def materialised(hidden, weight, t_hidden, t_weight):
    return materialised_kd(hidden, weight, t_hidden, t_weight, temperature=TEMPERATURE)


def streamed(hidden, weight, t_hidden, t_weight):
    return linear_kd_loss(hidden, weight, teacher_hidden=t_hidden, teacher_weight=t_weight, temperature=TEMPERATURE)


def cases(quick: bool) -> list[Case]:
    d = 64 if quick else 512
    budget = MEMORY_SHARE * machine_bytes()
    sizes = [(256, 4000, "")] if quick else [(8192, 32_000, "")]
    if not quick:
        n = rows_that_fit(128_000, budget)
        need = MATERIALISED_BUFFERS * 4 * 8192 * 128_000 / 2**30
        note = "" if n == 8192 else (f", the largest N of {list(ROWS)} whose materialised KD fits {MEMORY_SHARE:.0%} of "
                                     f"this machine's {machine_bytes() / 2**30:.0f} GiB (N=8192 would need about {need:.0f} GiB)")
        sizes.append((n, 128_000, note))
    out = []
    for n, c, note in sizes:
        group = f"linear-kd N={n} C={c}: streamed beside materialised forward KD (d={d}, T={TEMPERATURE:g}, float32{note})"
        out += [case(group, BASELINE, materialised, n, d, c, repeats=3),
                case(group, STREAMED, streamed, n, d, c, target=("<=", 1.2), memory_target=0.3, repeats=3)]
    return out
