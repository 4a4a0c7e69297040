"""A generated corpus prepared exactly as ``softmax_zoo.data.prepare`` writes an LM task."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from softmax_zoo.data.prepare.writer import Prepared, write_prepared

NUM_WORDS = 60  # word types of the generated corpus; with <eos> and <unk>: 62 classes


def sentences(n: int, generator: torch.Generator) -> list[str]:
    """n sentences of 1-12 words drawn from a Zipf(1) distribution over w0..w59."""
    probs = 1.0 / torch.arange(1, NUM_WORDS + 1, dtype=torch.float64)
    out = []
    for _ in range(n):
        length = int(torch.randint(1, 13, (1,), generator=generator))
        ids = torch.multinomial(probs, length, replacement=True, generator=generator)
        out.append(" ".join(f"w{i}" for i in ids.tolist()))
    return out


def prepare_corpus(root: Path, name: str = "genlm", seed: int = 0) -> Path:
    g = torch.Generator().manual_seed(seed)
    splits = {"train": [sentences(160, g)], "validation": [sentences(40, g)], "test": [sentences(40, g)]}
    write_prepared(name, Prepared(kind="lm", splits=splits), root / name, {"type": "generated"}, {}, {})
    return root / name


@pytest.fixture(scope="session")
def lm_corpus(tmp_path_factory) -> Path:
    """data/<task>/-style folder: {train,validation,test}.txt, vocab.txt, meta.json."""
    return prepare_corpus(tmp_path_factory.mktemp("lmdata"))
