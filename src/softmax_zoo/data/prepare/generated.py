"""Generated data in each task family's prepared format, for tests and dry runs (:mod:`softmax_zoo.dry_run`).

- classification (:func:`classification_task`): three formats, one per real task: short English
  utterances (clinc_oos), long Chinese descriptions (iflytek, with char_vocab.txt), long English
  abstracts (wos). Each class has its own keywords, so a model can learn something in a few steps;
  ``NUM_CLASSES`` > 20 so that the sparse-softmax default k=20 fits.
- lm (:func:`lm_corpus`): sentences of Zipf-distributed words.
- seq2seq (:func:`write_pairs` of :func:`summaries` or :func:`questions`): source/target pairs.

Classification and LM folders are written by :func:`~.writer.write_prepared`, exactly as a real
preparer writes them. :func:`generated_data` writes one folder for every task of configs/task/.
This module registers no preparer.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import torch

from softmax_zoo.data.prepare.writer import Prepared, write_prepared
from softmax_zoo.dry_run import family, task_file, task_names

NUM_CLASSES = 24
CLASSIFICATION_SIZES = {"train": 96, "validation": 48, "test": 48}
CLASSIFICATION_TASKS = ("clinc_oos", "iflytek", "wos")
_ZH = "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长"

NUM_WORDS = 60  # word types of the generated LM corpus; with <eos> and <unk>: 62 classes

WORDS = "apple river stone cloud green music paper window silver garden tiger ocean yellow planet".split()


def _text(task: str, label: int, rng: random.Random) -> str:
    if task == "iflytek":
        key = _ZH[label * 3 : label * 3 + 3]
        body = "".join(rng.choice(_ZH) for _ in range(rng.randint(30, 80)))
        return key + body + key
    n_words = rng.randint(4, 10) if task == "clinc_oos" else rng.randint(40, 80)
    words = [f"w{rng.randint(0, 99)}" for _ in range(n_words)]
    words[rng.randrange(n_words)] = f"topic{label}"
    return " ".join(words)


def classification_task(root: Path, task: str, seed: int = 0) -> Path:
    """Write ``root/<task>/`` ({train,validation,test}.jsonl, meta.json[, char_vocab.txt]) in ``task``'s format."""
    rng = random.Random(seed)
    labels = [f"label_{c:02d}" for c in range(NUM_CLASSES)]
    if task == "clinc_oos":
        labels[-1] = "oos"  # OOS-eval's out-of-scope class comes last
    splits = {
        split: [{"text": _text(task, i % NUM_CLASSES, rng), "label": labels[i % NUM_CLASSES]} for i in range(n)]
        for split, n in CLASSIFICATION_SIZES.items()
    }
    prep = Prepared("classification", splits, labels=labels, char_vocab=task == "iflytek")
    write_prepared(task, prep, root / task, {"type": "generated"}, {}, {})
    return root / task


def sentences(n: int, generator: torch.Generator) -> list[str]:
    """n sentences of 1-12 words drawn from a Zipf(1) distribution over w0..w59."""
    probs = 1.0 / torch.arange(1, NUM_WORDS + 1, dtype=torch.float64)
    out = []
    for _ in range(n):
        length = int(torch.randint(1, 13, (1,), generator=generator))
        ids = torch.multinomial(probs, length, replacement=True, generator=generator)
        out.append(" ".join(f"w{i}" for i in ids.tolist()))
    return out


def lm_corpus(root: Path, name: str = "genlm", seed: int = 0) -> Path:
    """Write ``root/<name>/`` ({train,validation,test}.txt, vocab.txt, meta.json) of generated sentences."""
    g = torch.Generator().manual_seed(seed)
    splits = {"train": [sentences(160, g)], "validation": [sentences(40, g)], "test": [sentences(40, g)]}
    write_prepared(name, Prepared(kind="lm", splits=splits), root / name, {"type": "generated"}, {}, {})
    return root / name


def write_pairs(folder: Path, splits: dict[str, list[dict]]) -> None:
    """Write a seq2seq folder: ``<split>.jsonl`` of ``splits``' rows and meta.json."""
    folder.mkdir()
    for split, rows in splits.items():
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "meta.json").write_text(json.dumps({"kind": "seq2seq", "splits": {s: len(r) for s, r in splits.items()}}))


def summaries(rng: random.Random, n: int) -> list[dict]:
    """n summarisation pairs: a source of 6-12 words, its first 3 words as the target."""
    rows = []
    for _ in range(n):
        words = rng.choices(WORDS, k=rng.randint(6, 12))
        rows.append({"source": " ".join(words) + " <unk> .", "target": " ".join(words[:3])})
    return rows


def questions(rng: random.Random, n: int) -> list[dict]:
    """n question-generation rows: a passage of 20-40 words, a 2-word answer in it and its question."""
    rows = []
    for _ in range(n):
        words = rng.choices(WORDS, k=rng.randint(20, 40))
        i = rng.randrange(len(words) - 2)
        passage, answer = " ".join(words), " ".join(words[i : i + 2])
        rows.append({"source": passage, "target": f"what is {answer} ?", "answer": answer, "answer_start": passage.index(answer)})
    return rows


PAIRS = {"summarisation": summaries, "question_generation": questions}  # seq2seq task.format -> its pairs


def generated_data(root: Path) -> dict[str, Path]:
    """task name -> a prepared folder of generated data, for every task of configs/task/ that reads one."""
    rng = random.Random(0)
    folders: dict[str, Path] = {}
    corpus = None
    for task in task_names():
        kind = family(task)
        if kind == "classification":
            folders[task] = classification_task(root, task)
        elif kind == "lm":
            folders[task] = corpus = corpus or lm_corpus(root)
        elif kind == "seq2seq":
            make_rows = PAIRS[task_file(task).format]
            write_pairs(root / task, {"train": make_rows(rng, 24), "test": make_rows(rng, 12)})
            folders[task] = root / task
    return folders
