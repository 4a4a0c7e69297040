"""SQuAD 1.1 question generation, Du et al. (2017) split, answer-aware (UniLM setting), English.

Release files read: SQuAD v1.1 JSON (``.gz`` allowed) and Du's article lists
``doclist-{train,dev,test}.txt`` (xinyadu/nqg). Split (Du et al.; UniLM Table 3):
- train = train-JSON articles whose title is in doclist-train (75,722 questions);
- validation = dev-v1.1.json (10,570 questions; doclist-dev = all its articles);
- test = ``du2017_test-v1.1.json`` when present, else the train-JSON articles in doclist-test
  (11,877 questions; Du's test set is carved out of SQuAD train).
The train JSON may be the official ``train-v1.1.json`` or ``train-v1.1.reconstructed.json.gz``
(as in $SOFTMAX_ZOO_RAW/squad_qg: same text; derived ids and answer_start, see its SOURCE.md).

One example per question: ``{"source": paragraph, "target": question, "answer": first answer
text, "answer_start": its character offset in source}``. The full paragraph is kept; picking the
chunk that fits the model's token budget is the collator's job. Every answer span is checked.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Iterator

from softmax_zoo.data.layout import read_json
from softmax_zoo.data.prepare.io import read_lines
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import register
from softmax_zoo.data.prepare.writer import Prepared

RAW_NAME = "squad_qg"
KIND = "seq2seq"
OPTIONS: dict = {}
_TRAIN_FILES = ("train-v1.1.json", "train-v1.1.json.gz", "train-v1.1.reconstructed.json.gz")
_DEV_FILES = ("dev-v1.1.json", "dev-v1.1.json.gz")
_TEST_FILES = ("du2017_test-v1.1.json", "du2017_test-v1.1.json.gz")
# Revision: "main" (no commit id could be looked up offline; pin one when online).
HUB = {"id": "rajpurkar/squad", "config": "plain_text", "revision": "main"}

# (title, context, question id, question, answer text, answer_start)
Row = tuple[str, str, str, str, str, int]


def _rows(doc: dict, where: str) -> Iterator[Row]:
    """Flatten SQuAD JSON to one row per question (first answer)."""
    if "data" not in doc:
        raise ValueError(f"{where}: not SQuAD JSON (no 'data' key)")
    for article in doc["data"]:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                if not qa.get("answers"):
                    raise ValueError(f"{where}: question {qa.get('id')!r} has no answer")
                ans = qa["answers"][0]
                yield article["title"], para["context"], qa["id"], qa["question"], ans["text"], int(ans["answer_start"])


def _doclist(raw: RawDir, split: str) -> list[str]:
    path = raw.require(f"doclist-{split}.txt", what=f"Du et al. {split} article list")
    return [t.strip() for t in read_lines(path) if t.strip()]


def _examples(rows: Iterable[Row], titles: list[str] | None, where: str) -> list[dict]:
    """Examples of the rows whose title is in ``titles`` (all if None); every title must occur."""
    wanted = set(titles) if titles is not None else None
    seen, out = set(), []
    for title, context, qid, question, answer, start in rows:
        if wanted is not None and title not in wanted:
            continue
        seen.add(title)
        if context[start : start + len(answer)] != answer:
            raise ValueError(f"{where}: question {qid}: answer {answer!r} is not at answer_start {start}")
        out.append({"source": context, "target": question.strip(), "answer": answer, "answer_start": start})
    if wanted is not None and wanted - seen:
        missing = sorted(wanted - seen)
        raise ValueError(f"{where}: {len(missing)} doclist title(s) not found, e.g. {missing[:3]}")
    return out


def load_local(raw: RawDir, opts: dict) -> Prepared:
    train_path = raw.require(*_TRAIN_FILES, what="SQuAD v1.1 train JSON")
    dev_path = raw.require(*_DEV_FILES, what="SQuAD v1.1 dev JSON")
    train_rows = list(_rows(read_json(train_path), str(train_path)))
    test_path = raw.find(*_TEST_FILES)
    dev_titles = _doclist(raw, "dev") if raw.find("doclist-dev.txt") else None
    splits = {
        "train": _examples(train_rows, _doclist(raw, "train"), str(train_path)),
        "validation": _examples(_rows(read_json(dev_path), str(dev_path)), dev_titles, str(dev_path)),
        "test": (_examples(_rows(read_json(test_path), str(test_path)), _doclist(raw, "test"), str(test_path))
                 if test_path else _examples(train_rows, _doclist(raw, "test"), str(train_path))),
    }
    notes = [f"train from {train_path.name} (doclist-train), validation from {dev_path.name}, "
             f"test from {(test_path or train_path).name} (doclist-test)"]
    if "reconstructed" in train_path.name:
        notes.append("train answer_start = first occurrence of the answer text (reconstructed SQuAD train; "
                     "right for 99.4% of answers where checkable, see the release's SOURCE.md)")
    return Prepared(KIND, splits, meta={"notes": notes})


def hub_spec(opts: dict) -> dict:
    return dict(HUB)


def from_hub(ds, opts: dict, raw: RawDir | None = None) -> Prepared:
    """ds: DatasetDict train/validation of {"id", "title", "context", "question", "answers"}.

    The hub has no Du split: the doclists are read from ``raw`` (the squad_qg release folder).
    """
    if raw is None:
        raise FileNotFoundError("squad_qg: source=hub needs Du's doclist-{train,test}.txt in raw_dir (xinyadu/nqg data/)")

    def rows(split):
        for r in ds[split]:
            yield r["title"], r["context"], r["id"], r["question"], r["answers"]["text"][0], int(r["answers"]["answer_start"][0])

    train_rows = list(rows("train"))
    splits = {
        "train": _examples(train_rows, _doclist(raw, "train"), "hub train"),
        "validation": _examples(rows("validation"), None, "hub validation"),
        "test": _examples(train_rows, _doclist(raw, "test"), "hub train (Du test)"),
    }
    return Prepared(KIND, splits, meta={"notes": ["hub SQuAD v1.1 with Du et al. doclists"]})


def generate(root: Path, seed: int = 0) -> Path:
    """Generated data in this task's prepared format under ``root`` (tests, the paper-scale dry run).

    Question-generation rows: a passage, an answer span in it and its question."""
    # imported here: the tests' generators (and torch) are no part of preparing real data
    from softmax_zoo.data.prepare.generated import pair_folder, questions

    return pair_folder(root, "squad_qg", questions, seed=seed)


register("squad_qg", sys.modules[__name__])
