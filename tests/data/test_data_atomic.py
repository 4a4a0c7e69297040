"""Preparing twice is byte-identical; an interrupted preparation never leaves a complete-looking folder; prepared files
get a plain write's mode."""

from __future__ import annotations

import stat

import pytest

from softmax_zoo.data.layout import read_json
from softmax_zoo.data.prepare import prepare_task, preparers, writer

TASKS = preparers()


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_preparing_twice_is_byte_identical(release_task, raw_root, out_dir):
    task = release_task
    prepare_task(task, raw_root_dir=raw_root, out_dir=out_dir)
    first = _snapshot(out_dir / task)
    prepare_task(task, raw_root_dir=raw_root, out_dir=out_dir)
    assert _snapshot(out_dir / task) == first
    assert "meta.json" in first
    assert [p.name for p in out_dir.iterdir()] == [task]  # no temporary folders left behind


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_preparer_generates_its_kind_byte_identically(task, tmp_path):
    """Each registered preparer's ``generate`` (what the dry runs read) writes a folder of its KIND, the same twice."""
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first = _snapshot(TASKS[task].generate(tmp_path / "a"))
    folder = TASKS[task].generate(tmp_path / "b")
    assert _snapshot(folder) == first and folder == tmp_path / "b" / task
    assert read_json(folder / "meta.json")["kind"] == TASKS[task].KIND


def test_interrupted_run_leaves_no_folder(raw_root, out_dir, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer, "write_json", interrupt)  # dies after the split files, before meta.json
    with pytest.raises(KeyboardInterrupt):
        prepare_task("clinc_oos", raw_root_dir=raw_root, out_dir=out_dir)
    assert list(out_dir.iterdir()) == []


def test_interrupted_rerun_keeps_the_previous_folder(raw_root, out_dir, monkeypatch):
    prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir)
    before = _snapshot(out_dir / "ptb")

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(writer, "write_vocab", fail)
    with pytest.raises(OSError, match="disk full"):
        prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir)
    assert _snapshot(out_dir / "ptb") == before
    assert [p.name for p in out_dir.iterdir()] == ["ptb"]


def test_stale_temporary_folder_is_removed(raw_root, out_dir):
    stale = out_dir / ".ptb.tmp-99999"
    stale.mkdir(parents=True)
    (stale / "train.txt").write_text("half")
    prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir)
    assert [p.name for p in out_dir.iterdir()] == ["ptb"]


def test_prepared_files_get_a_plain_writes_mode(raw_root, out_dir):
    prepare_task("ptb", raw_root_dir=raw_root, out_dir=out_dir)
    probe = out_dir / "plain.txt"
    probe.write_text("plain")
    expected = stat.S_IMODE(probe.stat().st_mode)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (out_dir / "ptb").iterdir()}
    assert modes and modes == dict.fromkeys(modes, expected)
