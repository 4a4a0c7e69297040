"""Generated data in each task family's prepared format, for tests and dry runs (:mod:`softmax_zoo.dry_run`).

The shared generators; each preparer module writes its own task's folder with them in its
``generate(root, seed=0) -> folder`` (an optional part of the preparer API, :mod:`.registry`), next
to the code that prepares the real data, and :func:`generated_data` collects every registered one:

- classification (:func:`classification_folder`): the class's text from :func:`english` (short
  utterances: clinc_oos, long abstracts: wos) or :func:`chinese` (long descriptions: iflytek, with
  char_vocab.txt). Each class has its own keywords, so a model can learn something in a few steps;
  ``NUM_CLASSES`` > 20 so that the sparse-softmax default k=20 fits.
- lm (:func:`lm_corpus`): sentences of Zipf-distributed words.
- seq2seq (:func:`pair_folder` of :func:`summaries` or :func:`questions`): source/target pairs.

Classification and LM folders are written by :func:`~.writer.write_prepared`, exactly as a real
preparer writes them. This module registers no preparer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import torch

from softmax_zoo.data.prepare.registry import preparers
from softmax_zoo.data.prepare.writer import Prepared, write_prepared

NUM_CLASSES = 24
CLASSIFICATION_SIZES = {"train": 96, "validation": 48, "test": 48}
_ZH = (
    "的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她"
    "里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长"
)

NUM_WORDS = 60  # word types of the generated LM corpus; with <eos> and <unk>: 62 classes

WORDS = "apple river stone cloud green music paper window silver garden tiger ocean yellow planet".split()


Text = Callable[[int, random.Random], str]  # (class index, rng) -> one example's text


def english(min_words: int, max_words: int) -> Text:
    """Texts of ``min_words``-``max_words`` random words w0..w99, one of them the class's keyword ``topic<label>``."""
    def text(label: int, rng: random.Random) -> str:
        n_words = rng.randint(min_words, max_words)
        words = [f"w{rng.randint(0, 99)}" for _ in range(n_words)]
        words[rng.randrange(n_words)] = f"topic{label}"
        return " ".join(words)
    return text


def chinese(label: int, rng: random.Random) -> str:
    """30-80 random characters between two copies of the class's three-character keyword."""
    key = _ZH[label * 3 : label * 3 + 3]
    body = "".join(rng.choice(_ZH) for _ in range(rng.randint(30, 80)))
    return key + body + key


def classification_task(root: Path, task: str, seed: int = 0) -> Path:
    """Write ``root/<task>/`` in ``task``'s format: its preparer's ``generate`` (one of :func:`classification_tasks`)."""
    return preparers()[task].generate(root, seed)


def classification_folder(root: Path, task: str, text: Text, last_label: str | None = None, char_vocab: bool = False,
                          seed: int = 0) -> Path:
    """Write ``root/<task>/`` ({train,validation,test}.jsonl, meta.json[, char_vocab.txt]) of ``text``'s examples.

    ``last_label`` names the last class (clinc_oos: its out-of-scope class); ``char_vocab``: write char_vocab.txt.
    """
    rng = random.Random(seed)
    labels = [f"label_{c:02d}" for c in range(NUM_CLASSES)]
    if last_label is not None:
        labels[-1] = last_label
    splits = {
        split: [{"text": text(i % NUM_CLASSES, rng), "label": labels[i % NUM_CLASSES]} for i in range(n)]
        for split, n in CLASSIFICATION_SIZES.items()
    }
    prep = Prepared("classification", splits, labels=labels, char_vocab=char_vocab)
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


def pair_folder(root: Path, task: str, rows: Callable[[random.Random, int], list[dict]], seed: int = 0) -> Path:
    """Write ``root/<task>/`` (train.jsonl of 24 ``rows``, test.jsonl of 12, meta.json)."""
    rng = random.Random(seed)
    write_pairs(root / task, {"train": rows(rng, 24), "test": rows(rng, 12)})
    return root / task


def generated_data(root: Path) -> dict[str, Path]:
    """task name -> a folder of generated data under ``root``, for every preparer with a ``generate``."""
    return {task: prep.generate(root) for task, prep in preparers().items() if hasattr(prep, "generate")}


def classification_tasks() -> tuple[str, ...]:
    """The classification tasks with generated data (their preparers' KIND), for the classification tests."""
    return tuple(t for t, p in preparers().items() if hasattr(p, "generate") and p.KIND == "classification")
