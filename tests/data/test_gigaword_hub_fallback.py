"""Gigaword without its release folder: prepare_task reads the same release from the hub (mocked)."""

from __future__ import annotations

import json

import pytest

datasets = pytest.importorskip("datasets", reason="the hub source needs the optional `datasets` package")

from softmax_zoo.data.prepare import prepare_task  # noqa: E402


def test_gigaword_falls_back_to_the_hub_without_its_release_folder(tmp_path, monkeypatch):
    calls = []
    rows = {s: {"document": [f"{s} article {i} UNK" for i in range(3)], "summary": [f"{s} title {i}" for i in range(3)]}
            for s in ("train", "validation", "test")}

    def load_dataset(*args, revision=None, **kwargs):
        calls.append((args, revision))
        return datasets.DatasetDict({s: datasets.Dataset.from_dict(cols) for s, cols in rows.items()})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    meta = prepare_task("gigaword", raw_root_dir=tmp_path / "no_release_here", out_dir=tmp_path / "out", train_size=2)
    assert calls == [(("Harvard/gigaword",), "refs/convert/parquet")]
    assert meta["source"] == {"type": "hub", "id": "Harvard/gigaword", "revision": "refs/convert/parquet"}
    train = [json.loads(line) for line in (tmp_path / "out" / "gigaword" / "train.jsonl").read_text().splitlines()]
    assert train == [{"source": "train article 0 <unk>", "target": "train title 0"},
                     {"source": "train article 1 <unk>", "target": "train title 1"}]


def test_other_tasks_still_need_their_release_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="raw folder .*no_release_here.* does not exist"):
        prepare_task("wos", raw_root_dir=tmp_path / "no_release_here", out_dir=tmp_path / "out")
