"""The sparse-softmax regime study's runs, chained and resumable (``make reproduce-sparse-regime``).

Sparse-softmax (Sun et al. 2021) trains logsumexp over Ω_k, the k largest logits, minus the
target's. Whether that helps depends on how often the target is inside Ω_k, which grows as the
model is trained. The study therefore fine-tunes from starts of increasing strength:

1. the start run (``experiment=sparse_regime_start``, seed ``start_seed``): softmax with a
   learning-rate schedule of ``epochs`` epochs (``regime.epochs``, part of its name), keeping the
   checkpoint at the end of each epoch. Starts past ``epochs`` continue that same run (a second job,
   the same run resumed with ``train.epochs`` = the largest start): its first ``epochs`` epochs and
   their checkpoints stay as they were, and the schedule is stretched to the new length from the
   step resumed, so the learning rate rises again there;
2. from each start epoch e (0 is the model's own initialisation), one more epoch with softmax and
   with sparse-softmax at each k, once per fine-tuning seed in ``seeds``
   (``experiment=sparse_regime regime.start_epoch=e seed=s``; every seed starts from the same run).

Each job is skipped when its record exists and trained as long as the job asks; otherwise it runs
with ``resume=true``, so an interrupted job continues from its newest checkpoint. The page is
``python -m softmax_zoo.reports sparse_regime``.

Run: ``python -m softmax_zoo.studies.sparse_regime [scale=cpu] [starts=1,2,4] [ks=20,100] [seeds=0]
[start_seed=0] [epochs=N] [<train override> ...]``; every other ``key=value`` goes to every job
(e.g. ``model=unilm_tiny``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..cli_args import ArgumentError, Option, fail
from ._jobs import main as run_chain
from ._jobs import new_seeds, record_path, run_all, study_parser

__all__ = ["PARSER", "jobs", "main", "record_path", "run_all"]

PARSER = study_parser("sparse_regime", [
    Option("scale", "cpu", "scale of every job"),
    Option("starts", [1, 2, 4], "start epochs (0: the model's initialisation)", minimum=0),
    Option("ks", [20, 100], "the sparse arms' k", minimum=1),
    Option("seeds", [0], "fine-tuning seeds of every arm", minimum=0),
    Option("start_seed", 0, "seed of the start run", minimum=0),
    Option("epochs", None, "the start run's schedule in epochs (default: the largest start); later starts continue it",
           kind=int, minimum=1),
])


def jobs(starts: Sequence[int], ks: Sequence[int], *, scale: str, seeds: Sequence[int] = (0,), start_seed: int = 0,
         epochs: int | None = None, extra: Sequence[str] = ()) -> list[list[str]]:
    """The study's jobs in the order they must run, as ``python -m softmax_zoo.train`` overrides.

    Args:
        starts: the start epochs (0: the model's initialisation).
        ks: the sparse arms' k.
        scale: as in every run.
        seeds: the arms' fine-tuning seeds.
        start_seed: the start run's seed (every arm starts from that one run).
        epochs: the start run's schedule length (default: the largest start); the start run lasts
            max(starts) epochs, continuing past its schedule when that is longer.
        extra: overrides added to every job (a model, sizes).
    """
    if not starts or min(starts) < 0:
        raise ValueError(f"starts must be epochs >= 0, got {list(starts)}")
    if not ks or min(ks) < 1:
        raise ValueError(f"ks must be >= 1, got {list(ks)}")
    if not seeds or min(seeds) < 0:
        raise ValueError(f"seeds must be >= 0, got {list(seeds)}")
    last = max(starts)
    epochs = epochs or max(last, 1)
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    common = [f"scale={scale}", f"regime.epochs={epochs}", *extra]
    start = ["experiment=sparse_regime_start", f"scale={scale}", f"seed={start_seed}", f"regime.epochs={epochs}", *extra]
    out = ([start] + ([[*start, f"train.epochs={last}"]] if last > epochs else [])) if last > 0 else []
    from_start = [f"regime.start_seed={start_seed}"] if start_seed != 0 else []
    for e in sorted(starts):
        for seed in sorted(seeds):
            arm = ["experiment=sparse_regime", f"regime.start_epoch={e}", f"seed={seed}", *common, *from_start]
            out.append([*arm, "loss=softmax"])
            out += [[*arm, "loss=sparse_softmax", f"loss.k={k}"] for k in ks]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = PARSER.parse(sys.argv[1:] if argv is None else argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    more = new_seeds(args["seeds"])
    return run_chain(jobs(args["starts"], args["ks"], scale=args["scale"], seeds=args["seeds"],
                          start_seed=args["start_seed"], epochs=args["epochs"], extra=args.rest),
                     anew=f"give new fine-tuning seeds, seeds={more} (make: REGIME_SEEDS={more}); their records join these on the page")


if __name__ == "__main__":
    sys.exit(main())
