"""Experiment tracking: ``logger=none`` (nothing) or ``logger=wandb`` (mode online, offline, disabled).

Design: we start the wandb run ourselves, before the Trainer, with the fully resolved Hydra
config, the project/entity/group/tags of ``configs/logger/wandb.yaml`` and the run name; the
Trainer's own ``WandbCallback`` (``report_to=["wandb"]``) finds that run and logs ``train/loss``,
``train/grad_norm`` and ``train/learning_rate`` at every logging step against
``train/global_step``. The ``val/...`` and ``test/...`` metrics (from ``Task.evaluate``, not the
Trainer's evaluation loop) are logged here against the same step axis and copied into the run
summary. Only the main process (rank 0) talks to wandb.
"""

from __future__ import annotations

import os
from typing import Any

from omegaconf import DictConfig, OmegaConf

WANDB_MODES = ("online", "offline", "disabled")


def is_main_process() -> bool:
    """True on rank 0 of a torchrun job, and in a single-process run."""
    return int(os.environ.get("RANK", "0")) == 0


def report_to(cfg: DictConfig) -> list[str]:
    """The Trainer's ``report_to`` for ``cfg.logger``."""
    name = cfg.logger.name
    if name == "none":
        return []
    if name == "wandb":
        return ["wandb"]
    raise ValueError(f"logger.name must be 'none' or 'wandb', got {name!r}")


def start(cfg: DictConfig) -> Any | None:
    """Start the wandb run for ``cfg`` on the main process; return it (None for logger=none)."""
    if cfg.logger.name != "wandb" or not is_main_process():
        return None
    mode = cfg.logger.mode
    if mode not in WANDB_MODES:
        raise ValueError(f"logger.mode must be one of {WANDB_MODES}, got {mode!r}")
    import wandb

    os.environ.setdefault("WANDB_WATCH", "false")  # no gradient histograms unless asked for
    os.environ.setdefault("WANDB_LOG_MODEL", "false")  # checkpoints stay local
    os.makedirs(cfg.logger.dir, exist_ok=True)
    return wandb.init(
        project=cfg.logger.project,
        entity=cfg.logger.entity,
        group=cfg.logger.group,
        tags=list(cfg.logger.tags),
        name=cfg.run_name,
        mode=mode,
        dir=cfg.logger.dir,
        config=OmegaConf.to_container(cfg, resolve=True),
        reinit="finish_previous",
    )


def log_metrics(run: Any | None, metrics: dict[str, float], step: int) -> None:
    """Log ``val/...``/``test/...`` metrics at optimiser step ``step`` and keep them in the summary."""
    if run is None:
        return
    run.log({**metrics, "train/global_step": step})
    run.summary.update(metrics)


def finish(run: Any | None, exit_code: int = 0) -> None:
    """Close the run (exit_code != 0 marks it failed)."""
    if run is not None:
        run.finish(exit_code=exit_code)
