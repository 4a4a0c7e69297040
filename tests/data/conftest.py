"""Small generated releases, in the exact file formats of each dataset's release.

:data:`BUILDERS` holds the releases that the format tests (test_data_preparers, test_data_atomic,
test_data_errors) read; a task without one is still tested through its own ``generate``
(test_data_atomic). Tests taking ``release_task`` run once per task of :data:`BUILDERS`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

INTENTS = ["translate", "balance", "alarm"]


def write(path: Path, text: str, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline=newline) as f:
        f.write(text)
    return path


def make_clinc(root: Path) -> Path:
    d = {"train": [], "val": [], "test": [], "oos_train": [], "oos_val": [], "oos_test": []}
    for intent in INTENTS:
        d["train"] += [[f"{intent} request {i}", intent] for i in range(4)]
        d["val"] += [[f"{intent} val {i}", intent] for i in range(2)]
        d["test"] += [[f"{intent} test {i}", intent] for i in range(2)]
    d["train"].append(["   ", "alarm"])  # an empty text: dropped and counted
    for key in ("oos_train", "oos_val", "oos_test"):
        d[key] = [[f"out of scope {key} {i}", "oos"] for i in range(2)]
    write(root / "data_full.json", json.dumps(d))
    return root


WOS_ROWS = [  # (Y1, Y2, Y, Domain, area) as in Data.xlsx
    (0, 0, 0, "CS ", " Computer vision  "),
    (0, 1, 1, "CS ", " Machine learning  "),
    (5, 48, 120, "Medical ", " Senior Health  "),
]


def make_wos_tsv(root: Path, per_class: int = 10) -> Path:
    lines = ["Y1\tY2\tY\tDomain\tarea\tkeywords\tAbstract"]
    for k, (y1, y2, y, dom, area) in enumerate(WOS_ROWS):
        for i in range(per_class):
            abstract = f'"An abstract {k}-{i} with ""quoted"" words."' if i == 0 else f"Abstract {k}-{i} text."
            lines.append(f"{y1}\t{y2}\t{y}\t{dom}\t{area}\t kw1; kw2 \t{abstract}")
    write(root / "Data1k.tsv", "\n".join(lines) + "\n")
    ys = [0, 1, 120, 133] * 3  # the label file has all classes (133 never occurs in the text)
    write(root / "Y.txt", "\r\n".join(map(str, ys)), newline="")  # CRLF, no final newline
    write(root / "YL1.txt", "\r\n".join(["0", "0", "5", "6"] * 3), newline="")
    return root


def make_wos_x(root: Path, n: int = 12) -> Path:
    write(root / "X.txt", "".join(f"abstract number {i}\n" for i in range(n)))
    write(root / "Y.txt", "\r\n".join(str(i % 3) for i in range(n)), newline="")
    write(root / "YL1.txt", "\r\n".join(str(i % 2) for i in range(n)), newline="")
    return root


IFLYTEK_LABELS = {"0": "打车", "1": "地图导航", "2": "免费WIFI"}


def _jsonl(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def make_iflytek_fewclue(root: Path) -> Path:
    fc = root / "fewclue"
    write(root / "labels_derived.json", _jsonl({"label": k, "label_des": v} for k, v in IFLYTEK_LABELS.items()))
    for name, n in (("train_few_all.json", 6), ("dev_few_all.json", 3), ("test_public.json", 3)):
        rows = [{"label": i % 3, "label_des": IFLYTEK_LABELS[str(i % 3)], "sentence": f"{name}应用描述{i}", "id": i}
                for i in range(n)]
        write(fc / name, _jsonl(rows))
    write(fc / "test.json", _jsonl({"id": i, "sentence": f"无标签{i}"} for i in range(2)))
    return root


def make_iflytek_clue(root: Path) -> Path:
    write(root / "labels.json", _jsonl({"label": k, "label_des": v} for k, v in IFLYTEK_LABELS.items()))
    for name, n in (("train.json", 6), ("dev.json", 3)):
        write(root / name, _jsonl({"label": str(i % 3), "label_des": IFLYTEK_LABELS[str(i % 3)],
                                   "sentence": f"{name} 句子{i}"} for i in range(n)))
    write(root / "test.json", _jsonl({"id": i, "sentence": f"无标签{i}"} for i in range(2)))
    return root


def make_gigaword(root: Path) -> Path:
    """Rush et al. layout: sumdata/train/*.txt and Giga/ test files."""
    train = root / "sumdata" / "train"
    write(train / "train.article.txt", "".join(f"article #{i} about <unk> things .\n" for i in range(5)))
    write(train / "train.title.txt", "".join(f"title #{i}\n" for i in range(5)))
    write(train / "valid.article.filter.txt", "valid article one .\nvalid article two .\n")
    write(train / "valid.title.filter.txt", "valid title one\n\n")  # an empty title: dropped
    write(root / "Giga" / "input.txt", "japan 's nec and UNK corp. said .\nsri lanka closes schools .\n")
    write(root / "Giga" / "task1_ref0.txt", "nec UNK in sales tie-up\nsri lanka closes schools\n")
    return root


def make_gigaword_unilm(root: Path) -> Path:
    for split, n in (("train", 3), ("dev", 2), ("test", 2)):
        write(root / f"{split}.src", "".join(f"{split} source {i}\n" for i in range(n)))
        write(root / f"{split}.tgt", "".join(f"{split} target {i}\n" for i in range(n)))
    return root


def _article(title: str, n_par: int, n_q: int) -> dict:
    paragraphs = []
    for p in range(n_par):
        context = f"{title} paragraph {p}: the answer is Blue{p} and again Blue{p}."
        qas = [{"id": f"{title}-{p}-{q}", "question": f"What is the answer {q} of {title} {p}? ",
                "answers": [{"answer_start": context.index(f"Blue{p}"), "text": f"Blue{p}"}]} for q in range(n_q)]
        paragraphs.append({"context": context, "qas": qas})
    return {"title": title, "paragraphs": paragraphs}


def make_squad(root: Path) -> Path:
    train = {"version": "1.1", "data": [_article("Alpha", 2, 2), _article("Beta", 1, 3), _article("Gamma", 1, 1)]}
    root.mkdir(parents=True, exist_ok=True)
    with gzip.open(root / "train-v1.1.json.gz", "wt", encoding="utf-8") as f:
        json.dump(train, f)
    write(root / "dev-v1.1.json", json.dumps({"version": "1.1", "data": [_article("Delta", 1, 2)]}))
    write(root / "doclist-train.txt", "Alpha\nBeta\n")
    write(root / "doclist-dev.txt", "Delta\n")
    write(root / "doclist-test.txt", "Gamma\n")
    return root


def _sentences(shard: int, n: int) -> str:
    return "".join(f"The shard {shard} sentence {i} says hello .\n" for i in range(n))


def make_lm1b(root: Path, with_train: bool) -> Path:
    if with_train:
        for k in (1, 2):
            write(root / "training-monolingual.tokenized.shuffled" / f"news.en-0000{k}-of-00100", _sentences(100 + k, 4))
        numbers = (0, 1, 2)
    else:
        numbers = (10, 11, 12, 13)
    for k in numbers:
        write(root / "heldout-monolingual.tokenized.shuffled" / f"news.en.heldout-{k:05d}-of-00050", _sentences(k, 3))
    return root


def make_ptb(root: Path) -> Path:
    write(root / "ptb.train.txt", " the cat sat on the mat \n a <unk> of N dogs \n the end \n")
    write(root / "ptb.valid.txt", " the dog sat \n")
    write(root / "ptb.test.txt", " the cat ran \n")
    return root


def make_wikitext2(root: Path) -> Path:
    body = " \n = Title = \n \n The cat sat . \n \n"
    write(root / "wiki.valid.tokens", body)
    write(root / "wiki.test.tokens", body)
    write(root / "train_vocab_counts.fairseq_dict.txt", "the 10\ncat 4\nTitle 2\n")
    return root


BUILDERS = {
    "clinc_oos": make_clinc,
    "wos": make_wos_tsv,
    "iflytek": make_iflytek_fewclue,
    "gigaword": make_gigaword,
    "squad_qg": make_squad,
    "lm1b": lambda r: make_lm1b(r, with_train=False),
    "ptb": make_ptb,
    "wikitext2": make_wikitext2,
}


def pytest_generate_tests(metafunc):
    if "release_task" in metafunc.fixturenames:
        metafunc.parametrize("release_task", sorted(BUILDERS))


@pytest.fixture
def raw_root(tmp_path) -> Path:
    """A release root with one generated folder per task (names as in $SOFTMAX_ZOO_RAW)."""
    root = tmp_path / "raw"
    for name, build in BUILDERS.items():
        (root / name).mkdir(parents=True)
        build(root / name)
    return root


@pytest.fixture
def out_dir(tmp_path) -> Path:
    return tmp_path / "prepared"


@pytest.fixture
def make() -> SimpleNamespace:
    """The release builders, for tests that need a variant (``make.wos_x(folder)``)."""
    return SimpleNamespace(
        clinc=make_clinc, wos_tsv=make_wos_tsv, wos_x=make_wos_x, iflytek_fewclue=make_iflytek_fewclue,
        iflytek_clue=make_iflytek_clue, gigaword=make_gigaword, gigaword_unilm=make_gigaword_unilm,
        squad=make_squad, lm1b=make_lm1b, ptb=make_ptb, wikitext2=make_wikitext2,
    )


def rows(path: Path) -> list[dict]:
    """The records of a prepared .jsonl file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def load_rows():
    return rows
