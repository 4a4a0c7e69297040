"""Chains of training runs that resume: each job is skipped when its record exists, else run with
``resume=true`` (an interrupted job continues from its newest checkpoint). A job that asks a longer
run than its record holds (``train.epochs`` or ``train.max_steps`` above the recorded value) is
continued from its checkpoints the same way. Used by the studies that are more than one Hydra
sweep (``softmax_zoo.studies.sparse_regime``, ``.kernel_bias_paper``, ``.seeds``)."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .. import config
from ..cli_args import Option, Parser
from ..run_record import RunRecord

log = logging.getLogger(__name__)
Runner = Callable[[list[str]], object]


LENGTH_KEYS = ("train.epochs", "train.max_steps")  # of the keys that only extend a run, those that set its length


def record_path(overrides: Sequence[str]) -> Path:
    """Where the run of ``overrides`` writes its record (its composed results_dir, experiment and run name)."""
    return _record_path(config.compose(list(overrides)))


def _record_path(cfg: DictConfig) -> Path:
    return Path(cfg.results_dir) / "runs" / cfg.experiment_name / f"{cfg.run_name}.json"


def longer_than_recorded(record: RunRecord, cfg: DictConfig) -> list[str]:
    """``"train.epochs: 4 -> 16"`` for each length key the job ``cfg`` asks above what ``record`` ran; [] if none."""
    out = []
    for key in LENGTH_KEYS:
        ran, asked = OmegaConf.select(OmegaConf.create(record.config), key), OmegaConf.select(cfg, key)
        if ran is not None and asked is not None and asked > ran:
            out.append(f"{key}: {ran} -> {asked}")
    return out


def to_do(overrides: Sequence[str]) -> tuple[Path, list[str] | None]:
    """The job's record path and, when it must run, why: ``[]`` (no record) or the length keys it extends; None: done.

    Raises:
        FileNotFoundError: the job extends a recorded run whose checkpoints are gone (a fresh run
            would train another schedule, not continue that one).
    """
    cfg = config.compose(list(overrides))
    path = _record_path(cfg)
    if not path.is_file():
        return path, []
    longer = longer_than_recorded(RunRecord.load(path), cfg)
    if longer and not any(Path(cfg.output_dir).glob("checkpoint-*")):
        raise FileNotFoundError(
            f"{' '.join(overrides)} asks a longer run than {path} holds ({'; '.join(longer)}), and {cfg.output_dir} "
            "keeps no checkpoint to continue from: restore its checkpoints, or re-run it from the start in a new results_dir"
        )
    return path, (longer or None)


STOPPED = {128 + signal.SIGINT: "SIGINT", 128 + signal.SIGTERM: "SIGTERM"}  # a run's exit code after it saved and stopped


def train_in_subprocess(overrides: list[str]) -> None:
    """``python -m softmax_zoo.train <overrides>`` in a fresh process (its own Hydra log); raises on failure.

    A stop signal lets the run save its checkpoint before the chain ends: Ctrl-C reaches the run with
    this process (one process group) and SIGTERM to this process is passed on to it; this process
    waits for the run to save and end (:class:`softmax_zoo.trainer.SaveOnRequest`), then exits with
    the run's code (130, 143), so that the same command resumes the chain. A second Ctrl-C stops
    the run at once.
    """
    wait_until_stopped(subprocess.Popen([sys.executable, "-m", "softmax_zoo.train", *overrides]))


def wait_until_stopped(child: subprocess.Popen) -> None:
    """Wait for ``child`` (a training run) through Ctrl-C and SIGTERM, passing SIGTERM on; see :func:`train_in_subprocess`."""
    before = signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
    try:
        while True:
            try:
                code = child.wait()
                break
            except KeyboardInterrupt:  # the run got it too: it saves at its next step
                log.warning("waiting for the run to save its checkpoint (Ctrl-C again stops it at once)")
    finally:
        signal.signal(signal.SIGTERM, before)
    if code in STOPPED:
        log.warning("the chain stopped on %s: rerun the same command to continue it", STOPPED[code])
        raise SystemExit(code)
    if code == -signal.SIGINT:  # stopped at once by a second Ctrl-C
        raise KeyboardInterrupt
    if code != 0:
        raise subprocess.CalledProcessError(code, child.args)


def all_done_line(paths: Sequence[Path], anew: str) -> str:
    """What a study says when every one of its jobs has its record: so, where they are, and how to run it anew (``anew``)."""
    folders = ", ".join(dict.fromkeys(str(p.parent) for p in paths))
    return (f"done already: all {len(paths)} runs of this study have their records ({folders}); nothing was trained"
            + (f"; to run it anew, {anew}" if anew else ""))


def run_all(job_list: Sequence[list[str]], runner: Runner = train_in_subprocess, anew: str = "") -> list[Path]:
    """Run every job whose record is missing, with ``resume=true``; return the record paths in job order. When none
    was to run, one line says so (:func:`all_done_line`, with ``anew``: how to run the study anew)."""
    paths, ran = [], 0
    for overrides in job_list:
        path, why = to_do(overrides)
        if why is None:
            log.info("done already: %s", path)
        else:
            ran += 1
            log.info("running %s%s", " ".join(overrides), f" (continuing {path.name}: {'; '.join(why)})" if why else "")
            before = path.stat().st_mtime_ns if path.is_file() else None
            runner([*overrides, "resume=true"])
            if not path.is_file() or path.stat().st_mtime_ns == before:
                raise RuntimeError(f"the run {' '.join(overrides)} finished without writing {path}")
        paths.append(path)
    if paths and not ran:
        log.info("%s", all_done_line(paths, anew))
    return paths


def study_parser(study: str, options: Sequence[Option]) -> Parser:
    """The command line of ``python -m softmax_zoo.studies.<study>``: its own options, every other ``key=value`` an
    override of every job."""
    return Parser(f"python -m softmax_zoo.studies.{study}", options, rest="train overrides", max_positional=0)


def new_seeds(seeds: Sequence[int]) -> str:
    """``"3,4,5"``: as many seeds as ``seeds``, each above the largest of them."""
    return ",".join(str(max(seeds) + 1 + i) for i in range(len(seeds)))


def main(job_list: Sequence[list[str]], anew: str = "") -> int:
    """Run the chain and print each record's path; ``anew``: how to run the study anew, said when every job is done."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    for path in run_all(job_list, anew=anew):
        print(path)
    return 0
