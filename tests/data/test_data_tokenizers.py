"""Character tokenizer, LM word vocabulary, the pretrained MiniLM tokenizer, stratified split."""

from __future__ import annotations

from collections import Counter

import pytest

from softmax_zoo.data.prepare.splits import stratified_split
from softmax_zoo.data.tokenizers import SPECIAL_TOKENS, CharTokenizer, WordVocab, minilm_tokenizer


def test_char_tokenizer_build_save_load_roundtrip(tmp_path):
    tok = CharTokenizer.build(["打车打车软件", "地图 导航"], min_count=1)
    assert tok.tokens[:5] == list(SPECIAL_TOKENS) and tok.tokens[5:7] == ["打", "车"]  # by count
    assert " " not in tok.index
    tok.save(tmp_path / "v.txt")
    again = CharTokenizer.load(tmp_path / "v.txt")
    assert again.tokens == tok.tokens
    ids = again.encode("打车去火星")
    assert ids[0] == again.cls_id and ids[-1] == again.sep_id and ids.count(again.unk_id) == 3
    assert again.decode(ids) == "打车"  # specials, [UNK] included, are skipped
    assert again.decode(ids, skip_special_tokens=False) == "[CLS]打车[UNK][UNK][UNK][SEP]"
    assert again.encode("打车软件", max_length=4) == [2, tok.index["打"], tok.index["车"], 3]
    assert CharTokenizer.build(["aab"], min_count=2).tokens[5:] == ["a"]
    with pytest.raises(ValueError, match="max_length must be >= 3, got 2"):
        again.encode("x", max_length=2)
    with pytest.raises(ValueError, match="vocabulary must start with"):
        CharTokenizer(["a", "b"])
    with pytest.raises(ValueError, match="min_count must be >= 1, got 0"):
        CharTokenizer.build([], min_count=0)


def test_word_vocab_min_count_folds_into_unk(tmp_path):
    (tmp_path / "vocab.txt").write_text("<eos>\t5\nthe\t4\ncat\t2\n<unk>\t1\nzebra\t1\n")
    v = WordVocab.load(tmp_path / "vocab.txt", min_count=2)
    assert v.words == ["<eos>", "the", "<unk>", "cat"]  # <unk> = 1 + zebra's 1 = 2; tie with cat by word
    assert v.counts == [5, 4, 2, 2]
    assert v.encode("the zebra cat") == [1, 2, 3, 0]
    assert v.decode([1, 3]) == "the cat"
    full = WordVocab({"a": 3}, min_count=1)
    assert full.words == ["a", "<eos>", "<unk>"] and full.counts == [3, 0, 0]
    (tmp_path / "bad.txt").write_text("the 4\n")
    with pytest.raises(ValueError, match=r"bad\.txt:1: expected 'word<TAB>count'"):
        WordVocab.load(tmp_path / "bad.txt")


def test_minilm_tokenizer_loads_offline():
    tok = minilm_tokenizer()
    ids = tok("Hello world")["input_ids"]
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id and len(ids) == 4


def test_stratified_split_is_seeded_per_class_and_keeps_a_train_example():
    labels = ["a"] * 10 + ["b"] * 5 + ["c"]
    split = stratified_split(labels, val_frac=0.1, test_frac=0.2, seed=0)
    per = Counter(zip(labels, split))
    assert per[("a", "test")] == 2 and per[("a", "validation")] == 1 and per[("a", "train")] == 7
    assert per[("b", "test")] == 1 and per[("b", "validation")] == 1 and per[("b", "train")] == 3
    assert per[("c", "train")] == 1
    assert stratified_split(labels, 0.1, 0.2, seed=0) == split
    assert stratified_split(labels, 0.1, 0.2, seed=1) != split
    with pytest.raises(ValueError, match="val_frac \\+ test_frac must be < 1"):
        stratified_split(labels, 0.5, 0.5, seed=0)

