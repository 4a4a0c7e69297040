"""A distillation experiment's teacher, trained before it: the experiment ``<name>_teacher``, by the
convention of configs/experiment/ (stable_kd_ptb.yaml distils from stable_kd_ptb_teacher.yaml)."""

from __future__ import annotations

from pathlib import Path

from softmax_zoo import engine


def trained_teacher(experiment: str, composed, make_cfg, overrides: list[str], folder: Path) -> list[str]:
    """``[distill.teacher=<folder>]`` after training ``<experiment>_teacher`` with ``overrides`` into
    ``folder``; ``[]`` for an experiment that distils from nothing."""
    if composed.get("distill", {}).get("teacher") is None:
        return []
    teacher = [o.replace(f"experiment={experiment}", f"experiment={experiment}_teacher") for o in overrides]
    engine.run(make_cfg(*teacher, f"output_dir={folder}", "train.save_steps=1"))
    return [f"distill.teacher={folder}"]
