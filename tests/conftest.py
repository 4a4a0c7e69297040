"""Shared fixtures: a seeded generator, the devices to run the device-parametrised tests on, a generated LM corpus."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from softmax_zoo.data.prepare import generated

# "cuda" runs only where a GPU is present; the marker lets `-m "not cuda"` deselect it.
DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=[pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")],
    ),
]


@pytest.fixture
def gen() -> torch.Generator:
    """A CPU generator seeded the same way in every test."""
    return torch.Generator().manual_seed(0)


@pytest.fixture(params=DEVICES)
def device(request) -> torch.device:
    """Each test using this fixture runs on the CPU and, when available, on CUDA."""
    return torch.device(request.param)


@pytest.fixture(scope="session")
def lm_corpus(tmp_path_factory) -> Path:
    """A generated LM task folder (:func:`softmax_zoo.data.prepare.generated.lm_corpus`): {train,validation,test}.txt, vocab.txt, meta.json."""
    return generated.lm_corpus(tmp_path_factory.mktemp("lmdata"))
