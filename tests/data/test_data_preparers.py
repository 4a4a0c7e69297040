"""Each preparer on small generated releases in the release's own file formats."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from softmax_zoo.data.layout import missing_split_message
from softmax_zoo.data.prepare import prepare_all, prepare_task, preparers
from softmax_zoo.data.tokenizers import CharTokenizer, WordVocab

TASKS = preparers()


def _meta(out_dir, task):
    return json.loads((out_dir / task / "meta.json").read_text(encoding="utf-8"))


def test_clinc_default_151_way_with_oos_last(raw_root, out_dir, load_rows, caplog):
    meta = prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=out_dir)
    assert "clinc_oos/train: dropped 1 example(s): empty text" in caplog.text
    assert meta["labels"] == ["alarm", "balance", "translate", "oos"]
    # 3 intents x 4 train + 2 oos, the empty text dropped and counted
    assert meta["splits"] == {"train": 14, "validation": 8, "test": 8}
    assert meta["dropped"] == {"train": {"empty text": 1}}
    rows = load_rows(out_dir / "clinc_oos" / "train.jsonl")
    assert rows[0] == {"text": "translate request 0", "label": "translate"}
    assert rows[-1]["label"] == "oos"
    assert list(meta["raw_sha256"]) == ["data_full.json"]


def test_clinc_in_scope_only(raw_root, out_dir):
    meta = prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=out_dir, oos="false")
    assert meta["labels"] == ["alarm", "balance", "translate"]
    assert meta["splits"] == {"train": 12, "validation": 6, "test": 6}
    assert meta["dropped"]["test"] == {"out-of-scope row (oos=false)": 2}


def test_wos_tsv_subset_stratified_split(raw_root, out_dir, load_rows):
    meta = prepare_task("wos", raw_root_dir=raw_root, out_dir=out_dir)
    assert meta["labels"] == ["0", "1", "120", "133"]  # from Y.txt: all classes, 133 has no text
    # 10 per class: round(10*0.2)=2 test, 1 validation, 7 train
    assert meta["splits"] == {"train": 21, "validation": 3, "test": 6}
    assert meta["label_names"] == {"0": "Computer vision", "1": "Machine learning", "120": "Senior Health"}
    assert any("SUBSET" in n for n in meta["notes"])
    texts = {r["text"] for s in ("train", "validation", "test") for r in load_rows(out_dir / "wos" / f"{s}.jsonl")}
    assert 'An abstract 0-0 with "quoted" words.' in texts  # TSV quoting undone
    yl1 = prepare_task("wos", raw_root_dir=raw_root, out_dir=out_dir, level="YL1")
    assert yl1["labels"] == ["0", "5", "6"]


def test_wos_x_y_files(tmp_path, out_dir, make):
    make.wos_x(tmp_path / "wos")
    meta = prepare_task("wos", raw_dir=tmp_path / "wos", out_dir=out_dir, val_frac=0.25, test_frac=0.25)
    assert meta["labels"] == ["0", "1", "2"]
    assert sum(meta["splits"].values()) == 12
    assert meta["splits"]["test"] == 3 and meta["splits"]["validation"] == 3
    assert set(meta["raw_sha256"]) == {"X.txt", "Y.txt"}


def test_iflytek_fewclue(raw_root, out_dir, load_rows):
    meta = prepare_task("iflytek", raw_root_dir=raw_root, out_dir=out_dir)
    assert meta["labels"] == ["0", "1", "2"] and meta["label_names"]["0"] == "打车"
    assert meta["splits"] == {"train": 6, "validation": 3, "test": 3}
    assert "fewclue/test.json" not in meta["raw_sha256"]  # the unlabelled CLUE test set is never read
    assert load_rows(out_dir / "iflytek" / "train.jsonl")[1] == {"text": "train_few_all.json应用描述1", "label": "1"}
    tok = CharTokenizer.load(out_dir / "iflytek" / "char_vocab.txt")
    assert tok.decode(tok.encode("应用描述")) == "应用描述"


def test_iflytek_clue_files_test_is_dev(tmp_path, out_dir, make):
    make.iflytek_clue(tmp_path / "ifl")
    meta = prepare_task("iflytek", raw_dir=tmp_path / "ifl", out_dir=out_dir)
    assert meta["splits"] == {"train": 6, "validation": 3, "test": 3}
    assert set(meta["raw_sha256"]) == {"labels.json", "train.json", "dev.json"}
    d = out_dir / "iflytek"
    assert (d / "test.jsonl").read_bytes() == (d / "validation.jsonl").read_bytes()


def test_gigaword_rush_layout(raw_root, out_dir, load_rows):
    meta = prepare_task("gigaword", raw_root_dir=raw_root, out_dir=out_dir)
    assert meta["splits"] == {"train": 5, "validation": 1, "test": 2}
    assert meta["dropped"] == {"validation": {"empty target": 1}}
    test = load_rows(out_dir / "gigaword" / "test.jsonl")
    assert test[0] == {"source": "japan 's nec and <unk> corp. said .", "target": "nec <unk> in sales tie-up"}
    assert meta["unk_tokens_rewritten"]["count"] == 2
    assert load_rows(out_dir / "gigaword" / "train.jsonl")[0]["source"] == "article #0 about <unk> things ."
    assert meta["files"]["test"] == ["Giga/input.txt", "Giga/task1_ref0.txt"]


def test_gigaword_train_size_and_unilm_naming(tmp_path, raw_root, out_dir, make):
    meta = prepare_task("gigaword", raw_root_dir=raw_root, out_dir=out_dir, train_size="3")
    assert meta["splits"]["train"] == 3 and meta["train_selection"] == "first 3 of 5 pairs"
    with pytest.raises(ValueError, match="train_size=9 but only 5"):
        prepare_task("gigaword", raw_root_dir=raw_root, out_dir=out_dir, train_size=9)
    make.gigaword_unilm(tmp_path / "uni")
    meta = prepare_task("gigaword", raw_dir=tmp_path / "uni", out_dir=out_dir)
    assert meta["splits"] == {"train": 3, "validation": 2, "test": 2}


def test_squad_qg_du_split(raw_root, out_dir, load_rows):
    meta = prepare_task("squad_qg", raw_root_dir=raw_root, out_dir=out_dir)
    # Alpha 2x2 + Beta 1x3 = 7 train; Delta 2 dev; Gamma 1 test (from the train JSON: no Du test file)
    assert meta["splits"] == {"train": 7, "validation": 2, "test": 1}
    for split in ("train", "validation", "test"):
        for r in load_rows(out_dir / "squad_qg" / f"{split}.jsonl"):
            assert r["source"][r["answer_start"]: r["answer_start"] + len(r["answer"])] == r["answer"]
            assert not r["target"].endswith(" ")
    assert load_rows(out_dir / "squad_qg" / "test.jsonl")[0]["source"].startswith("Gamma")


def test_lm1b_heldout_only(raw_root, out_dir):
    meta = prepare_task("lm1b", raw_root_dir=raw_root, out_dir=out_dir)
    assert meta["split_files"]["train"] == ["news.en.heldout-00010-of-00050", "news.en.heldout-00011-of-00050"]
    assert meta["split_files"]["test"] == ["news.en.heldout-00013-of-00050"]
    assert meta["splits"]["train"] == {"sentences": 6, "words": 48, "tokens_with_eos": 54}
    assert any("SUBSET" in n for n in meta["notes"])
    vocab = WordVocab.load(out_dir / "lm1b" / "vocab.txt")
    assert vocab.counts[vocab.eos_id] == 6 and vocab.words[:2] == [".", "<eos>"]  # tie: "." < "<"


def test_lm1b_with_training_shards(tmp_path, out_dir, make):
    make.lm1b(tmp_path / "lm1b", with_train=True)
    meta = prepare_task("lm1b", raw_dir=tmp_path / "lm1b", out_dir=out_dir)
    assert meta["split_files"] == {
        "train": ["news.en-00001-of-00100", "news.en-00002-of-00100"],
        "validation": ["news.en.heldout-00001-of-00050"],
        "test": ["news.en.heldout-00000-of-00050"],
    }
    meta = prepare_task("lm1b", raw_dir=tmp_path / "lm1b", out_dir=out_dir, test_heldout="0,2")
    assert meta["splits"]["test"]["sentences"] == 6


def test_ptb_vocab_file(raw_root, out_dir):
    meta = prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir)
    assert meta["splits"]["train"] == {"sentences": 3, "words": 13, "tokens_with_eos": 16}
    lines = (out_dir / "ptb" / "vocab.txt").read_text().splitlines()
    assert lines[:2] == ["<eos>\t3", "the\t3"]  # ties broken by the word: "<" sorts before "t"
    assert (out_dir / "ptb" / "train.txt").read_text().splitlines()[0] == "the cat sat on the mat"


def test_wikitext2_without_train(raw_root, out_dir):
    meta = prepare_task("wikitext2", raw_root_dir=raw_root, out_dir=out_dir)
    assert meta["missing_splits"] == ["train"] and not (out_dir / "wikitext2" / "train.txt").exists()
    assert meta["splits"]["validation"] == {"sentences": 2, "words": 7, "tokens_with_eos": 9}
    assert meta["dropped"]["validation"] == {"empty line": 3}
    assert (out_dir / "wikitext2" / "vocab.txt").read_text() == "the\t10\ncat\t4\nTitle\t2\n"
    assert meta["missing_files"] == {"train": "wiki.train.tokens"} and meta["alternatives"] == ["ptb", "lm1b"]


LM_FILES = ["meta.json", "vocab.txt", "train.txt", "validation.txt", "test.txt"]  # what an LM run reads


def test_a_run_on_wikitext2_without_train_is_told_what_is_missing_and_what_instead(raw_root, out_dir, caplog):
    prepare_task("wikitext2", raw_root_dir=raw_root, out_dir=out_dir)
    assert "task=wikitext2 cannot train on this preparation: add wiki.train.tokens" in caplog.text
    message = missing_split_message(out_dir / "wikitext2", "wikitext2", LM_FILES)
    assert message.startswith(f"task 'wikitext2' needs the train split, but {out_dir / 'wikitext2'} was prepared without it")
    assert f"the release in {raw_root / 'wikitext2'} has no train (wiki.train.tokens)" in message
    assert "`make data TASK=wikitext2` cannot make train.txt (the folder holds validation, test)" in message
    assert message.endswith("or train the same models on task=ptb or task=lm1b.")
    assert missing_split_message(out_dir / "wikitext2", "wikitext2", ["validation.txt", "test.txt"]) is None


def test_the_task_builders_check_raises_that_message_not_make_data(raw_root, out_dir):
    from softmax_zoo.tasks.base import require_prepared

    prepare_task("wikitext2", raw_root_dir=raw_root, out_dir=out_dir)
    with pytest.raises(FileNotFoundError) as err:
        require_prepared(out_dir / "wikitext2", "wikitext2", tuple(LM_FILES))
    assert str(err.value) == missing_split_message(out_dir / "wikitext2", "wikitext2", LM_FILES)
    with pytest.raises(FileNotFoundError, match=re.escape(f'run `make data TASK=ptb DATA_ARGS="out_dir={out_dir.absolute()}"`')):
        require_prepared(out_dir / "ptb", "ptb", tuple(LM_FILES))  # the command that writes that folder


def test_a_complete_or_unprepared_folder_has_no_missing_split_message(raw_root, out_dir):
    prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir)
    assert missing_split_message(out_dir / "ptb", "ptb", LM_FILES) is None
    assert missing_split_message(out_dir / "nothing", "wikitext2", LM_FILES) is None


def test_prepare_all_skips_missing_folders(raw_root, out_dir):
    import shutil

    shutil.rmtree(raw_root / "ptb")
    metas = prepare_all(raw_root, out_dir)
    released = {task for task, spec in TASKS.items() if (raw_root / spec.RAW_NAME).is_dir()}
    assert "ptb" not in metas and set(metas) == released and len(released) >= 7
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(metas)


def test_every_preparer_module_registers_itself():
    """Every module of the package imports (none left out); TASKS is the registry, each task's preparer from one of them."""
    from softmax_zoo.data.prepare import clinc_oos, lm_corpora, registry

    assert registry.failed_modules() == {}
    assert TASKS == registry.preparers() and len(TASKS) >= 8
    owners = {getattr(p, "__name__", None) or type(p).__module__ for p in TASKS.values()}
    assert owners <= set(registry.preparer_modules())
    assert TASKS["clinc_oos"] is clinc_oos and TASKS["lm1b"] is lm_corpora.LM1B


def test_register_rejects_an_incomplete_or_second_preparer():
    import types

    from softmax_zoo.data.prepare import clinc_oos, registry

    with pytest.raises(TypeError, match=r"half_done.*lacks \['KIND', 'load_local', 'hub_spec', 'from_hub'\]"):
        registry.register("half_done", types.SimpleNamespace(RAW_NAME="x", OPTIONS={}))
    with pytest.raises(ValueError, match="already has a preparer"):
        registry.register("wos", clinc_oos)
    assert registry.register("clinc_oos", clinc_oos) is clinc_oos  # re-registering the same one (a reload) is fine


def test_importing_the_command_line_imports_no_preparer():
    """Nothing at import: the preparers (and $SOFTMAX_ZOO_PREPARERS) are read when a task is asked for."""
    code = ("import sys, softmax_zoo.data.prepare, softmax_zoo.data.prepare.generated; "
            "sys.exit(sorted(m for m in sys.modules if m.endswith(('.clinc_oos', '.lm_corpora', '.gigaword'))) != [])")
    env = {**os.environ, "SOFTMAX_ZOO_PREPARERS": "no_such_module_is_imported"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "no_such_module" not in done.stderr, done.stderr
