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
``python -m softmax_zoo.results sparse_regime``.

Run: ``python -m softmax_zoo.studies.sparse_regime [scale=cpu] [starts=1,2,4] [ks=20,100] [seed=0] [<train override> ...]``;
every other ``key=value`` goes to every job (e.g. ``model=unilm_tiny``).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import config

log = logging.getLogger(__name__)
Runner = Callable[[list[str]], object]
OPTIONS = {"scale": "cpu", "starts": "1,2,4", "ks": "20,100", "seed": "0"}


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


def record_path(overrides: Sequence[str]) -> Path:
    """Where the run of ``overrides`` writes its record (its composed results_dir, experiment and run name)."""
    cfg = config.compose(list(overrides))
    return Path(cfg.results_dir) / "runs" / cfg.experiment_name / f"{cfg.run_name}.json"


def train_in_subprocess(overrides: list[str]) -> None:
    """``python -m softmax_zoo.train <overrides>`` in a fresh process (its own Hydra log); raises on failure."""
    subprocess.run([sys.executable, "-m", "softmax_zoo.train", *overrides], check=True)


def run_all(job_list: Sequence[list[str]], runner: Runner = train_in_subprocess) -> list[Path]:
    """Run every job whose record is missing, with ``resume=true``; return the record paths in job order."""
    paths = []
    for overrides in job_list:
        path = record_path(overrides)
        if path.is_file():
            log.info("done already: %s", path)
        else:
            log.info("running %s", " ".join(overrides))
            runner([*overrides, "resume=true"])
            if not path.is_file():
                raise RuntimeError(f"the run {' '.join(overrides)} finished without writing {path}")
        paths.append(path)
    return paths


def parse(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """The study's own options (:data:`OPTIONS`, defaults filled) and the overrides for every job."""
    bad = [a for a in argv if "=" not in a]
    if bad:
        raise ValueError(f"arguments must be key=value, got {bad}")
    options = dict(OPTIONS)
    extra = []
    for arg in argv:
        key, value = arg.split("=", 1)
        if key in OPTIONS:
            options[key] = value
        else:
            extra.append(arg)
    return options, extra


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    options, extra = parse(sys.argv[1:] if argv is None else argv)
    job_list = jobs(
        [int(e) for e in options["starts"].split(",")], [int(k) for k in options["ks"].split(",")],
        scale=options["scale"], seed=int(options["seed"]), extra=extra,
    )
    for path in run_all(job_list):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
