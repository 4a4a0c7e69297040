"""Prepared classification data (``data/<task>/``) as torch datasets, with a padding collator.

The prepared format (:mod:`softmax_zoo.data.layout`): ``{train,validation,test}.jsonl`` with
``{"text", "label"}`` (label = the label string) and ``meta.json`` with the ordered label list
(index = class id), counts and sha256 of every file.

Two dataset forms:

- :class:`TokenizedDataset`: token ids per example (an encoder runs on every batch);
- :class:`FeatureDataset`: one pooled feature vector per example, precomputed by a frozen encoder
- :class:`StateDataset`: one example's token states (T_i, d), precomputed by a frozen encoder's lower layers
  (the cpu scale's English models; see :mod:`softmax_zoo.tasks.classification`).
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from softmax_zoo.data.layout import META_FILE, read_jsonl, read_meta, split_file
from softmax_zoo.data.tokenizers import CharTokenizer
from softmax_zoo.files import json_key


def load_meta(data_dir: str | Path) -> dict[str, Any]:
    """meta.json of a prepared classification folder (check it exists with ``tasks.base.require_prepared``).

    Raises:
        ValueError: the folder is not a classification dataset with a label list.
    """
    meta = read_meta(data_dir, kind="classification")
    if not meta.get("labels"):
        raise ValueError(f"{Path(data_dir) / META_FILE}: expected a classification dataset with a label list, got none")
    return meta


def data_fingerprint(meta: dict[str, Any]) -> str:
    """Short sha256 over the sha256 of every prepared file: names one exact version of the data."""
    files = meta.get("outputs_sha256") or meta.get("raw_sha256") or {}
    return json_key(files)


def read_split(data_dir: str | Path, split: str, labels: Sequence[str]) -> tuple[list[str], list[int]]:
    """Texts and class ids of one split; a label missing from ``labels`` raises ``ValueError``."""
    path = Path(data_dir) / split_file(split, "classification")
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the prepared folder {data_dir} has no {split!r} split")
    index = {label: i for i, label in enumerate(labels)}
    texts, ids = [], []
    for lineno, ex in read_jsonl(path):
        if ex.get("label") not in index:
            raise ValueError(f"{path}:{lineno}: label {ex.get('label')!r} is not in meta.json's {len(index)} labels")
        texts.append(ex["text"])
        ids.append(index[ex["label"]])
    return texts, ids


def stratified_subset(labels: Sequence[int], size: int | float, seed: int) -> list[int]:
    """Indices of a class-stratified random sample, the same for the same (labels, size, seed).

    Each class keeps ``round(size_fraction · n_c)`` of its ``n_c`` examples, at least one, so no
    class present in ``labels`` disappears. Indices are returned sorted (original order kept).

    Args:
        labels: (N,) class id of each example.
        size: examples to keep: an int in [1, N], or a fraction in (0, 1].
        seed: sampling seed (independent of the global torch/python random state).
    """
    n = len(labels)
    if isinstance(size, float):
        if not 0.0 < size <= 1.0:
            raise ValueError(f"subset fraction must be in (0, 1], got {size}")
        fraction = size
    else:
        if not 1 <= size <= n:
            raise ValueError(f"subset size must be in [1, {n}], got {size}")
        fraction = size / n
    by_class: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(labels):
        by_class[c].append(i)
    rng = random.Random(seed)
    keep = []
    for c in sorted(by_class):
        members = by_class[c]
        k = max(1, round(fraction * len(members)))
        keep.extend(rng.sample(members, k))
    return sorted(keep)


def tokenize(texts: Sequence[str], tokenizer: Any, max_length: int) -> list[list[int]]:
    """Token ids of each text, [CLS]/[SEP] included, truncated to ``max_length``.

    Args:
        tokenizer: a :class:`~softmax_zoo.data.tokenizers.CharTokenizer` or a transformers tokenizer.
    """
    if max_length < 3:
        raise ValueError(f"max_length must be >= 3, got {max_length}")
    if isinstance(tokenizer, CharTokenizer):
        return [tokenizer.encode(t, max_length=max_length) for t in texts]
    return tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]


def pad_id_of(tokenizer: Any) -> int:
    """The padding id of a char or transformers tokenizer."""
    pad = tokenizer.pad_id if isinstance(tokenizer, CharTokenizer) else tokenizer.pad_token_id
    if pad is None:
        raise ValueError(f"tokenizer {type(tokenizer).__name__} has no padding token")
    return pad


class LabelledDataset(torch.utils.data.Dataset):
    """Examples ``{<key>: input, "labels": int}``; subclasses name the key and how inputs are stored.

    Args:
        labels: class id per example.
    """

    key = "inputs"

    def __init__(self, labels: Sequence[int]) -> None:
        self.labels = list(labels)

    def input(self, i: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict[str, Any]:
        return {self.key: self.input(i), "labels": self.labels[i]}


class TokenizedDataset(LabelledDataset):
    """Examples ``{"input_ids": list[int], "labels": int}``.

    Args:
        input_ids: token ids per example (already truncated).
        labels: class id per example.
    """

    key = "input_ids"

    def __init__(self, input_ids: Sequence[Sequence[int]], labels: Sequence[int]) -> None:
        if len(input_ids) != len(labels):
            raise ValueError(f"{len(input_ids)} token sequences but {len(labels)} labels")
        super().__init__(labels)
        self.input_ids = [list(ids) for ids in input_ids]

    def input(self, i: int) -> list[int]:
        return self.input_ids[i]


class FeatureDataset(LabelledDataset):
    """Examples ``{"features": (d,) tensor, "labels": int}`` of precomputed pooled features.

    Args:
        features: (N, d) pooled encoder outputs.
        labels: (N,) class ids.
    """

    key = "features"

    def __init__(self, features: torch.Tensor, labels: Sequence[int]) -> None:
        if features.dim() != 2 or features.shape[0] != len(labels):
            raise ValueError(f"features must be (N, d) with N = {len(labels)} labels, got {tuple(features.shape)}")
        super().__init__(labels)
        self.features = features

    def input(self, i: int) -> torch.Tensor:
        return self.features[i]


class StateDataset(LabelledDataset):
    """Examples ``{"states": (T_i, d) tensor, "labels": int}`` of cached token states (a frozen encoder's lower layers).

    Args:
        states: (sum of T_i, d) every example's token states, concatenated in order.
        lengths: (N,) tokens per example.
        labels: (N,) class ids.
    """

    key = "states"

    def __init__(self, states: torch.Tensor, lengths: torch.Tensor, labels: Sequence[int]) -> None:
        if lengths.dim() != 1 or len(lengths) != len(labels) or states.dim() != 2 or int(lengths.sum()) != states.shape[0]:
            raise ValueError(
                f"states must be (sum of lengths, d) and lengths (N,) with N = {len(labels)} labels, "
                f"got states {tuple(states.shape)}, lengths {tuple(lengths.shape)} summing to {int(lengths.sum())}"
            )
        super().__init__(labels)
        self.states = states
        self.offsets = [0, *torch.cumsum(lengths, 0).tolist()]

    def input(self, i: int) -> torch.Tensor:
        return self.states[self.offsets[i] : self.offsets[i + 1]]


class ClassificationCollator:
    """List of examples -> batch of tensors.

    Token examples give ``input_ids`` (B, T) right-padded with ``pad_id`` to the longest in the
    batch, ``attention_mask`` (B, T) and ``labels`` (B,); feature examples give ``features`` (B, d)
    and ``labels`` (B,); state examples give ``states`` (B, T, d) zero-padded, ``attention_mask`` and ``labels``.

    Args:
        pad_id: padding token id.
    """

    def __init__(self, pad_id: int = 0) -> None:
        self.pad_id = pad_id

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if not examples:
            raise ValueError("cannot collate an empty batch")
        labels = torch.tensor([ex["labels"] for ex in examples], dtype=torch.long)
        if "features" in examples[0]:
            return {"features": torch.stack([ex["features"] for ex in examples]), "labels": labels}
        if "states" in examples[0]:
            return {**self._pad_states([ex["states"] for ex in examples]), "labels": labels}
        longest = max(len(ex["input_ids"]) for ex in examples)
        input_ids = torch.full((len(examples), longest), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(examples), longest), dtype=torch.long)
        for row, ex in enumerate(examples):
            ids = ex["input_ids"]
            input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            attention_mask[row, : len(ids)] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


    @staticmethod
    def _pad_states(states: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        """[(T_i, d)] -> ``states`` (B, T, d) zero-padded to the longest, ``attention_mask`` (B, T)."""
        longest = max(len(x) for x in states)
        padded = states[0].new_zeros((len(states), longest, states[0].shape[-1]))
        attention_mask = torch.zeros((len(states), longest), dtype=torch.long)
        for row, x in enumerate(states):
            padded[row, : len(x)] = x
            attention_mask[row, : len(x)] = 1
        return {"states": padded, "attention_mask": attention_mask}


def batches(dataset: torch.utils.data.Dataset, collator: Callable, batch_size: int):
    """Yield collated batches of ``dataset`` in order (evaluation and feature caching)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    for start in range(0, len(dataset), batch_size):
        yield collator([dataset[i] for i in range(start, min(start + batch_size, len(dataset)))])
