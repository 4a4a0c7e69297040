"""Classification data: reading prepared splits, stratified subsets, tokenisation, the collator."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from softmax_zoo.data.classification import (
    ClassificationCollator,
    FeatureDataset,
    TokenizedDataset,
    batches,
    load_meta,
    read_split,
    stratified_subset,
    tokenize,
)
from softmax_zoo.data.prepare.generated import CLASSIFICATION_SIZES as SIZES
from softmax_zoo.data.prepare.generated import NUM_CLASSES
from softmax_zoo.data.tokenizers import CharTokenizer


def test_read_split_maps_labels_to_meta_order(data_root):
    meta = load_meta(data_root / "clinc_oos")
    texts, ids = read_split(data_root / "clinc_oos", "validation", meta["labels"])
    assert len(texts) == len(ids) == SIZES["validation"]
    assert ids[:3] == [0, 1, 2] and max(ids) == NUM_CLASSES - 1  # generated in label order


def test_read_split_rejects_a_label_outside_meta(data_root):
    with pytest.raises(ValueError, match=r"train.jsonl:1: label .label_00. is not in meta.json's 2 labels"):
        read_split(data_root / "clinc_oos", "train", ["x", "y"])


def test_stratified_subset_is_deterministic_and_keeps_every_class():
    labels = [c for c in range(10) for _ in range(3 + 7 * c)]  # 3..66 examples per class
    a = stratified_subset(labels, 0.25, seed=0)
    assert a == stratified_subset(labels, 0.25, seed=0)
    assert a != stratified_subset(labels, 0.25, seed=1)
    assert a == sorted(a) and len(set(a)) == len(a)
    counts = Counter(labels[i] for i in a)
    full = Counter(labels)
    assert set(counts) == set(range(10))  # class 0 (3 examples) keeps round(0.75) -> at least 1
    for c in range(10):
        assert counts[c] == max(1, round(0.25 * full[c]))


def test_stratified_subset_int_size_and_bad_sizes():
    labels = [i % 4 for i in range(100)]
    assert len(stratified_subset(labels, 40, seed=3)) == 40
    with pytest.raises(ValueError, match="subset size must be in \\[1, 100\\], got 0"):
        stratified_subset(labels, 0, seed=0)
    with pytest.raises(ValueError, match="subset fraction must be in \\(0, 1\\], got 1.5"):
        stratified_subset(labels, 1.5, seed=0)


def test_tokenize_truncates_and_keeps_special_tokens():
    tok = CharTokenizer.build(["abcdef"])
    ids = tokenize(["abcdef", "ab"], tok, max_length=5)
    assert ids[0] == [tok.cls_id, *tok.encode("abc", add_special_tokens=False), tok.sep_id]
    assert len(ids[1]) == 4


def test_collator_pads_tokens_and_stacks_features():
    col = ClassificationCollator(pad_id=7)
    batch = col([TokenizedDataset([[1, 2, 3], [4]], [5, 6])[i] for i in range(2)])
    assert batch["input_ids"].tolist() == [[1, 2, 3], [4, 7, 7]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [5, 6] and batch["labels"].dtype == torch.long
    feats = FeatureDataset(torch.arange(12.0).reshape(3, 4), [0, 1, 2])
    fb = next(batches(feats, col, batch_size=2))
    assert fb["features"].shape == (2, 4) and fb["labels"].tolist() == [0, 1]
    assert [len(b["labels"]) for b in batches(feats, col, batch_size=2)] == [2, 1]


def test_feature_dataset_checks_shapes():
    with pytest.raises(ValueError, match=r"features must be \(N, d\) with N = 2 labels, got \(3, 4\)"):
        FeatureDataset(torch.zeros(3, 4), [0, 1])
