"""IFLYTEK (CLUE; Xu et al., COLING 2020): app description -> one of 119 app categories, Chinese.

Release formats read:
1. CLUE ``train.json`` / ``dev.json`` / ``labels.json`` (JSON Lines, string labels "0".."118"):
   train -> train, dev -> validation AND test (CLUE's test.json has no labels, so results are
   reported on dev, as in the CLUE and Sparse-softmax papers; test.json is never read).
2. Otherwise FewCLUE (Xu et al. 2021): ``train_few_all.json`` -> train, ``dev_few_all.json`` ->
   validation, ``test_public.json`` (labelled) -> test. FewCLUE's int labels are CLUE label ids.

Labels: CLUE ids "0".."118" in id order (index = CLUE id), from ``labels.json`` (or the derived
``labels_derived.json``); meta.json ``label_names`` maps them to CLUE's names. Each example's
``label_des`` must agree with the label list (else an error names the file and line). A
character vocabulary of the train split is saved as ``char_vocab.txt``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from softmax_zoo.data.layout import read_jsonl
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import register
from softmax_zoo.data.prepare.writer import Prepared

RAW_NAME = "iflytek"
KIND = "classification"
OPTIONS: dict = {}
_CLUE = {"train": "train.json", "validation": "dev.json"}
_FEWCLUE = {"train": "train_few_all.json", "validation": "dev_few_all.json", "test": "test_public.json"}
_LABEL_FILES = ("labels.json", "labels_derived.json")
# Revision: "main" (no commit id could be looked up offline; pin one when online).
HUB = {"id": "clue/clue", "config": "iflytek", "revision": "main"}


def _read_labels(path) -> dict[str, str]:
    names = {}
    for lineno, obj in read_jsonl(path):
        if "label" not in obj or "label_des" not in obj:
            raise ValueError(f"{path}:{lineno}: expected {{'label', 'label_des'}}, got keys {sorted(obj)}")
        names[str(obj["label"])] = obj["label_des"]
    return names


def _read_split(path, names: dict[str, str]) -> list[dict]:
    out = []
    for lineno, obj in read_jsonl(path):
        if "sentence" not in obj or "label" not in obj:
            raise ValueError(f"{path}:{lineno}: expected keys 'sentence' and 'label', got {sorted(obj)}")
        label = str(obj["label"])
        if label not in names:
            raise ValueError(f"{path}:{lineno}: label {label!r} is not in the label list ({len(names)} labels)")
        if "label_des" in obj and obj["label_des"] != names[label]:
            raise ValueError(
                f"{path}:{lineno}: label {label} is {obj['label_des']!r} here but {names[label]!r} in the label list"
            )
        out.append({"text": obj["sentence"].strip(), "label": label})
    return out


def _prepared(splits: dict[str, list[dict]], names: dict[str, str], notes: list[str]) -> Prepared:
    labels = sorted(names, key=int)
    return Prepared(KIND, splits, labels=labels, char_vocab=True,
                    meta={"label_names": {k: names[k] for k in labels}, "notes": notes})


def load_local(raw: RawDir, opts: dict) -> Prepared:
    names = _read_labels(raw.require(*_LABEL_FILES, what="IFLYTEK label list"))
    clue_train = raw.find(_CLUE["train"])
    if clue_train is not None:
        train = _read_split(clue_train, names)
        dev = _read_split(raw.require(_CLUE["validation"], what="CLUE IFLYTEK dev set"), names)
        notes = ["CLUE train/dev; test = CLUE dev (the CLUE test set has no labels and is never used)"]
        return _prepared({"train": train, "validation": dev, "test": dev}, names, notes)
    files = {s: raw.require(n, what=f"IFLYTEK {s} file (CLUE train.json/dev.json, or FewCLUE {n})")
             for s, n in _FEWCLUE.items()}
    notes = [
        "FewCLUE pool, NOT the CLUE train/dev split: train_few_all -> train, dev_few_all -> validation, "
        "test_public -> test; results are not comparable with CLUE IFLYTEK dev numbers"
    ]
    return _prepared({s: _read_split(p, names) for s, p in files.items()}, names, notes)


def hub_spec(opts: dict) -> dict:
    return dict(HUB)


def from_hub(ds, opts: dict, raw: RawDir | None = None) -> Prepared:
    """ds: DatasetDict train/validation(/test) of {"sentence", "label": ClassLabel("0".."118"), "idx"}."""
    label_names = ds["train"].features["label"].names  # CLUE ids as strings, in id order
    names = {n: n for n in label_names}
    splits = {s: [{"text": r["sentence"].strip(), "label": label_names[r["label"]]} for r in ds[s]]
              for s in ("train", "validation")}
    splits["test"] = splits["validation"]
    notes = ["hub CLUE train/validation; test = validation (the CLUE test set has no labels)"]
    return _prepared(splits, names, notes)


def generate(root: Path, seed: int = 0) -> Path:
    """Generated data in this task's prepared format under ``root`` (tests, the paper-scale dry run).

    Long Chinese app descriptions, with char_vocab.txt."""
    # imported here: the tests' generators (and torch) are no part of preparing real data
    from softmax_zoo.data.prepare.generated import chinese, classification_folder

    return classification_folder(root, "iflytek", chinese, char_vocab=True, seed=seed)


register("iflytek", sys.modules[__name__])
