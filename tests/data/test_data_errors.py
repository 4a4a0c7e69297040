"""Bad input: each error names what is wrong and where."""

from __future__ import annotations

import json
import re

import pytest

from softmax_zoo.data.prepare import writer
from softmax_zoo.data.prepare.cli import main, parse_args, prepare_task


def test_missing_folder_names_it(tmp_path, out_dir):
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nowhere"))):
        prepare_task("ptb", raw_dir=tmp_path / "nowhere", out_dir=out_dir)


def test_missing_file_lists_expected_names_and_where(raw_root, out_dir):
    (raw_root / "ptb" / "ptb.valid.txt").unlink()
    with pytest.raises(FileNotFoundError) as e:
        prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir)
    assert "ptb.valid.txt" in str(e.value) and str(raw_root / "ptb") in str(e.value)
    (raw_root / "gigaword" / "Giga" / "input.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"test pairs not found: expected one of the pairs \['input.txt'"):
        prepare_task("gigaword", raw_root_dir=raw_root, out_dir=out_dir)


def test_missing_lm1b_shards_names_patterns(tmp_path, out_dir):
    (tmp_path / "lm1b").mkdir()
    with pytest.raises(FileNotFoundError, match=r"news\.en\.heldout-000NN-of-00050"):
        prepare_task("lm1b", raw_dir=tmp_path / "lm1b", out_dir=out_dir)


def test_malformed_json_line_gives_file_and_line(raw_root, out_dir):
    path = raw_root / "iflytek" / "fewclue" / "dev_few_all.json"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1][:-3]  # truncated object on line 2
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:2: malformed JSON")):
        prepare_task("iflytek", raw_root_dir=raw_root, out_dir=out_dir)


def test_malformed_json_document_gives_line(raw_root, out_dir):
    path = raw_root / "clinc_oos" / "data_full.json"
    path.write_text('{"train": [\n["a", "b"],\n["c" "d"]]}', encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:3:")):
        prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=out_dir)


def test_article_title_length_mismatch_gives_both_counts(raw_root, out_dir):
    path = raw_root / "gigaword" / "sumdata" / "train" / "train.title.txt"
    path.write_text("only one title\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"train\.article\.txt has 5 lines but .*train\.title\.txt has 1"):
        prepare_task("gigaword", raw_root_dir=raw_root, out_dir=out_dir)


def test_unknown_label_is_named(raw_root, out_dir):
    path = raw_root / "iflytek" / "fewclue" / "test_public.json"
    path.write_text(json.dumps({"label": 77, "label_des": "x", "sentence": "s", "id": 1}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:1: label '77' is not in the label list (3 labels)")):
        prepare_task("iflytek", raw_root_dir=raw_root, out_dir=out_dir)
    clinc = raw_root / "clinc_oos" / "data_full.json"
    data = json.loads(clinc.read_text())
    data["val"].append(["what is my pin", "pin_change"])  # an intent absent from train
    clinc.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="label 'pin_change' is not in the label list"):
        prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=out_dir)


def test_label_name_disagreeing_with_label_list(raw_root, out_dir):
    path = raw_root / "iflytek" / "fewclue" / "test_public.json"
    path.write_text(json.dumps({"label": 1, "label_des": "打车", "sentence": "s", "id": 1}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="label 1 is '打车' here but '地图导航'"):
        prepare_task("iflytek", raw_root_dir=raw_root, out_dir=out_dir)


def test_bad_squad_answer_offset(tmp_path, out_dir, make):
    make.squad(tmp_path / "sq")
    dev = tmp_path / "sq" / "dev-v1.1.json"
    doc = json.loads(dev.read_text())
    doc["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 0
    dev.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="question Delta-0-0: answer 'Blue0' is not at answer_start 0"):
        prepare_task("squad_qg", raw_dir=tmp_path / "sq", out_dir=out_dir)


def test_doclist_title_missing_from_json(tmp_path, out_dir, make):
    make.squad(tmp_path / "sq")
    (tmp_path / "sq" / "doclist-train.txt").write_text("Alpha\nZeta\n")
    with pytest.raises(ValueError, match=r"1 doclist title\(s\) not found, e.g. \['Zeta'\]"):
        prepare_task("squad_qg", raw_dir=tmp_path / "sq", out_dir=out_dir)


def test_wos_x_y_length_mismatch(tmp_path, out_dir, make):
    make.wos_x(tmp_path / "w")
    (tmp_path / "w" / "Y.txt").write_text("0\r\n1")
    with pytest.raises(ValueError, match=r"X\.txt has 12 lines but .*Y\.txt has 2"):
        prepare_task("wos", raw_dir=tmp_path / "w", out_dir=out_dir)


def test_bad_options_are_named(raw_root, out_dir):
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['colour'\]; valid options: \['oos', 'variant'\]"):
        prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=out_dir, colour="red")
    with pytest.raises(ValueError, match="oos='maybe': must be true or false"):
        prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=out_dir, oos="maybe")
    with pytest.raises(ValueError, match="task must be one of"):
        prepare_task("mnist", raw_root_dir=raw_root, out_dir=out_dir)
    with pytest.raises(ValueError, match="source must be 'local' or 'hub', got 'ftp'"):
        prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir, source="ftp")


def test_writer_rejects_unknown_kind_and_split(tmp_path):
    with pytest.raises(ValueError, match="kind must be one of"):
        writer.write_prepared("t", writer.Prepared("regression", {}), tmp_path / "t", {}, {}, {})
    with pytest.raises(ValueError, match=r"unknown split\(s\) \['dev'\]"):
        writer.write_prepared("t", writer.Prepared("seq2seq", {"dev": []}), tmp_path / "t", {}, {}, {})


def test_cli_parses_and_reports_errors(raw_root, out_dir, caplog):
    args = parse_args(["ptb", "raw_dir=x", "train_size=3"])
    assert (args.positional, args["raw_dir"], args["source"], args.rest) == (["ptb"], "x", "local", ["train_size=3"])
    with pytest.raises(ValueError, match=r"takes 1 argument\(s\) without '=', got \['ptb', 'oops'\]"):
        parse_args(["ptb", "oops"])
    with pytest.raises(ValueError, match="source='ftp': must be one of"):
        parse_args(["ptb", "source=ftp"])
    assert main(["ptb", f"raw_root={raw_root}", f"out_dir={out_dir}"]) == 0
    assert (out_dir / "ptb" / "meta.json").exists()
    assert main(["ptb", f"raw_dir={raw_root / 'missing'}", f"out_dir={out_dir}"]) == 1
    assert "does not exist" in caplog.text
