"""Generated classification folders, written exactly as ``softmax_zoo.data.prepare`` writes them.

Three formats, one per real task: short English utterances (clinc_oos), long Chinese
descriptions (iflytek, with char_vocab.txt), long English abstracts (wos). Each class has its
own keywords, so a model can learn something in a few steps; NUM_CLASSES > 20 so that the
sparse-softmax default k=20 fits.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from softmax_zoo import config
from softmax_zoo.data.prepare.writer import Prepared, write_prepared

NUM_CLASSES = 24
SIZES = {"train": 96, "validation": 48, "test": 48}
TASKS = ("clinc_oos", "iflytek", "wos")
_ZH = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长"


def _text(task: str, label: int, rng: random.Random) -> str:
    if task == "iflytek":
        key = _ZH[label * 3 : label * 3 + 3]
        body = "".join(rng.choice(_ZH) for _ in range(rng.randint(30, 80)))
        return key + body + key
    n_words = rng.randint(4, 10) if task == "clinc_oos" else rng.randint(40, 80)
    words = [f"w{rng.randint(0, 99)}" for _ in range(n_words)]
    words[rng.randrange(n_words)] = f"topic{label}"
    return " ".join(words)


def prepare_task(root: Path, task: str, seed: int = 0) -> Path:
    """Write ``root/<task>/`` ({train,validation,test}.jsonl, meta.json[, char_vocab.txt])."""
    rng = random.Random(seed)
    labels = [f"label_{c:02d}" for c in range(NUM_CLASSES)]
    if task == "clinc_oos":
        labels[-1] = "oos"  # OOS-eval's out-of-scope class comes last
    splits = {
        split: [{"text": _text(task, i % NUM_CLASSES, rng), "label": labels[i % NUM_CLASSES]} for i in range(n)]
        for split, n in SIZES.items()
    }
    prep = Prepared("classification", splits, labels=labels, char_vocab=task == "iflytek")
    write_prepared(task, prep, root / task, {"type": "generated"}, {}, {})
    return root / task


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """A folder holding all three generated tasks."""
    root = tmp_path_factory.mktemp("clsdata")
    for task in TASKS:
        prepare_task(root, task)
    return root


def compose(data_root: Path, tmp_path: Path, task: str, *overrides: str):
    """The composed training config of ``task`` at smoke scale on generated data, writing into tmp_path."""
    return config.compose([
        f"task={task}", "model=tiny_bert", "scale=smoke", f"task.data_dir={data_root / task}",
        f"results_dir={tmp_path}", f"output_dir={tmp_path}/ckpt", *overrides,
    ])
