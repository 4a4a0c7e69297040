"""Fixtures for the engine tests: compose configs/train.yaml with every output kept in tmp_path."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
import torch

from softmax_zoo.config import compose

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.fixture
def make_cfg(tmp_path, monkeypatch):
    """``make_cfg(*overrides)`` -> composed config writing records and checkpoints under tmp_path."""
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def make(*overrides: str):
        return compose(
            [f"results_dir={tmp_path / 'results'}", f"output_dir={tmp_path / 'ckpt'}", *overrides], CONFIGS
        )

    return make


@pytest.fixture(autouse=True)
def fast_cpu():
    """One intra-op thread (the smoke models are tiny) and a frozen GC heap.

    The Trainer (accelerate's ``free_memory``) runs ``gc.collect()`` at every ``train()``; with
    torch, transformers and hydra imported that costs more than a smoke run's own steps, so the
    long-lived objects are moved out of the collector's reach first (``gc.freeze``).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    gc.freeze()
    yield
    gc.unfreeze()
    torch.set_num_threads(threads)
