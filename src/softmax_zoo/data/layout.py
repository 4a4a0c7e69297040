"""The on-disk and in-batch contract between data preparation and the runtime loaders.

A prepared folder ``data/<task>/`` holds (formats in data/README.md):

- one file per split of :data:`SPLITS`: ``<split>.jsonl`` (classification, seq2seq: one JSON
  object a line) or ``<split>.txt`` (lm: one sentence a line), see :func:`split_file`;
- ``meta.json``: kind, counts, labels, source, sha256 of the raw and of the written files;
- ``vocab.txt`` (lm: ``word<TAB>count`` of the train split, :data:`EOS` counted once per sentence)
  or ``char_vocab.txt`` (one character a line, id = line index).

:mod:`softmax_zoo.data.prepare` writes it; the runtime loaders read it with the readers below.
Label positions that carry no target are :data:`IGNORE_INDEX`, the losses' default ignore_index.
"""

from __future__ import annotations

import gzip
import json
import os
from operator import itemgetter
from pathlib import Path
from typing import Any, Iterator

SPLITS = ("train", "validation", "test")
KINDS = ("classification", "seq2seq", "lm")
FORMAT_VERSION = 1  # meta.json "format_version"
META_FILE = "meta.json"
VOCAB_FILE = "vocab.txt"
CHAR_VOCAB_FILE = "char_vocab.txt"
EOS, WORD_UNK = "<eos>", "<unk>"  # end of sentence and unknown word of the LM vocabulary
IGNORE_INDEX = -100


def split_file(split: str, kind: str) -> str:
    """File name of one split: ``<split>.txt`` for kind "lm", ``<split>.jsonl`` otherwise."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return f"{split}.txt" if kind == "lm" else f"{split}.jsonl"


def vocab_order(counts: dict[str, int]) -> list[tuple[str, int]]:
    """``(word, count)`` pairs in vocab.txt order: decreasing count, ties by word (deterministic)."""
    items = sorted(counts.items())  # by word; the stable sort below keeps this order within a count
    items.sort(key=itemgetter(1), reverse=True)
    return items


def open_text(path: str | Path):
    """Open a UTF-8 text file for reading (``*.gz`` gunzipped); lines end at LF only (a stray CR stays in the line)."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def read_json(path: str | Path) -> Any:
    """Load one JSON document (``.gz`` allowed); a syntax error names the file, line and column."""
    with open_text(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` for each non-blank line of a JSON Lines file.

    Raises:
        ValueError: ``<file>:<line>: malformed JSON ...`` on a line that does not parse, or whose
            value is not a JSON object.
    """
    with open_text(path) as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{lineno}: malformed JSON: {e.msg} (column {e.colno})") from None
            if not isinstance(obj, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


DEFAULT_DATA_ROOT = "data"  # where `make data` writes <task>/ unless $SOFTMAX_ZOO_DATA names another root


def data_root() -> Path:
    """The root `make data` writes prepared tasks into: ``$SOFTMAX_ZOO_DATA``, else ``data``."""
    return Path(os.environ.get("SOFTMAX_ZOO_DATA") or DEFAULT_DATA_ROOT)


def prepare_command(task: str, data_dir: str | Path) -> str:
    """The command that writes ``task``'s prepared data into ``data_dir``: ``make data TASK=<task>`` for the default
    folder (:func:`data_root`/<task>), else with ``out_dir=`` its parent (the preparer writes ``<out_dir>/<task>``);
    a folder not named after the task also needs ``task.data_dir=`` pointed at what that writes."""
    folder = Path(data_dir).absolute()
    if folder == (data_root() / task).absolute():
        return f"make data TASK={task}"
    command = f'make data TASK={task} DATA_ARGS="out_dir={folder.parent}"'
    return command if folder.name == task else f"{command}, then task.data_dir={folder.parent / task}"


def read_meta(data_dir: str | Path, kind: str | None = None, task: str | None = None) -> dict[str, Any]:
    """``<data_dir>/meta.json``; with ``kind``, a folder of another kind raises ``ValueError``. A meta.json that does
    not parse (truncated, corrupt) raises ``ValueError`` naming it and, with ``task``, the command that writes it again."""
    path = Path(data_dir) / META_FILE
    try:
        meta = read_json(path)
    except ValueError as e:
        again = f"rerun `{prepare_command(task, data_dir)}`" if task else "prepare the data again (make data TASK=<task>)"
        raise ValueError(f"{e}: the prepared data is damaged; {again}") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(meta).__name__}")
    if kind is not None and meta.get("kind") != kind:
        raise ValueError(f"{path}: expected a {kind} dataset, got kind={meta.get('kind')!r}")
    return meta


def missing_split_message(data_dir: str | Path, task: str, files: list[str]) -> str | None:
    """Why ``files`` are absent from a prepared folder whose release lacked their splits, and what to do instead.

    A preparation without a split (wikitext2 from a release without its train text) records it in
    meta.json: ``missing_splits``, and where the preparer knows them the release file each needs
    (``missing_files``) and the tasks of the same kind that have every split (``alternatives``).
    Preparing again cannot make such a file, so this message replaces "run make data".

    Returns:
        The message, or None when ``data_dir`` has no meta.json or none of ``files`` is a missing split's.
    """
    data_dir = Path(data_dir)
    if not (data_dir / META_FILE).is_file():
        return None
    meta = read_meta(data_dir)
    splits = [s for s in meta.get("missing_splits", []) if split_file(s, meta.get("kind", "")) in files]
    if not splits:
        return None
    source = meta.get("source") or {}
    release = source.get("path") or source.get("id") or "the release"
    needs = meta.get("missing_files") or {}
    lacks = ", ".join(f"{s} ({needs[s]})" if s in needs else s for s in splits)
    held = ", ".join(s for s in SPLITS if s in meta.get("splits", {})) or "no split"
    instead = meta.get("alternatives") or []
    return (
        f"task {task!r} needs the {'/'.join(splits)} split, but {data_dir} was prepared without it: the release in "
        f"{release} has no {lacks}, so `make data TASK={task}` cannot make {', '.join(split_file(s, meta['kind']) for s in splits)} "
        f"(the folder holds {held}). To run {task}, put the missing file into {release} and run `make data TASK={task}` "
        "again" + (f"; or train the same models on {' or '.join(f'task={t}' for t in instead)}" if instead else "") + "."
    )

