"""The real release files ($SOFTMAX_ZOO_RAW: the release folders beside the checkout): counts checked against each SOURCE.md."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from softmax_zoo.data.layout import missing_split_message
from softmax_zoo.data.prepare import prepare_task, preparers

TASKS = preparers()

RAW = Path(os.environ.get("SOFTMAX_ZOO_RAW", ""))


def _need(name: str) -> Path:
    if not os.environ.get("SOFTMAX_ZOO_RAW"):
        pytest.skip("SOFTMAX_ZOO_RAW is not set (point it at the release folders to check the real releases)")
    if not (RAW / name).is_dir():
        pytest.skip(f"{RAW / name} is missing")
    return RAW


def test_clinc_oos(tmp_path):
    meta = prepare_task("clinc_oos", raw_root_dir=_need("clinc_oos"), out_dir=tmp_path)
    assert meta["splits"] == {"train": 15000 + 100, "validation": 3000 + 100, "test": 4500 + 1000}
    assert meta["num_labels"] == 151 and meta["labels"][-1] == "oos"
    assert meta["raw_sha256"]["data_full.json"] == "36923c3705a59e08fe9c3883d8bc2dd966ef93e22cb78ac41171782a698d56e0"
    meta = prepare_task("clinc_oos", raw_root_dir=RAW, out_dir=tmp_path, oos=False)
    assert meta["splits"] == {"train": 15000, "validation": 3000, "test": 4500} and meta["num_labels"] == 150


def test_wos(tmp_path):
    meta = prepare_task("wos", raw_root_dir=_need("wos"), out_dir=tmp_path)
    assert sum(meta["splits"].values()) == 1000 and meta["num_labels"] == 134
    assert len(meta["label_names"]) == 129 and "SUBSET" in meta["notes"][0]
    assert prepare_task("wos", raw_root_dir=RAW, out_dir=tmp_path, level="YL1")["num_labels"] == 7


def test_iflytek(tmp_path):
    meta = prepare_task("iflytek", raw_root_dir=_need("iflytek"), out_dir=tmp_path)
    assert meta["splits"] == {"train": 3024, "validation": 1373, "test": 1749}
    assert meta["num_labels"] == 119 and meta["label_names"]["0"] == "打车" and meta["label_names"]["118"] == "其他"


def test_gigaword(tmp_path):
    meta = prepare_task("gigaword", raw_root_dir=_need("gigaword"), out_dir=tmp_path)
    assert meta["splits"] == {"train": 10000, "validation": 1000, "test": 1951}
    assert meta["raw_sha256"]["test_1951/input.txt"] == "578b33eaffe7bf9cab2d84d6f1399fd6f38c1778d194a9877ba66c15232b183c"
    assert meta["unk_tokens_rewritten"]["count"] == 387 + 833  # the test set's UNK spellings
    assert "UNK" not in (tmp_path / "gigaword" / "test.jsonl").read_text().split()
    assert prepare_task("gigaword", raw_root_dir=RAW, out_dir=tmp_path, dev="10K")["splits"]["validation"] == 10000


def test_squad_qg(tmp_path):
    meta = prepare_task("squad_qg", raw_root_dir=_need("squad_qg"), out_dir=tmp_path)
    assert meta["splits"] == {"train": 75722, "validation": 10570, "test": 11877}


def test_lm1b(tmp_path):
    meta = prepare_task("lm1b", raw_root_dir=_need("lm1b"), out_dir=tmp_path)
    s = meta["splits"]
    assert (s["train"]["sentences"], s["validation"]["sentences"], s["test"]["sentences"]) == (6111 + 6105, 5986, 6119)
    assert s["train"]["words"] == 155717 + 154773 and s["test"]["words"] == 155414


def test_ptb(tmp_path):
    meta = prepare_task("ptb", raw_root_dir=_need("ptb"), out_dir=tmp_path)
    s = meta["splits"]
    assert [s[k]["tokens_with_eos"] for k in ("train", "validation", "test")] == [929589, 73760, 82430]
    assert meta["vocab_size"] == 10000  # 9,999 words + <eos>
    assert meta["raw_sha256"]["ptb.train.txt"] == "fcea919f6cf83f35d4d00c6cbf08040d13d4155226340912e2fef9c9c4102cbf"


def test_wikitext2(tmp_path):
    meta = prepare_task("wikitext2", raw_root_dir=_need("wikitext2"), out_dir=tmp_path)
    s = meta["splits"]
    assert meta["missing_splits"] == ["train"]
    message = missing_split_message(tmp_path / "wikitext2", "wikitext2", ["train.txt"])
    # the meta records the resolved path
    assert f"the release in {(_need('wikitext2') / 'wikitext2').resolve()} has no train (wiki.train.tokens)" in message
    assert (s["validation"]["words"], s["test"]["words"]) == (213886, 241211)
    assert s["validation"]["sentences"] + meta["dropped"]["validation"]["empty line"] == 3760
    assert meta["vocab_size"] == 33276


def test_every_task_is_checked_here():
    assert set(TASKS) == {n[5:] for n in globals() if n.startswith("test_") and n[5:] in TASKS}
