"""Write a loaded dataset as the prepared folder ``data/<task>/`` (formats in data/README.md).

Loaders (one module per dataset family) turn release files or hub datasets into a
:class:`Prepared`; this module is the single place that checks examples, drops empty ones
(counted in meta.json), writes the split files, the LM vocabulary and meta.json, all inside
:func:`~softmax_zoo.data.prepare.io.atomic_dir` so that a half-written folder never looks complete.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from softmax_zoo.data.layout import (
    CHAR_VOCAB_FILE,
    EOS,
    FORMAT_VERSION,
    KINDS,
    META_FILE,
    SPLITS,
    VOCAB_FILE,
    split_file,
    vocab_order,
)
from softmax_zoo.data.prepare.io import atomic_dir, write_json, write_jsonl
from softmax_zoo.data.tokenizers import CharTokenizer
from softmax_zoo.files import sha256_file

log = logging.getLogger(__name__)

_REQUIRED = {"classification": ("text", "label"), "seq2seq": ("source", "target")}


@dataclass
class Prepared:
    """A dataset loaded from its release files or the hub, ready to write.

    Attributes:
        kind: "classification", "seq2seq" or "lm".
        splits: split name -> examples. classification: dicts {"text", "label"}; seq2seq: dicts
            {"source", "target", ...}; lm: an iterable of batches (lists) of raw lines, consumed
            once, so that a corpus of any size streams through in bounded memory.
        labels: classification only: the ordered label list (index = class id).
        meta: extra meta.json entries from the loader (notes, label names, split definition).
        dropped: split -> reason -> count, for examples the loader already dropped.
        char_vocab: write ``char_vocab.txt`` (a :class:`CharTokenizer` of the train split).
        vocab_counts: lm only: word counts to write as vocab.txt when there is no train text
            (WikiText-2 here); otherwise vocab.txt is counted from the train split.
    """

    kind: str
    splits: dict[str, Any]
    labels: list[str] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    dropped: dict[str, dict[str, int]] = field(default_factory=dict)
    char_vocab: bool = False
    vocab_counts: dict[str, int] | None = None


def _drop(dropped: dict, split: str, reason: str, n: int = 1) -> None:
    bucket = dropped.setdefault(split, {})
    bucket[reason] = bucket.get(reason, 0) + n


def _check_examples(task: str, prep: Prepared, split: str, examples: Iterable[dict], dropped: dict) -> list[dict]:
    """Examples of one split, empty ones dropped (counted); a label outside the list raises."""
    fields = _REQUIRED[prep.kind]
    labels = set(prep.labels or ())
    kept = []
    for i, ex in enumerate(examples):
        missing = [f for f in fields if f not in ex]
        if missing:
            raise ValueError(f"{task}/{split} example {i}: missing field(s) {missing}")
        empty = [f for f in fields if isinstance(ex[f], str) and not ex[f].strip()]
        if empty:
            _drop(dropped, split, f"empty {empty[0]}")
            continue
        if prep.kind == "classification" and ex["label"] not in labels:
            raise ValueError(
                f"{task}/{split} example {i}: label {ex['label']!r} is not in the label list "
                f"({len(labels)} labels)"
            )
        kept.append(ex)
    return kept


def _write_lm_split(path: Path, batches: Iterable[list[str]], counter: Counter | None) -> tuple[int, int, int]:
    """Stream one LM split to ``path``: whitespace normalised, empty lines dropped.

    Returns:
        (sentences written, words written, empty lines dropped)
    """
    n_sent = n_words = n_empty = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for batch in batches:
            kept, words = [], []
            for line in batch:
                toks = line.split()
                if toks:
                    kept.append(" ".join(toks))
                    words.extend(toks)
            n_empty += len(batch) - len(kept)
            if kept:
                f.write("\n".join(kept) + "\n")
            n_sent += len(kept)
            n_words += len(words)
            if counter is not None:
                counter.update(words)
    return n_sent, n_words, n_empty


def write_vocab(path: Path, counts: dict[str, int]) -> None:
    """``word<TAB>count`` lines, decreasing count, ties broken by the word (deterministic)."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(f"{w}\t{c}\n" for w, c in vocab_order(counts))


def write_prepared(
    task: str,
    prep: Prepared,
    out_dir: str | Path,
    source: dict[str, Any],
    raw_sha256: dict[str, str],
    options: dict[str, Any],
) -> dict[str, Any]:
    """Write ``out_dir`` (replaced atomically) and return its meta.json content.

    Args:
        task: task name, e.g. "clinc_oos".
        prep: what the loader produced.
        out_dir: the task folder, e.g. ``data/clinc_oos``.
        source: where the data came from ({"type": "local", "path"} or {"type": "hub", "id", ...}).
        raw_sha256: release file -> sha256, for every file read.
        options: the options used (defaults filled in).

    Raises:
        ValueError: unknown kind or split, a label outside the label list, a missing field.
    """
    if prep.kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {prep.kind!r}")
    unknown = set(prep.splits) - set(SPLITS)
    if unknown:
        raise ValueError(f"{task}: unknown split(s) {sorted(unknown)}; expected {SPLITS}")
    dropped = {s: dict(r) for s, r in prep.dropped.items()}
    counts: dict[str, Any] = {}
    with atomic_dir(out_dir) as tmp:
        if prep.kind == "lm":
            counter: Counter | None = None
            for split in SPLITS:
                if split not in prep.splits:
                    continue
                counter_split = Counter() if split == "train" else None
                n_sent, n_words, n_empty = _write_lm_split(tmp / split_file(split, "lm"), prep.splits[split], counter_split)
                if n_empty:
                    _drop(dropped, split, "empty line", n_empty)
                counts[split] = {"sentences": n_sent, "words": n_words, "tokens_with_eos": n_sent + n_words}
                if counter_split is not None:
                    counter_split[EOS] += n_sent  # one <eos> per sentence: the most frequent token
                    counter = counter_split
            if counter is None and prep.vocab_counts is not None:
                counter = Counter(prep.vocab_counts)
            if counter is not None:
                write_vocab(tmp / VOCAB_FILE, counter)
                counts["vocab_size"] = len(counter)
        else:
            kept_train = None
            for split in SPLITS:
                if split not in prep.splits:
                    continue
                kept = _check_examples(task, prep, split, prep.splits[split], dropped)
                counts[split] = write_jsonl(tmp / split_file(split, prep.kind), kept)
                if split == "train":
                    kept_train = kept
            if prep.char_vocab and kept_train is not None:
                CharTokenizer.build(ex["text"] for ex in kept_train).save(tmp / CHAR_VOCAB_FILE)
        for split, reasons in sorted(dropped.items()):
            for reason, n in sorted(reasons.items()):
                log.warning("%s/%s: dropped %d example(s): %s", task, split, n, reason)
        meta = {
            "task": task,
            "kind": prep.kind,
            "format_version": FORMAT_VERSION,
            "source": source,
            "raw_sha256": raw_sha256,
            "splits": {s: counts[s] for s in SPLITS if s in counts},
            "missing_splits": [s for s in SPLITS if s not in counts],
            "dropped": dropped,
            "options": options,
            **({"labels": list(prep.labels), "num_labels": len(prep.labels)} if prep.labels is not None else {}),
            **({"vocab_size": counts["vocab_size"]} if "vocab_size" in counts else {}),
            **prep.meta,
        }
        meta["outputs_sha256"] = {p.name: sha256_file(p) for p in sorted(tmp.iterdir())}
        write_json(tmp / META_FILE, meta)
    return meta
