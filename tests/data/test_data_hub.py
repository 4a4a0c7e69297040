"""source=hub: datasets.load_dataset is mocked with in-memory datasets; the prepared files must
equal those prepared from the same examples as release files."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

datasets = pytest.importorskip("datasets", reason="source=hub needs the optional `datasets` package")

from softmax_zoo.data.prepare import prepare_task  # noqa: E402

SPLIT_FILES = ("train.jsonl", "validation.jsonl", "test.jsonl")


@pytest.fixture
def hub(monkeypatch):
    """Install a fake load_dataset serving ``hub.data``; ``hub.calls`` records its arguments."""

    class Hub:
        data = None
        calls = []

    def load_dataset(*args, revision=None, **kwargs):
        Hub.calls.append((args, revision))
        return Hub.data

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return Hub


def _same_files(a, b, names):
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def _dd(splits: dict[str, dict], features=None) -> "datasets.DatasetDict":
    return datasets.DatasetDict({s: datasets.Dataset.from_dict(cols, features=features) for s, cols in splits.items()})


def test_clinc_hub_equals_local(raw_root, tmp_path, hub):
    shutil.copy(raw_root / "clinc_oos" / "data_full.json", raw_root / "clinc_oos" / "data_oos_plus.json")
    local = prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=tmp_path / "local", variant="oos_plus")
    release = json.loads((raw_root / "clinc_oos" / "data_oos_plus.json").read_text())
    names = ["translate", "oos", "balance", "alarm"]  # the hub's own (non-alphabetical) ClassLabel order
    features = datasets.Features({"text": datasets.Value("string"), "intent": datasets.ClassLabel(names=names)})
    keys = {"train": ("train", "oos_train"), "validation": ("val", "oos_val"), "test": ("test", "oos_test")}
    hub.data = _dd({s: {"text": [t for k in ks for t, _ in release[k]],
                        "intent": [names.index(i) for k in ks for _, i in release[k]]} for s, ks in keys.items()},
                   features)
    meta = prepare_task("clinc_oos", source="hub", out_dir=tmp_path / "hub", variant="oos_plus")
    _same_files(tmp_path / "local" / "clinc_oos", tmp_path / "hub" / "clinc_oos", SPLIT_FILES)
    assert meta["labels"] == local["labels"] and meta["splits"] == local["splits"]
    assert meta["source"] == {"type": "hub", "id": "clinc/clinc_oos", "config": "plus",
                              "revision": "155b9c710419136e17307b80d0a13e68cd46b4ec"}
    assert hub.calls[-1] == (("clinc/clinc_oos", "plus"), "155b9c710419136e17307b80d0a13e68cd46b4ec")
    with pytest.raises(ValueError, match="variant='full' is not on the hub"):
        prepare_task("clinc_oos", source="hub", out_dir=tmp_path / "hub")


def test_iflytek_hub_equals_local_clue(tmp_path, make, hub):
    make.iflytek_clue(tmp_path / "ifl")
    prepare_task("iflytek", raw_dir=tmp_path / "ifl", out_dir=tmp_path / "local")
    features = datasets.Features({"sentence": datasets.Value("string"), "label": datasets.ClassLabel(names=["0", "1", "2"])})
    splits = {}
    for split, name in (("train", "train.json"), ("validation", "dev.json")):
        rows = [json.loads(line) for line in (tmp_path / "ifl" / name).read_text(encoding="utf-8").splitlines()]
        splits[split] = {"sentence": [r["sentence"] for r in rows], "label": [int(r["label"]) for r in rows]}
    hub.data = _dd(splits, features)
    prepare_task("iflytek", source="hub", out_dir=tmp_path / "hub")
    _same_files(tmp_path / "local" / "iflytek", tmp_path / "hub" / "iflytek", (*SPLIT_FILES, "char_vocab.txt"))


def test_wos_hub_equals_local_x_y(tmp_path, make, hub):
    make.wos_x(tmp_path / "w")
    prepare_task("wos", raw_dir=tmp_path / "w", out_dir=tmp_path / "local")
    texts = (tmp_path / "w" / "X.txt").read_text().splitlines()
    hub.data = _dd({"train": {"input_data": texts, "label": [i % 3 for i in range(12)],
                              "label_level_1": [i % 2 for i in range(12)]}})
    prepare_task("wos", source="hub", out_dir=tmp_path / "hub")
    _same_files(tmp_path / "local" / "wos", tmp_path / "hub" / "wos", SPLIT_FILES)


def test_gigaword_hub_equals_local(tmp_path, make, hub):
    make.gigaword_unilm(tmp_path / "g")
    prepare_task("gigaword", raw_dir=tmp_path / "g", out_dir=tmp_path / "local", train_size=2)
    cols = {}
    for split, name in (("train", "train"), ("validation", "dev"), ("test", "test")):
        cols[split] = {"document": (tmp_path / "g" / f"{name}.src").read_text().splitlines(),
                       "summary": (tmp_path / "g" / f"{name}.tgt").read_text().splitlines()}
    hub.data = _dd(cols)
    meta = prepare_task("gigaword", source="hub", out_dir=tmp_path / "hub", train_size=2)
    _same_files(tmp_path / "local" / "gigaword", tmp_path / "hub" / "gigaword", SPLIT_FILES)
    assert meta["train_selection"] == "first 2 of 3 pairs"


def test_squad_hub_equals_local(tmp_path, make, hub):
    import gzip

    make.squad(tmp_path / "sq")
    prepare_task("squad_qg", raw_dir=tmp_path / "sq", out_dir=tmp_path / "local")

    def columns(doc):
        out = {"id": [], "title": [], "context": [], "question": [], "answers": []}
        for art in doc["data"]:
            for para in art["paragraphs"]:
                for qa in para["qas"]:
                    out["id"].append(qa["id"]), out["title"].append(art["title"]), out["context"].append(para["context"])
                    out["question"].append(qa["question"])
                    out["answers"].append({"text": [a["text"] for a in qa["answers"]],
                                           "answer_start": [a["answer_start"] for a in qa["answers"]]})
        return out

    with gzip.open(tmp_path / "sq" / "train-v1.1.json.gz", "rt") as f:
        train = json.load(f)
    hub.data = _dd({"train": columns(train), "validation": columns(json.loads((tmp_path / "sq" / "dev-v1.1.json").read_text()))})
    meta = prepare_task("squad_qg", source="hub", raw_dir=tmp_path / "sq", out_dir=tmp_path / "hub")
    _same_files(tmp_path / "local" / "squad_qg", tmp_path / "hub" / "squad_qg", SPLIT_FILES)
    assert set(meta["raw_sha256"]) == {"doclist-train.txt", "doclist-test.txt"}
    with pytest.raises(FileNotFoundError, match="needs Du's doclist"):
        prepare_task("squad_qg", source="hub", raw_dir=tmp_path / "nowhere", out_dir=tmp_path / "hub")


def test_ptb_hub_equals_local(raw_root, tmp_path, hub):
    prepare_task("ptb", raw_root_dir=raw_root, out_dir=tmp_path / "local")
    cols = {s: {"sentence": (raw_root / "ptb" / f"ptb.{n}.txt").read_text().splitlines()}
            for s, n in (("train", "train"), ("validation", "valid"), ("test", "test"))}
    hub.data = _dd(cols)
    prepare_task("ptb", source="hub", out_dir=tmp_path / "hub")
    _same_files(tmp_path / "local" / "ptb", tmp_path / "hub" / "ptb", ("train.txt", "validation.txt", "test.txt", "vocab.txt"))


def test_hub_without_datasets_says_how_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[hub\]'"):
        prepare_task("ptb", source="hub", out_dir=tmp_path)
