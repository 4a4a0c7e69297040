"""WoS-46985 (Web of Science; Kowsari et al. 2017, HDLTex): abstract -> research area, English.

Release formats read (first found wins):
1. ``X.txt`` (one abstract a line) with ``Y.txt`` / ``YL1.txt`` (one label a line), as in
   HDLTex ``WOS46985/``; line i of X pairs with line i of the label file.
2. A tab-separated export of ``Data.xlsx`` with its columns ``Y1 Y2 Y Domain area keywords
   Abstract`` (``Data.tsv``, or the 1,000-row ``Data1k.tsv`` of the release folders beside the checkout, $SOFTMAX_ZOO_RAW/wos).

Task: ``level=Y`` (default) = the 134 areas; ``level=YL1`` = the 7 domains. Label strings are
the release's integer ids ("0".."133"); meta.json ``label_names`` gives the area/domain names
when the TSV has them. The label list is every id in Y.txt / YL1.txt when present (all 134 /
7 classes, even those absent from a text subset), else the ids seen.

The paper gives no split: a seeded stratified split is made here (``split_seed``,
``val_frac``, ``test_frac``; default 70/10/20, i.e. HDLTex's 80/20 train/test with a tenth
of the data as validation) by :func:`softmax_zoo.data.prepare.splits.stratified_split`.
"""

from __future__ import annotations

import csv
import logging
import sys
from pathlib import Path

from softmax_zoo.data.layout import SPLITS, open_text
from softmax_zoo.data.prepare.io import read_lines
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import register
from softmax_zoo.data.prepare.splits import stratified_split
from softmax_zoo.data.prepare.writer import Prepared

log = logging.getLogger(__name__)

RAW_NAME = "wos"
KIND = "classification"
OPTIONS = {"level": "Y", "split_seed": 0, "val_frac": 0.1, "test_frac": 0.2}
FULL_SIZE = 46985
_LEVELS = {"Y": ("Y.txt", "Y", "area"), "YL1": ("YL1.txt", "Y1", "Domain")}  # label file, TSV id column, TSV name column
_TSV_NAMES = ("Data.tsv", "Data.txt", "Data1k.tsv", "Data1k.txt")
_TSV_COLUMNS = ("Y1", "Y", "Domain", "area", "Abstract")
# Hub copy: a loading-script dataset, which datasets>=4 loads only through the hub's parquet
# export branch (a moving ref, not a commit: the newest pinnable script commit is 104bbb6c...).
HUB = {"id": "HDLTex/web_of_science", "config": "WOS46985", "revision": "refs/convert/parquet"}


def _label_ids(path) -> list[str]:
    ids = [v.strip() for v in read_lines(path) if v.strip()]
    bad = next((v for v in ids if not v.isdigit()), None)
    if bad is not None:
        raise ValueError(f"{path}: label {bad!r} is not a non-negative integer")
    return ids


def _read_tsv(path, level: str) -> tuple[list[str], list[str], dict[str, str]]:
    """(texts, label ids, {id: name}) from a Data.xlsx TSV export."""
    _, id_col, name_col = _LEVELS[level]
    with open_text(path) as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader, None)
        if header is None or any(c not in header for c in _TSV_COLUMNS):
            raise ValueError(f"{path}:1: expected a header with columns {list(_TSV_COLUMNS)}, got {header}")
        col = {c: header.index(c) for c in header}
        texts, labels, names = [], [], {}
        for row in reader:
            if len(row) != len(header):
                raise ValueError(f"{path}:{reader.line_num}: expected {len(header)} columns, got {len(row)}")
            label = row[col[id_col]].strip()
            if not label.isdigit():
                raise ValueError(f"{path}:{reader.line_num}: label {label!r} is not a non-negative integer")
            texts.append(row[col["Abstract"]].strip())
            labels.append(label)
            names.setdefault(label, row[col[name_col]].strip())
    return texts, labels, names


def _build(texts, labels, label_list, names, opts, notes) -> Prepared:
    assign = stratified_split(labels, opts["val_frac"], opts["test_frac"], opts["split_seed"])
    splits = {s: [] for s in SPLITS}
    for text, label, split in zip(texts, labels, assign):
        splits[split].append({"text": text, "label": label})
    meta = {
        "label_names": {k: names[k] for k in sorted(names, key=int)} if names else {},
        "split": (
            f"stratified by label: per class (sorted), shuffle with random.Random({opts['split_seed']}), "
            f"round(n*{opts['test_frac']}) test, round(n*{opts['val_frac']}) validation, rest train "
            "(>= 1 train per class); order within a split = file order"
        ),
        "notes": notes,
    }
    return Prepared(KIND, splits, labels=label_list, meta=meta)


def load_local(raw: RawDir, opts: dict) -> Prepared:
    if opts["level"] not in _LEVELS:
        raise ValueError(f"level must be one of {sorted(_LEVELS)}, got {opts['level']!r}")
    label_file = _LEVELS[opts["level"]][0]
    x_path = raw.find("X.txt")
    label_path = raw.find(label_file)
    if x_path is not None:
        if label_path is None:
            raw.require(label_file, what=f"labels for X.txt ({opts['level']})")
        texts = [t.strip() for t in read_lines(x_path)]
        labels = _label_ids(label_path)
        if len(texts) != len(labels):
            raise ValueError(f"{x_path} has {len(texts)} lines but {label_path} has {len(labels)}")
        names = {}
    else:
        tsv = raw.require(*_TSV_NAMES, "X.txt", what="WoS abstracts (X.txt with Y.txt/YL1.txt, or a TSV export of Data.xlsx)")
        texts, labels, names = _read_tsv(tsv, opts["level"])
    label_list = sorted(set(_label_ids(label_path)) if label_path else set(labels), key=int)
    notes = []
    if len(texts) < FULL_SIZE:
        notes.append(
            f"SUBSET: {len(texts)} of the {FULL_SIZE} WoS-46985 abstracts; results are not comparable "
            "with published WoS-46985 numbers"
        )
        log.warning("wos: %s", notes[-1])
    return _build(texts, labels, label_list, names, opts, notes)


def hub_spec(opts: dict) -> dict:
    if opts["level"] not in _LEVELS:
        raise ValueError(f"level must be one of {sorted(_LEVELS)}, got {opts['level']!r}")
    return dict(HUB)


def from_hub(ds, opts: dict, raw: RawDir | None = None) -> Prepared:
    """ds: DatasetDict with one "train" split of {"input_data", "label", "label_level_1", "label_level_2"}."""
    rows = ds["train"]
    column = "label" if opts["level"] == "Y" else "label_level_1"
    texts = [t.strip() for t in rows["input_data"]]
    labels = [str(v) for v in rows[column]]
    label_list = sorted(set(labels), key=int)
    return _build(texts, labels, label_list, {}, opts, [])


def generate(root: Path, seed: int = 0) -> Path:
    """Generated data in this task's prepared format under ``root`` (tests, the paper-scale dry run).

    Long English abstracts of 40-80 words."""
    # imported here: the tests' generators (and torch) are no part of preparing real data
    from softmax_zoo.data.prepare.generated import classification_folder, english

    return classification_folder(root, "wos", english(40, 80), seed=seed)


register("wos", sys.modules[__name__])
