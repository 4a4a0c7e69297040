"""Paired arms over training seeds, chained and resumable (``make reproduce-table5``, ``-table3``
and their ``-init`` rows).

A verdict needs several training seeds per arm (softmax_zoo.reports._verdicts). This runs every
arm for every seed, seed by seed so that a seed's arms finish together (and a ``start=softmax_run``
job finds its seed's softmax run). Each job is skipped when its record exists; otherwise it runs
with ``resume=true``, so an interrupted study continues where it stopped when run again.

Run: ``python -m softmax_zoo.studies.seeds arms=table5_softmax,table5_sparse_softmax seeds=0,1,2
[scale=cpu] [<train override> ...]`` (e.g. ``start=softmax_run``, ``model=unilm_base_cased``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..cli_args import Option, fail
from ._jobs import main as run_chain
from ._jobs import new_seeds, study_parser

PARSER = study_parser("seeds", [
    Option("arms", ["table5_softmax", "table5_sparse_softmax"], "the experiments (configs/experiment/) run for every seed"),
    Option("seeds", [0, 1, 2], "training seeds", minimum=0),
    Option("scale", "cpu", "scale of every job"),
])


def jobs(arms: Sequence[str], seeds: Sequence[int], *, scale: str, extra: Sequence[str] = ()) -> list[list[str]]:
    """``python -m softmax_zoo.train`` overrides of every (seed, arm), seed-major."""
    if not arms or not seeds:
        raise ValueError(f"need at least one arm and one seed, got arms={list(arms)} seeds={list(seeds)}")
    return [[f"experiment={arm}", f"scale={scale}", f"seed={seed}", *extra] for seed in seeds for arm in arms]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = PARSER.parse(sys.argv[1:] if argv is None else argv)
        job_list = jobs(args["arms"], args["seeds"], scale=args["scale"], extra=args.rest)
    except ValueError as e:  # ArgumentError included
        return fail(PARSER, e)
    more = new_seeds(args["seeds"])
    return run_chain(job_list, anew=f"give new seeds, seeds={more} (make: SEEDS={more}); their records join these on the page")


if __name__ == "__main__":
    sys.exit(main())
