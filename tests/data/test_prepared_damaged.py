"""A damaged or missing prepared folder says which file and the command that writes that folder again."""

from __future__ import annotations

import json

import pytest

from softmax_zoo import preflight
from softmax_zoo.data.layout import prepare_command
from softmax_zoo.tasks.base import require_prepared


def test_a_truncated_meta_json_names_the_file_and_the_command(tmp_path):
    folder = tmp_path / "clinc_oos"
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"kind": "classification", "outputs_sha256": {}})[:20])
    with pytest.raises(ValueError) as error:
        preflight.verify_prepared(folder, "clinc_oos")
    message = str(error.value)
    assert message.startswith(f"{folder / 'meta.json'}:1:") and "malformed JSON" in message, message
    assert message.endswith(f'rerun `make data TASK=clinc_oos DATA_ARGS="out_dir={tmp_path}"`'), message


def test_missing_data_elsewhere_suggests_a_command_that_writes_there(tmp_path, monkeypatch):
    monkeypatch.delenv("SOFTMAX_ZOO_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=rf'run `make data TASK=wos DATA_ARGS="out_dir={tmp_path}"` first'):
        require_prepared(tmp_path / "wos", "wos")
    assert prepare_command("wos", tmp_path / "mine") == (
        f'make data TASK=wos DATA_ARGS="out_dir={tmp_path}", then task.data_dir={tmp_path / "wos"}')


def test_the_default_folder_gets_the_plain_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOFTMAX_ZOO_DATA", raising=False)
    assert prepare_command("wos", "data/wos") == "make data TASK=wos"
    monkeypatch.setenv("SOFTMAX_ZOO_DATA", str(tmp_path / "shared"))
    assert prepare_command("wos", tmp_path / "shared" / "wos") == "make data TASK=wos"
