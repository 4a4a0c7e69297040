"""Benchmark rows for the adaptive softmax (Grave et al. 2017) and its cutoff search.

The setting of the speed targets in README.md: N = 4096 rows, d = 512, C = 100,000 classes, cutoffs 2,000 / 10,000 /
50,000 (tail widths 128 / 32 / 8 at div_value 4), targets drawn from Zipf's law with exponent
1.0 (P(c) ∝ 1/(c + 1), the usual fit for word frequencies: 68% of the rows fall in the
shortlist, 13% / 13% / 6% in the clusters). Every row of a group uses the same inputs and the
same weights (the head is ``AdaptiveSoftmaxHead.from_torch`` of the torch module) and times one
forward + backward, gradients freed before each call as in a training step.

The abstract's "circumvents the linear dependency on the vocabulary size" is timed against C: at each of
:data:`VOCAB_SIZES` classes (one group each, N and d fixed) the full softmax beside the adaptive softmax whose
3 cutoffs minimise the paper's cost model (:func:`optimal_cutoffs`, tail widths at div_value 4), on Zipf targets.
``python scripts/bench_losses.py --only "full softmax: time vs C"`` runs these groups alone.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from bench_cases import Case
from softmax_zoo.losses import AdaptiveSoftmaxHead, SoftmaxHead, optimal_cutoffs
from softmax_zoo.losses.methods.adaptive_cutoffs import MatmulCost
from softmax_zoo.losses.reference.adaptive import make_pair, zipf_targets

ZIPF_EXPONENT = 1.0
TORCH = "torch AdaptiveLogSoftmaxWithLoss"
OURS = "AdaptiveSoftmaxHead"
FULL = "SoftmaxHead (full softmax)"
# Illustrative cost constants (20 µs per small matmul, 50 G multiply-adds/s), given so that the
# row times the dynamic programme alone, not the calibration.
CPU_COST = MatmulCost(c_m=2e-5, lam=2e-11, w0=1e6)


VOCAB_GROUP = "adaptive softmax vs full softmax: time vs C"  # the groups' common title; reports/lm1b.py reads them
VOCAB_SIZES = (8_000, 32_000, 128_000)  # C grows 4x per step


def sizes(quick: bool) -> tuple[int, int, int, tuple[int, ...]]:
    return (256, 64, 5000, (200, 1000, 2500)) if quick else (4096, 512, 100_000, (2000, 10_000, 50_000))


@lru_cache(maxsize=None)
def inputs(quick: bool):
    """(torch module, our head, hidden (N, d) requiring grad, Zipf targets (N,)), built once."""
    n, d, c, cutoffs = sizes(quick)
    ref, head = make_pair(d, c, list(cutoffs))
    gen = torch.Generator().manual_seed(0)
    return ref, head, torch.randn(n, d, generator=gen).requires_grad_(True), zipf_targets(n, c, ZIPF_EXPONENT, gen)


def step_of(name: str, quick: bool):
    def setup():
        ref, head, hidden, target = inputs(quick)
        if name == TORCH:
            module, loss_of = ref, lambda: ref(hidden, target).loss
        elif name == OURS:
            module, loss_of = head, lambda: head(hidden, target)
        else:
            module = SoftmaxHead(hidden.shape[1], sizes(quick)[2])
            loss_of = lambda: module(hidden, target)  # noqa: E731

        def step():
            hidden.grad = None
            module.zero_grad(set_to_none=True)
            loss_of().backward()

        return step

    return setup


def cutoff_search(quick: bool):
    def setup():
        n, d, c, cutoffs = sizes(quick)
        counts = 1e9 * np.arange(1, c + 1, dtype=np.float64) ** -ZIPF_EXPONENT
        return lambda: optimal_cutoffs(counts, d, len(cutoffs), n, cost=CPU_COST)

    return setup


def vocab_step(name: str, n: int, d: int, c: int):
    """The forward + backward of the full softmax or of the cost-model adaptive softmax at C = ``c``."""
    def setup():
        gen = torch.Generator().manual_seed(0)
        hidden, target = torch.randn(n, d, generator=gen).requires_grad_(True), zipf_targets(n, c, ZIPF_EXPONENT, gen)
        if name == FULL:
            module = SoftmaxHead(d, c)
        else:
            counts = 1e9 * np.arange(1, c + 1, dtype=np.float64) ** -ZIPF_EXPONENT
            module = AdaptiveSoftmaxHead(d, c, optimal_cutoffs(counts, d, 3, n, cost=CPU_COST, div_value=4.0), div_value=4.0)

        def step():
            hidden.grad = None
            module.zero_grad(set_to_none=True)
            module(hidden, target).backward()

        return step

    return setup


def vocab_cases(quick: bool) -> list[Case]:
    """One group per C of :data:`VOCAB_SIZES`: the full softmax (baseline) and the adaptive softmax."""
    n, d = (128, 64) if quick else (2048, 256)  # d >= 4^3: every tail cluster keeps a width
    rows = []
    for c in (1_000, 4_000) if quick else VOCAB_SIZES:
        group = f"{VOCAB_GROUP} (N={n}, d={d}, C={c:,}, 3 cutoffs by the cost model, Zipf {ZIPF_EXPONENT:g})"
        rows += [Case(group, FULL, vocab_step(FULL, n, d, c), baseline=FULL, repeats=3),
                 Case(group, OURS, vocab_step(OURS, n, d, c), baseline=FULL, repeats=3)]
    return rows


def cases(quick: bool) -> list[Case]:
    n, d, c, cutoffs = sizes(quick)
    where = f"N={n}, d={d}, C={c}, cutoffs {'/'.join(map(str, cutoffs))}, Zipf {ZIPF_EXPONENT:g}"
    versus_torch = f"adaptive softmax ({where})"
    versus_full = f"adaptive softmax vs full softmax ({where})"
    return [
        Case(versus_torch, TORCH, step_of(TORCH, quick), baseline=TORCH),
        Case(versus_torch, OURS, step_of(OURS, quick), baseline=TORCH, target=("<=", 0.8)),
        # The full softmax takes ~25x longer: fewer repeats keep the group to a few minutes.
        Case(versus_full, FULL, step_of(FULL, quick), baseline=FULL, repeats=3),
        Case(versus_full, OURS, step_of(OURS, quick), baseline=FULL, target=(">=", 20)),
        Case(versus_full, TORCH, step_of(TORCH, quick), baseline=FULL),
        Case(
            f"adaptive softmax: optimal_cutoffs (C={c}, {len(cutoffs)} clusters, B={n}, d={d}, grid 512; no backward)",
            "optimal_cutoffs (given cost)",
            cutoff_search(quick),
        ),
        *vocab_cases(quick),
    ]
