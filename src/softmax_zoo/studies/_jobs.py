"""Chains of training runs that resume: each job is skipped when its record exists, else run with
``resume=true`` (an interrupted job continues from its newest checkpoint). Used by the studies that
are more than one Hydra sweep (``softmax_zoo.studies.sparse_regime``, ``.kernel_bias_paper``)."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .. import config

log = logging.getLogger(__name__)
Runner = Callable[[list[str]], object]


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


def parse(argv: Sequence[str], options: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """A study's own ``key=value`` options (``options`` gives the keys and defaults) and the overrides for every job."""
    bad = [a for a in argv if "=" not in a]
    if bad:
        raise ValueError(f"arguments must be key=value, got {bad}")
    chosen = dict(options)
    extra = []
    for arg in argv:
        key, value = arg.split("=", 1)
        if key in options:
            chosen[key] = value
        else:
            extra.append(arg)
    return chosen, extra


def int_list(text: str, name: str) -> list[int]:
    """``"1,2,4"`` -> [1, 2, 4]; a clear error naming the option otherwise."""
    try:
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"{name} must be comma-separated integers, got {text!r}") from None


def main(job_list: Sequence[list[str]]) -> int:
    """Run the chain and print each record's path."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for path in run_all(job_list):
        print(path)
    return 0
