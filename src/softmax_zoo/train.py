"""The training entry point: ``python -m softmax_zoo.train task=<t> model=<m> loss=<l> scale=<s> seed=0``.

Composes configs/train.yaml (task, model, loss, scale, logger, the task's per-scale settings and
an optional experiment), then :func:`softmax_zoo.engine.run` trains, evaluates and writes
results/runs/<experiment_name>/<run_name>.json. Sweeps: ``-m`` (Hydra multirun). Several GPUs:
``torchrun --nproc_per_node=N -m softmax_zoo.train ...`` (the Trainer runs DDP; rank 0 records).
The configs are read from the repository's configs/ (an editable install); from a wheel, point
Hydra at a copy: ``python -m softmax_zoo.train --config-path /abs/path/to/configs ...``.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from . import engine
from .config import CONFIG_DIR, unknown_key_hint


@hydra.main(config_path=str(CONFIG_DIR), config_name="train", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Train one run of the composed config."""
    engine.run(cfg)


if __name__ == "__main__":
    try:
        main()
    except SystemExit as exit_:
        if exit_.code not in (0, None):  # Hydra reported an error; add the valid keys if one was unknown
            hint = unknown_key_hint(sys.argv[1:])
            if hint:
                print(hint, file=sys.stderr)
        raise
