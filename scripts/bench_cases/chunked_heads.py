"""Benchmark rows for ``chunk_size``: each registered logit-level head chunked beside the same head plain.

Sizes: N = 4096 rows (8 × 512 tokens), d = 512, C = 32,000 (a LLaMA-size vocabulary). The
targets: peak memory ≤ 0.5× the plain head's and time ≤ 1.2×; then the chunked softmax head at
N and 4N, whose peak memory may grow ≤ 1.5× (the chunk buffers stay the same size; only the
(N, d) hidden gradient grows). ``chunk_size="auto"`` (at most 2^24 logits per chunk: 8 chunks of 512 rows here).
Every row of a group shares the inputs and the weights; one forward + backward is timed, the
gradients freed before each call as in a training step.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from bench_cases import Case
from softmax_zoo.losses import SoftmaxHead, variants

K = 10  # the sparse head's k, as in logit_losses.py
SETTINGS = {"sparse_softmax": {"k": K}}  # the speed targets' settings; other variants: their first registered example


def heads(num_classes: int) -> dict[str, tuple[type, dict]]:
    """Head class name -> (class, constructor options) of every registered logit-level variant."""
    out = {}
    for v in variants().values():
        if issubclass(v.head, SoftmaxHead):
            out[v.head.__name__] = (v.head, SETTINGS.get(v.name) or next(iter(v.examples(num_classes).values())))
    return out


@lru_cache(maxsize=None)
def inputs(n: int, d: int, c: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """hidden (n, d) requiring grad, target (n,), weight (c, d): built once, shared by a group."""
    gen = torch.Generator().manual_seed(0)
    hidden = torch.randn(n, d, generator=gen).requires_grad_(True)
    weight = torch.randn(c, d, generator=gen).mul_(d**-0.5)  # logits of unit scale
    return hidden, torch.randint(0, c, (n,), generator=gen), weight


def head_case(group: str, name: str, head: str, n: int, d: int, c: int, chunk_size, baseline: str, **kw) -> Case:
    return module_case(group, name, *heads(c)[head], n, d, c, chunk_size, baseline, **kw)


def module_case(group: str, name: str, cls: type, extra: dict, n: int, d: int, c: int, chunk_size, baseline: str,
                **kw) -> Case:
    """The forward + backward of head ``cls(d, c, **extra)`` on the shared inputs (n, d, c)."""
    def setup():
        hidden, target, weight = inputs(n, d, c)
        module = cls(d, c, weight=torch.nn.Parameter(weight), chunk_size=chunk_size, **extra)

        def step():
            hidden.grad = None
            module.zero_grad(set_to_none=True)
            module(hidden, target).backward()

        return step

    return Case(group=group, name=name, setup=setup, baseline=baseline, **kw)


def cases(quick: bool) -> list[Case]:
    n, d, c = (256, 64, 4000) if quick else (4096, 512, 32000)
    out = []
    for head in heads(c):
        group = f"{head}, chunk_size (N={n}, d={d}, C={c})"
        plain = f"{head} (plain)"
        out += [
            head_case(group, plain, head, n, d, c, None, plain),
            head_case(group, f'{head} (chunk_size="auto")', head, n, d, c, "auto", plain,
                      target=("<=", 1.2), memory_target=0.5),
        ]
    group = f"SoftmaxHead chunk_size=\"auto\", N grows 4× (d={d}, C={c})"
    base = f"N={n}"
    out += [
        head_case(group, base, "SoftmaxHead", n, d, c, "auto", base),
        head_case(group, f"N={4 * n}", "SoftmaxHead", 4 * n, d, c, "auto", base, memory_target=1.5),
    ]
    return out
