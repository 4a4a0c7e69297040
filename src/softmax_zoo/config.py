"""Config tooling: where the configs live, composing them outside ``@hydra.main``, and what a run
records about its composition (Hydra's group choices, the command as typed).

- :data:`CONFIG_DIR`: the repository's configs/ (``train.py``'s ``@hydra.main`` reads it too).
- :func:`compose`: configs/train.yaml + overrides, for tests and notebooks, with Hydra's runtime
  (``${hydra:runtime.choices...}``, :func:`hydra_choices`) set as in a real run.
- :func:`unknown_key_hint`: the valid keys when a command-line override names one that does not exist.
- :func:`command_line`, :func:`hydra_choices`: what :func:`softmax_zoo.records.make_record` keeps.
"""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

CONFIG_DIR = Path(__file__).resolve().parents[2] / "configs"
# Record key -> Hydra config group: the choices every record keeps (None: group not chosen).
CHOICE_GROUPS = {
    "task": "task",
    "model": "model",
    "loss": "loss",
    "sampler": "loss/sampler",
    "scale": "scale",
    "experiment": "experiment",
    "start": "start",
}


def compose(overrides: list[str] = (), config_dir: str | Path | None = None) -> DictConfig:
    """Compose configs/train.yaml with ``overrides`` outside ``@hydra.main`` (tests, notebooks).

    The ``${hydra:runtime.choices...}`` interpolations of the config resolve as in a real run, and
    :func:`hydra_choices` gives this composition's choices.
    """
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir or CONFIG_DIR), version_base="1.3"):
        cfg = hydra_compose("train", overrides=list(overrides), return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def hydra_choices() -> dict[str, str | None]:
    """Hydra's choice for each group of :data:`CHOICE_GROUPS` (``{"loss": "sparse_softmax", "sampler": None, ...}``).

    Empty outside a Hydra run or :func:`compose` (nothing is known about the composition).
    """
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return {}
    choices = HydraConfig.get().runtime.choices
    return {key: choices.get(group) for key, group in CHOICE_GROUPS.items()}


def command_line() -> list[str]:
    """The command as typed: ``python -m softmax_zoo.train`` + the Hydra overrides (sys.argv otherwise)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return list(sys.argv)
    prefix = ["python", "-m", "softmax_zoo.train"] if sys.argv[0].endswith("train.py") else [sys.argv[0]]
    # Hydra escapes interpolations in a job's overrides (run_name=k$\{loss.k\}); show them as typed.
    return prefix + [o.replace("\\{", "{").replace("\\}", "}") for o in HydraConfig.get().overrides.task]


def unknown_key_hint(overrides: list[str], config_dir: str | Path | None = None) -> str | None:
    """For command-line ``a.b.c=v`` overrides naming keys that do not exist, list the valid keys.

    Hydra already lists the valid choices of an unknown group option (``loss=nope``); for an
    unknown key it only says "not in struct". Returns None when every key exists (or the group
    choices themselves do not compose).
    """
    config_dir = Path(config_dir or CONFIG_DIR)
    groups = {str(p.relative_to(config_dir)) for p in config_dir.rglob("*") if p.is_dir()}
    group_args, keys = [], []
    for arg in overrides:
        if arg.startswith(("-", "+", "~", "hydra")) or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        if key.split("@")[0] in groups:
            group_args.append(f"{key}={value.split(',')[0]}")  # a sweep: the first choice is enough
        else:
            keys.append(key)
    try:
        cfg = compose(group_args, config_dir)
    except Exception:  # noqa: BLE001 - Hydra has already reported the composition error
        return None
    hints = []
    for key in keys:
        parent, _, leaf = key.rpartition(".")
        node = OmegaConf.select(cfg, parent) if parent else cfg
        if isinstance(node, DictConfig) and leaf not in node:
            valid = ", ".join(sorted(node.keys()))
            hints.append(f"unknown key {key!r}; valid keys under {parent or 'the top level'}: {valid}")
        elif node is None:
            hints.append(f"unknown key {key!r}: {parent!r} does not exist")
    return "\n".join(hints) or None
