"""Chains of training runs that resume: each job is skipped when its record exists, else run with
``resume=true`` (an interrupted job continues from its newest checkpoint). Used by the studies that
are more than one Hydra sweep (``softmax_zoo.studies.sparse_regime``, ``.kernel_bias_paper``)."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import config
from ..cli_args import Option, Parser

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


def study_parser(study: str, options: Sequence[Option]) -> Parser:
    """The command line of ``python -m softmax_zoo.studies.<study>``: its own options, every other ``key=value`` an override of every job."""
    return Parser(f"python -m softmax_zoo.studies.{study}", options, rest="train overrides", max_positional=0)


def main(job_list: Sequence[list[str]]) -> int:
    """Run the chain and print each record's path."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for path in run_all(job_list):
        print(path)
    return 0
