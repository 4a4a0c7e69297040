"""Experiment tracking and the run log: ``logger=none`` (the run log only) or ``logger=wandb`` (mode online, offline, disabled).

Design: we start the wandb run ourselves, before the Trainer, so that a sweep's runs are told
apart and grouped the way the configs say (configs/logger/wandb.yaml):

- name: the run name, which holds the job's swept values (``softmax_zoo.config.run_id``);
- group: the experiment, or for an unnamed multirun its Hydra sweep folder;
- tags: Hydra's choices of task, model, loss and scale (+ the sampler, + ``logger.tags``);
  job_type: ``logger.job_type``;
- config: the resolved Hydra config, with the Trainer's own arguments apart under ``trainer_args``;
- the per-step ``train/...`` values (:class:`softmax_zoo.trainer.StepLog`) and the ``val/...``/``test/...`` metrics
  against ``train/global_step``; the final metrics also go to the run summary, so that a sweep's
  summary table and parallel-coordinates panel plot a metric against any config key.

The Trainer's own ``WandbCallback`` is not used (``report_to=[]``): it would mix every
TrainingArguments key into the run config. Only the main process (rank 0) talks to wandb.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

WANDB_MODES = ("online", "offline", "disabled")
TAG_GROUPS = ("task", "model", "loss", "sampler", "scale")
STEP_KEYS = ("loss", "learning_rate", "grad_norm", "epoch")  # what the Trainer logs per step
log = logging.getLogger(__name__)


def is_main_process() -> bool:
    """True on rank 0 of a torchrun job, and in a single-process run."""
    return int(os.environ.get("RANK", "0")) == 0


def check_logger(cfg: DictConfig) -> None:
    """Raise ``ValueError`` naming a bad ``logger.name`` or ``logger.mode``."""
    name = cfg.logger.name
    if name not in ("none", "wandb"):
        raise ValueError(f"logger.name must be 'none' or 'wandb', got {name!r}")
    if name == "wandb" and cfg.logger.mode not in WANDB_MODES:
        raise ValueError(f"logger.mode must be one of {WANDB_MODES}, got {cfg.logger.mode!r}")


def start(cfg: DictConfig, choices: dict[str, str | None], trainer_args: dict[str, Any]) -> Any | None:
    """Start the wandb run for ``cfg`` on the main process; return it (None for logger=none).

    Args:
        cfg: the composed config.
        choices: Hydra's group choices (``softmax_zoo.config.hydra_choices``); they give the tags.
        trainer_args: ``TrainingArguments.to_dict()``, kept in the run config under ``trainer_args``.
    """
    check_logger(cfg)
    if cfg.logger.name != "wandb" or not is_main_process():
        return None
    import wandb

    os.makedirs(cfg.logger.dir, exist_ok=True)
    tags = [choices[g] for g in TAG_GROUPS if choices.get(g)] + list(cfg.logger.tags)
    run = wandb.init(
        project=cfg.logger.project,
        entity=cfg.logger.entity,
        group=cfg.logger.group,
        job_type=cfg.logger.job_type,
        tags=list(dict.fromkeys(tags)),
        name=cfg.run_name,
        mode=cfg.logger.mode,
        dir=cfg.logger.dir,
        config={**OmegaConf.to_container(cfg, resolve=True), "trainer_args": trainer_args},
        reinit="finish_previous",
    )
    run.define_metric("train/global_step")
    run.define_metric("*", step_metric="train/global_step")
    return run


def run_info(run: Any | None) -> dict[str, Any] | None:
    """What the record keeps of the wandb run: its path (``entity/project/id``), id, name, group, mode, folder."""
    if run is None:
        return None
    return {
        "path": "/".join(p for p in (run.entity, run.project, run.id) if p),
        "id": run.id,
        "name": run.name,
        "group": run.group,
        "mode": run.settings.mode,
        "dir": run.dir,
    }


def log_metrics(run: Any | None, metrics: dict[str, float], step: int) -> None:
    """Log ``val/...``/``test/...`` metrics at optimiser step ``step`` and keep them in the summary."""
    if run is None:
        return
    run.log({**metrics, "train/global_step": step})
    run.summary.update(metrics)


def log_page(page: str, files: list[Path], mode: str, project: str = "softmax_zoo", wandb_dir: str = ".") -> dict[str, Any]:
    """Log a freshly built result page to wandb: its figures as images, its markdown as text.

    One run per build, ``job_type="report"``, grouped under "reports" and named after the page,
    so that the project's report runs sit beside the training runs they summarise.

    Args:
        page: the page's name (fig2, table5, ...).
        files: the files the build wrote (``.png`` become ``wandb.Image``, ``.md`` a ``wandb.Html``
            of the text in a <pre> block).
        mode: online, offline or disabled.

    Returns:
        :func:`run_info` of the run.
    """
    if mode not in WANDB_MODES:
        raise ValueError(f"wandb mode must be one of {WANDB_MODES}, got {mode!r}")
    import html

    import wandb

    os.makedirs(wandb_dir, exist_ok=True)
    run = wandb.init(project=project, group="reports", job_type="report", name=page, mode=mode, dir=wandb_dir,
                     reinit="finish_previous")
    media: dict[str, Any] = {}
    for path in files:
        if path.suffix == ".png":
            media[f"{page}/{path.stem}"] = wandb.Image(str(path))
        elif path.suffix == ".md":
            media[f"{page}/{path.stem}_page"] = wandb.Html(f"<pre>{html.escape(path.read_text(encoding='utf-8'))}</pre>")
    run.log(media)
    info = run_info(run)
    run.finish()
    return info


def finish(run: Any | None, exit_code: int = 0) -> None:
    """Close the run (exit_code != 0 marks it failed)."""
    if run is not None:
        run.finish(exit_code=exit_code)
