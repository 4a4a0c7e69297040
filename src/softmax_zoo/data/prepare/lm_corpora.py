"""Word-level language modelling corpora: One Billion Word (lm1b), Penn Treebank, WikiText-2.

Everything streams: split files are read in batches of lines and written as they come, and the
vocabulary (``vocab.txt``: word<TAB>count of the train split, ``<eos>`` = number of sentences)
is a running count, so the 30M-sentence lm1b corpus prepares in bounded memory.

- lm1b (Chelba et al. 2013): release shards ``news.en-000NN-of-00100`` (train) and
  ``news.en.heldout-000NN-of-00050`` (held-out). With training shards: train = all of them,
  validation = held-out shard 1, test = held-out shard 0 (the usual test shard). With held-out
  shards only (e.g. 10-13): train = all but the last two, validation = the
  second last, test = the last. ``train_heldout=``, ``valid_heldout=``, ``test_heldout=``
  (comma-separated shard numbers) override.
- ptb (Mikolov): ``ptb.{train,valid,test}.txt``.
- wikitext2 (Merity et al. 2016): ``wiki.{train,valid,test}.tokens``. Without the train file
  (as in the release folders beside the checkout, $SOFTMAX_ZOO_RAW) validation and test are prepared, there is no train.txt, and
  vocab.txt comes from the train split's counts in a fairseq ``dict.txt``-style file when
  present (``train_vocab_counts.fairseq_dict.txt``, "word count" lines; it has no ``<unk>``
  or ``<eos>`` entries). meta.json says so (``missing_splits``, ``notes``), and names the
  release file each missing split needs (``missing_files``) and the LM tasks that train instead
  (``alternatives``): what :func:`softmax_zoo.data.layout.missing_split_message` tells a run.
Empty lines (WikiText's blank lines between paragraphs) are dropped and counted.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Iterable, Iterator

from softmax_zoo.data.layout import SPLITS, open_text
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import register
from softmax_zoo.data.prepare.writer import Prepared

log = logging.getLogger(__name__)

KIND = "lm"
BATCH_BYTES = 1 << 22  # read ~4 MiB of lines at a time: bounded memory, few Python calls
_TRAIN_SHARD = re.compile(r"news\.en-(\d{5})-of-\d{5}$")
_HELDOUT_SHARD = re.compile(r"news\.en\.heldout-(\d{5})-of-\d{5}$")
_SPLIT_KEYS = {"train": "train_heldout", "validation": "valid_heldout", "test": "test_heldout"}


def line_batches(paths: Iterable[Path]) -> Iterator[list[str]]:
    """Lines of the files, in order, as lists of about :data:`BATCH_BYTES` of text."""
    for path in paths:
        with open_text(path) as f:
            while batch := f.readlines(BATCH_BYTES):
                yield batch


def _hub_lm(ds, column: str, notes: list[str]) -> Prepared:
    splits = {s: (b[column] for b in ds[s].iter(batch_size=65536)) for s in SPLITS if s in ds}
    return Prepared(KIND, splits, meta={"notes": notes})


class _LMTask:
    """Common shape of the three LM tasks (what :mod:`softmax_zoo.data.prepare.cli` expects of a task)."""

    KIND = KIND
    RAW_NAME = ""
    OPTIONS: dict = {}
    HUB: dict = {}
    HUB_COLUMN = "text"

    def hub_spec(self, opts: dict) -> dict:
        return dict(self.HUB)

    def from_hub(self, ds, opts: dict, raw: RawDir | None = None) -> Prepared:
        notes = [f"hub {self.HUB['id']}; splits the hub lacks are absent"]
        return _hub_lm(ds, self.HUB_COLUMN, notes)

    def generate(self, root: Path, seed: int = 0) -> Path:
        """Generated data in the LM format under ``root/<RAW_NAME>`` (tests, the paper-scale dry run): Zipf-distributed words."""
        # imported here: the tests' generators (and torch) are no part of preparing real data
        from softmax_zoo.data.prepare.generated import lm_corpus

        return lm_corpus(root, self.RAW_NAME, seed)


class _LM1B(_LMTask):
    RAW_NAME = "lm1b"
    OPTIONS = {"train_heldout": "", "valid_heldout": "", "test_heldout": ""}
    HUB = {"id": "lm1b", "revision": "refs/convert/parquet"}  # loading-script dataset: its parquet export

    @staticmethod
    def _shards(raw: RawDir, pattern: re.Pattern) -> dict[int, Path]:
        return {int(pattern.match(p.name).group(1)): p for p in raw.matching(lambda n: bool(pattern.match(n)))}

    def load_local(self, raw: RawDir, opts: dict) -> Prepared:
        train, heldout = self._shards(raw, _TRAIN_SHARD), self._shards(raw, _HELDOUT_SHARD)
        if not train and not heldout:
            raise FileNotFoundError(
                f"lm1b: no shards found: expected news.en-000NN-of-00100 (training-monolingual.tokenized.shuffled/) "
                f"or news.en.heldout-000NN-of-00050 (heldout-monolingual.tokenized.shuffled/) under {raw.root}"
            )
        chosen = {s: [int(x) for x in str(opts[k]).split(",") if x.strip()] for s, k in _SPLIT_KEYS.items()}
        numbers = sorted(heldout)
        if train:
            auto = {"train": [], "validation": [1], "test": [0]}
        elif len(numbers) >= 3:
            auto = {"train": numbers[:-2], "validation": [numbers[-2]], "test": [numbers[-1]]}
        else:
            raise ValueError(f"lm1b: no training shards and only {len(numbers)} held-out shard(s) {numbers}; need 3")
        chosen = {s: chosen[s] or auto[s] for s in chosen}
        for split, nums in chosen.items():
            missing = [n for n in nums if n not in heldout]
            if missing:
                raise FileNotFoundError(
                    f"lm1b: {split}: held-out shard(s) {missing} not found under {raw.root} (have {numbers})")
        files = {s: [raw.use(heldout[n]) for n in nums] for s, nums in chosen.items()}
        files["train"] = [raw.use(train[n]) for n in sorted(train)] + files["train"]
        definition = {s: [p.name for p in paths] for s, paths in files.items()}
        notes = []
        if not train:
            notes.append(
                "SUBSET: no training shards; held-out shards " + ", ".join(map(str, numbers)) + " split as "
                + "; ".join(f"{s} = {chosen[s]}" for s in chosen) + ". Not the benchmark's train/test; "
                "perplexities are not comparable with published lm1b numbers"
            )
            log.warning("lm1b: %s", notes[-1])
        return Prepared(KIND, {s: line_batches(p) for s, p in files.items()},
                        meta={"split_files": definition, "notes": notes})


class _PTB(_LMTask):
    RAW_NAME = "ptb"
    HUB = {"id": "ptb-text-only/ptb_text_only", "revision": "refs/convert/parquet"}  # loading-script dataset
    HUB_COLUMN = "sentence"

    def load_local(self, raw: RawDir, opts: dict) -> Prepared:
        files = {s: raw.require(f"ptb.{n}.txt", what=f"PTB {s} file")
                 for s, n in (("train", "train"), ("validation", "valid"), ("test", "test"))}
        return Prepared(KIND, {s: line_batches([p]) for s, p in files.items()})


class _WikiText2(_LMTask):
    RAW_NAME = "wikitext2"
    TRAIN_FILE = "wiki.train.tokens"
    ALTERNATIVES = ("ptb", "lm1b")  # word-level LM tasks whose preparation needs no wikitext2 file
    HUB = {"id": "Salesforce/wikitext", "config": "wikitext-2-v1", "revision": "main"}  # no commit id found offline
    VOCAB_FILES = ("train_vocab_counts.fairseq_dict.txt", "dict.txt")

    def load_local(self, raw: RawDir, opts: dict) -> Prepared:
        files = {s: raw.require(f"wiki.{n}.tokens", what=f"WikiText-2 {s} file")
                 for s, n in (("validation", "valid"), ("test", "test"))}
        train = raw.find(self.TRAIN_FILE)
        notes, vocab, missing = [], None, {}
        if train is not None:
            files = {"train": train, **files}
        else:
            notes.append(f"NO TRAIN SPLIT: {self.TRAIN_FILE} not found; validation and test only")
            missing = {"missing_files": {"train": self.TRAIN_FILE}, "alternatives": list(self.ALTERNATIVES)}
            vocab_path = raw.find(*self.VOCAB_FILES)
            if vocab_path is not None:
                vocab = _read_fairseq_dict(vocab_path)
                notes.append(f"vocab.txt = train-split counts from {vocab_path.name} (no <unk>/<eos> entries)")
            log.warning("wikitext2: %s", "; ".join(notes))
            log.warning(
                "wikitext2: task=wikitext2 cannot train on this preparation: add %s to %s and prepare again, "
                "or train an LM on %s", self.TRAIN_FILE, raw.root, " or ".join(f"task={t}" for t in self.ALTERNATIVES),
            )
        return Prepared(KIND, {s: line_batches([p]) for s, p in files.items()}, vocab_counts=vocab,
                        meta={"notes": notes, **missing})


def _read_fairseq_dict(path: Path) -> dict[str, int]:
    counts = {}
    with open_text(path) as f:
        for lineno, line in enumerate(f, start=1):
            parts = line.split()
            if len(parts) < 2 or not parts[1].isdigit():
                raise ValueError(f"{path}:{lineno}: expected 'word count', got {line.rstrip()!r}")
            counts[parts[0]] = int(parts[1])
    return counts


LM1B, PTB, WIKITEXT2 = register("lm1b", _LM1B()), register("ptb", _PTB()), register("wikitext2", _WikiText2())
