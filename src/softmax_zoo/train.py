"""The training entry point: ``python -m softmax_zoo.train task=<t> model=<m> loss=<l> scale=<s> seed=0``.

Composes configs/train.yaml (task, model, loss, scale, logger, the task's per-scale settings and
an optional experiment), then :func:`softmax_zoo.engine.run` trains, evaluates and writes
results/runs/<experiment_name>/<run_name>.json. Sweeps: ``-m`` (Hydra multirun). Several GPUs:
``torchrun --nproc_per_node=N -m softmax_zoo.train ...`` (the Trainer runs DDP; rank 0 records).
The configs are read from the repository's configs/ (an editable install); from a wheel, point
Hydra at a copy: ``python -m softmax_zoo.train --config-path /abs/path/to/configs ...``. Configs of
your own (a loss, a task, a task family's families/<family>.yaml) may also sit in another folder:
``hydra.searchpath=[file:///abs/path/to/folder]``. The ``zoo.*`` resolvers and the family files of
every folder Hydra composes from are registered before it composes (:func:`softmax_zoo.config.register`
of :func:`softmax_zoo.config.command_line_sources`).

The composed config's values are checked (:func:`softmax_zoo.preflight.check_config`) before the
training stack (transformers' Trainer, datasets, wandb) is imported, so a bad value
(``loss.k=0``, ``seed=abc``) is reported in seconds.

SIGTERM or SIGINT (Ctrl-C) during training saves a checkpoint at the next optimiser step; the run
then prints "interrupted by SIGTERM: checkpoint saved at step N (…); rerun the same command with
resume=true to resume" and exits with 128 + the signal's number (143, 130), as a process ended by
that signal would, so that a sweep, a chain of runs or a scheduler sees it did not finish.

A run that fails prints its error alone (``ValueError: k must be >= 1, got 0``) and where the
traceback is (the job's log file); a job of a multirun also gets Hydra's line naming the job.
``HYDRA_FULL_ERROR=1`` prints the whole traceback instead (Hydra's switch).
"""

from __future__ import annotations

import logging
import os
import sys

from .extras import require

require("pipelines", "python -m softmax_zoo.train", entry_point=__name__ == "__main__")

import hydra  # noqa: E402
from hydra.errors import CompactHydraException  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from . import preflight  # noqa: E402
from .config import CONFIG_DIR, command_line_sources, hydra_job, register, unknown_key_hint  # noqa: E402

log = logging.getLogger(__name__)
FULL_ERROR = "HYDRA_FULL_ERROR"  # Hydra's own switch: "1" shows every traceback in full


class RunFailed(CompactHydraException):
    """A run's error, which Hydra prints as its message alone (the traceback: ``HYDRA_FULL_ERROR=1``)."""


def log_files() -> list[str]:
    """The files the run log goes to (Hydra's job log file)."""
    return [h.baseFilename for h in logging.getLogger().handlers if isinstance(h, logging.FileHandler)]


def short_error(error: Exception) -> RunFailed:
    """``error`` as one message plus where its traceback is; the traceback itself goes to the log files only."""
    record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "run failed", (), (type(error), error, error.__traceback__))
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)
    where = f"\n(the traceback is in {', '.join(log_files())})" if log_files() else ""
    return RunFailed(f"{type(error).__name__}: {error}{where}")


@hydra.main(config_path=str(CONFIG_DIR), config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Train one run of the composed config."""
    try:
        preflight.check_config(cfg)
        from . import engine  # the training stack, imported once the config is known to be good

        engine.run(cfg)
    except KeyboardInterrupt as stop:
        from .trainer import TrainingInterrupted  # imported with the engine, which raised it

        if not isinstance(stop, TrainingInterrupted):
            raise
        log.warning("%s", stop)
        raise SystemExit(stop.exit_code) from None
    except Exception as error:
        if os.environ.get(FULL_ERROR) == "1":
            raise
        failed = short_error(error)
        if hydra_job().get("mode") == "RUN":  # alone on the screen: Hydra would add a line naming the job's overrides
            print(failed, file=sys.stderr)
            raise SystemExit(1) from error
        raise failed from error  # a multirun's job: Hydra names which job failed


def unknown_keys_reported(argv: list[str]) -> None:
    """Make Hydra report a composition that fails on an unknown key (``loss.kk=3``) by one line per key, ours
    (:func:`softmax_zoo.config.unknown_key_hint`: the head's "unknown option ... (did you mean 'k'?)", the valid keys),
    instead of its own lines ("Could not override ... Key 'kk' is not in struct ..."). Other composition errors
    (``task=nonexistent``) keep Hydra's words. Hydra has no hook for this: its reporter, which every ``@hydra.main``
    app runs through, is wrapped."""
    from hydra._internal import utils as hydra_utils
    from hydra.errors import ConfigCompositionException

    report = hydra_utils.run_and_report

    def run_and_report(func):
        def run():
            try:
                return func()
            except ConfigCompositionException:
                hint = unknown_key_hint(argv)
                if hint is None:
                    raise
                raise RunFailed(hint) from None

        return report(run)

    hydra_utils.run_and_report = run_and_report


if __name__ == "__main__":
    register(command_line_sources(sys.argv[1:]))  # resolvers and family configs, before Hydra composes
    unknown_keys_reported(sys.argv[1:])
    main()
