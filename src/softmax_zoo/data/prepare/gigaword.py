"""Gigaword headline generation (Rush et al. 2015 release; UniLM Gigaword-10k), English seq2seq.

Release formats read (per split, first found wins):
- Rush et al. / harvardnlp: ``train.article.txt`` + ``train.title.txt``;
  ``valid.article.filter.txt`` + ``valid.title.filter.txt`` (or the subsets
  ``valid.*.filter.first1000.txt``, ``valid.*.filter.10K.txt``); test ``input.txt`` +
  ``task1_ref0.txt`` (the 1,951-pair test set).
- UniLM naming: ``train.src`` + ``train.tgt`` (or ``train.src.10k`` + ``train.tgt.10k``),
  ``dev.src`` + ``dev.tgt``, ``test.src`` + ``test.tgt``.

Line i of the article file pairs with line i of the title file (different line counts raise).
The test set spells rare words ``UNK``, train/dev ``<unk>``: ``UNK`` tokens are rewritten to
``<unk>`` everywhere (counted in meta.json). The release's ``#`` digit masking is kept.
``train_size=N`` keeps the first N training pairs (``train_size=10000`` = the 10k low-resource
setting of UniLM / Sparse-softmax Table 5); ``dev=`` picks the validation file variant.
"""

from __future__ import annotations

import sys
from pathlib import Path

from softmax_zoo.data.layout import SPLITS
from softmax_zoo.data.prepare.io import read_lines
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import register
from softmax_zoo.data.prepare.writer import Prepared

RAW_NAME = "gigaword"
KIND = "seq2seq"
OPTIONS = {"train_size": None, "dev": "auto"}
UNK_SPELLINGS = ("UNK",)
UNK = "<unk>"
_TRAIN = [("train.article.txt", "train.title.txt"), ("train.src", "train.tgt"), ("train.src.10k", "train.tgt.10k")]
_DEV = {
    "full": [("valid.article.filter.txt", "valid.title.filter.txt"), ("dev.src", "dev.tgt")],
    "first1000": [("valid.article.filter.first1000.txt", "valid.title.filter.first1000.txt")],
    "10K": [("valid.article.filter.10K.txt", "valid.title.filter.10K.txt")],
}
_TEST = [("input.txt", "task1_ref0.txt"), ("test.src", "test.tgt")]
# A loading-script dataset (downloads the Rush et al. release): datasets>=4 reads its parquet export branch.
HUB = {"id": "Harvard/gigaword", "revision": "refs/convert/parquet"}
HUB_FALLBACK = True  # no release folder: the same release from the hub (prepare_task), so a fresh clone can prepare it


def _find_pair(raw: RawDir, candidates: list[tuple[str, str]], what: str):
    for article, title in candidates:
        a = raw.find(article)
        if a is not None:
            return a, raw.require(title, what=f"{what} titles matching {a.name}")
    names = [n for pair in candidates for n in pair]
    raise FileNotFoundError(f"gigaword: {what} not found: expected one of the pairs {names} under {raw.root}")


def _unify_unk(line: str, counter: list[int]) -> str:
    toks = line.split()
    n = sum(t in UNK_SPELLINGS for t in toks)
    if not n:
        return " ".join(toks)
    counter[0] += n
    return " ".join(UNK if t in UNK_SPELLINGS else t for t in toks)


def _pairs(articles: list[str], titles: list[str], counter: list[int]) -> list[dict]:
    return [{"source": _unify_unk(a, counter), "target": _unify_unk(t, counter)} for a, t in zip(articles, titles)]


def _read_pair(article_path, title_path) -> tuple[list[str], list[str]]:
    articles, titles = read_lines(article_path), read_lines(title_path)
    if len(articles) != len(titles):
        raise ValueError(f"{article_path} has {len(articles)} lines but {title_path} has {len(titles)}")
    return articles, titles


def _check_train_size(opts: dict) -> None:
    n = opts["train_size"]
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"train_size must be a positive integer, got {n!r}")


def _build(pairs: dict[str, tuple[list[str], list[str]]], opts: dict, files: dict) -> Prepared:
    _check_train_size(opts)
    counter = [0]
    available = len(pairs["train"][0])
    if opts["train_size"] is not None:
        if opts["train_size"] > available:
            raise ValueError(f"train_size={opts['train_size']} but only {available} training pairs exist")
        pairs["train"] = (pairs["train"][0][: opts["train_size"]], pairs["train"][1][: opts["train_size"]])
    splits = {s: _pairs(a, t, counter) for s, (a, t) in pairs.items()}
    meta = {
        "files": files,
        "train_selection": (f"first {opts['train_size']} of {available} pairs" if opts["train_size"]
                            else f"all {available} pairs"),
        "unk_tokens_rewritten": {"from": list(UNK_SPELLINGS), "to": UNK, "count": counter[0]},
    }
    return Prepared(KIND, splits, meta=meta)


def load_local(raw: RawDir, opts: dict) -> Prepared:
    _check_train_size(opts)
    if opts["dev"] != "auto" and opts["dev"] not in _DEV:
        raise ValueError(f"dev must be 'auto' or one of {sorted(_DEV)}, got {opts['dev']!r}")
    dev_candidates = [p for k in ("full", "first1000", "10K") for p in _DEV[k]] if opts["dev"] == "auto" else _DEV[opts["dev"]]
    found = {
        "train": _find_pair(raw, _TRAIN, "training pairs"),
        "validation": _find_pair(raw, dev_candidates, "validation pairs"),
        "test": _find_pair(raw, _TEST, "test pairs"),
    }
    pairs = {s: _read_pair(a, t) for s, (a, t) in found.items()}
    files = {s: [str(a.relative_to(raw.root)), str(t.relative_to(raw.root))] for s, (a, t) in found.items()}
    return _build(pairs, opts, files)


def hub_spec(opts: dict) -> dict:
    _check_train_size(opts)
    return dict(HUB)


def from_hub(ds, opts: dict, raw: RawDir | None = None) -> Prepared:
    """ds: DatasetDict train/validation/test of {"document", "summary"} (the same Rush et al. release)."""
    pairs = {s: (list(ds[s]["document"]), list(ds[s]["summary"])) for s in SPLITS}
    files = {s: f"hub split {s}" for s in pairs}
    return _build(pairs, opts, files)


def generate(root: Path, seed: int = 0) -> Path:
    """Generated data in this task's prepared format under ``root`` (tests, the paper-scale dry run).

    Summarisation pairs: a sentence and its first words as the title."""
    # imported here: the tests' generators (and torch) are no part of preparing real data
    from softmax_zoo.data.prepare.generated import pair_folder, summaries

    return pair_folder(root, "gigaword", summaries, seed=seed)


register("gigaword", sys.modules[__name__])
