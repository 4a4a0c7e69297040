"""The sparse-softmax regime study's runs, chained and resumable (``make reproduce-sparse-regime``).

Sparse-softmax (Sun et al. 2021) trains logsumexp over Ω_k, the k largest logits, minus the
target's. Whether that helps depends on how often the target is inside Ω_k, which grows as the
model is trained. The study therefore fine-tunes from starts of increasing strength:

1. the start run (``experiment=sparse_regime_start``): softmax for ``regime.epochs`` epochs,
   keeping the checkpoint at the end of each epoch;
2. from each start epoch e (0 is the model's own initialisation), one more epoch with softmax and
   with sparse-softmax at each k (``experiment=sparse_regime regime.start_epoch=e``).

Each job is skipped when its record exists; otherwise it runs with ``resume=true``, so an
interrupted job continues from its newest checkpoint. The page is
``python -m softmax_zoo.reports sparse_regime``.

Run: ``python -m softmax_zoo.studies.sparse_regime [scale=cpu] [starts=1,2,4] [ks=20,100] [seed=0] [<train override> ...]``;
every other ``key=value`` goes to every job (e.g. ``model=unilm_tiny``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..cli_args import ArgumentError, Option, fail
from ._jobs import record_path, run_all, study_parser
from ._jobs import main as run_chain

__all__ = ["PARSER", "jobs", "main", "record_path", "run_all"]

PARSER = study_parser("sparse_regime", [
    Option("scale", "cpu", "scale of every job"),
    Option("starts", [1, 2, 4], "start epochs (0: the model's initialisation)", minimum=0),
    Option("ks", [20, 100], "the sparse arms' k", minimum=1),
    Option("seed", 0, "seed of every job"),
])


def jobs(starts: Sequence[int], ks: Sequence[int], *, scale: str, seed: int, extra: Sequence[str] = ()) -> list[list[str]]:
    """The study's jobs in the order they must run, as ``python -m softmax_zoo.train`` overrides.

    Args:
        starts: the start epochs (0: the model's initialisation); the start run lasts max(starts) epochs.
        ks: the sparse arms' k.
        scale, seed: as in every run.
        extra: overrides added to every job (a model, sizes).
    """
    if not starts or min(starts) < 0:
        raise ValueError(f"starts must be epochs >= 0, got {list(starts)}")
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be >= 1, got {list(ks)}")
    common = [f"scale={scale}", f"seed={seed}", f"regime.epochs={max(max(starts), 1)}", *extra]
    out = [["experiment=sparse_regime_start", *common]] if max(starts) > 0 else []
    for e in sorted(starts):
        arm = ["experiment=sparse_regime", f"regime.start_epoch={e}", *common]
        out.append([*arm, "loss=softmax"])
        out += [[*arm, "loss=sparse_softmax", f"loss.k={k}"] for k in ks]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = PARSER.parse(sys.argv[1:] if argv is None else argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    return run_chain(jobs(args["starts"], args["ks"], scale=args["scale"], seed=args["seed"], extra=args.rest))


if __name__ == "__main__":
    sys.exit(main())
