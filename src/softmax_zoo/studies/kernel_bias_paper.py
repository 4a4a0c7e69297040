"""Blanc & Rendle 2018's bias study in a paper-like setting (ours), chained and resumable
(``make reproduce-kernel-bias-paper``).

The setting (configs/experiment/kernel_bias_paper_sampled.yaml says why): a dot-product output layer
without bias, plain SGD, 1,200 steps with a validation curve. The jobs: the full-softmax reference,
uniform sampling over a grid reaching m = 2,048 (so that 10-100x fewer samples is measurable), and the
quadratic kernel and our centred kernel over a smaller grid. Each job is skipped when its record
exists; otherwise it runs with ``resume=true``. The page is ``python -m softmax_zoo.reports kernel_bias``.

Run: ``python -m softmax_zoo.studies.kernel_bias_paper [scale=cpu] [seed=0] [uniform=8,32,128,512,2048]
[kernels=quadratic,quadratic_centred] [kernel_m=8,32,128] [<train override> ...]``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..cli_args import ArgumentError, Option, fail
from ._jobs import main as run_chain
from ._jobs import new_seeds, study_parser

PARSER = study_parser("kernel_bias_paper", [
    Option("scale", "cpu", "scale of every job"),
    Option("seed", 0, "seed of every job"),
    Option("uniform", [8, 32, 128, 512, 2048], "uniform sampler's sample sizes m", minimum=1),
    Option("kernels", ["quadratic", "quadratic_centred"], "kernel samplers (configs/loss/sampler/)"),
    Option("kernel_m", [8, 32, 128], "the kernels' sample sizes m", minimum=1),
])


def jobs(
    uniform_m: Sequence[int], kernels: Sequence[str], kernel_m: Sequence[int], *,
    scale: str, seed: int, extra: Sequence[str] = (),
) -> list[list[str]]:
    """The study's jobs as ``python -m softmax_zoo.train`` overrides: the full softmax, then each
    kernel at its smallest m (the most telling point), then uniform, then the rest."""
    if min([*uniform_m, *kernel_m], default=1) < 1:
        raise ValueError(f"sample sizes must be >= 1, got uniform={list(uniform_m)} kernel_m={list(kernel_m)}")
    common = [f"scale={scale}", f"seed={seed}", *extra]
    sampled = ["experiment=kernel_bias_paper_sampled", *common]
    points = [(k, m) for m in sorted(kernel_m) for k in kernels]
    points[len(kernels):len(kernels)] = [("uniform", m) for m in sorted(uniform_m)]
    return [["experiment=kernel_bias_paper_full", *common]] + [
        [*sampled, f"loss/sampler={name}", f"loss.num_samples={m}"] for name, m in points
    ]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = PARSER.parse(sys.argv[1:] if argv is None else argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    more = new_seeds([args["seed"]])
    return run_chain(jobs(args["uniform"], args["kernels"], args["kernel_m"], scale=args["scale"], seed=args["seed"],
                          extra=args.rest),
                     anew=f"give a new seed, seed={more} (make: LM_ARGS=seed={more}); its records go beside these")


if __name__ == "__main__":
    sys.exit(main())
