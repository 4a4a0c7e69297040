"""The typed run record: every committed record reads into it unchanged on disk, older schemas upgraded as read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softmax_zoo import records
from softmax_zoo.run_record import RECORD_SCHEMA, GitState, RunRecord, load_runs

RUNS = Path(__file__).resolve().parents[1] / "results" / "runs"
COMMITTED = sorted(RUNS.rglob("*.json"))


def test_every_committed_record_reads_into_the_type_and_stays_as_it_is():
    assert len(COMMITTED) > 100
    for path in COMMITTED:
        before = path.read_bytes()
        r = RunRecord.load(path)
        raw = json.loads(before)
        given = {k: v for k, v in raw.items() if v is not None}  # a null field reads as its default
        assert {k: v for k, v in r.to_dict().items() if k in given} == given, path
        assert path.read_bytes() == before  # evidence: read, never rewritten
    assert [r.run_name for r in load_runs(RUNS, "table5")] == [p.stem for p in sorted((RUNS / "table5").glob("*.json"))]


def test_a_record_from_before_the_changed_files_were_kept_reads_them_as_not_recorded():
    old = RunRecord.of({"run_name": "r", "git": {"commit": "abc1234", "dirty": True}})
    assert old.git == GitState("abc1234", True) and old.git.dirty_paths is None and old.dirty
    assert records.changed_files([old]) == "changed files not recorded"
    named = RunRecord.of({"git": {"commit": "abc1234", "dirty": True, "dirty_paths": [], "dirty_paths_more": 0}})
    assert not named.dirty  # dirty only in files the run is not made from


def test_a_newer_schema_or_an_unknown_field_is_refused_by_name():
    with pytest.raises(ValueError, match=f"schema {RECORD_SCHEMA + 1}; this code reads up to {RECORD_SCHEMA}"):
        RunRecord.of({"run_name": "r", "schema": RECORD_SCHEMA + 1})
    with pytest.raises(ValueError, match=r"keys no record schema has: \['metric'\]"):
        RunRecord.of({"run_name": "r", "metric": {}})


def test_fields_read_as_attributes():
    r = RunRecord.of({"seed": 3, "choices": {"loss": "sparse_softmax", "sampler": None},
                      "config": {"loss": {"k": 20}, "train": {"lr": 0.1}}, "metrics": {"test/f1": 0.5},
                      "task_info": {"sizes": {"train": 10}}})
    read = (r.seed, r.metrics["test/f1"], r.choice("loss"), r.option("loss", "k"), r.setting("train", "lr"))
    assert read == (3, 0.5, "sparse_softmax", 20, 0.1)
    assert r.option("loss", "m") is None and r.setting("task", "name") is None and r.info("sizes", "train") == 10
    assert r.arm("k") == ("sparse_softmax", 20) and r.arm("k", group="sampler") == (None, None)
    with pytest.raises(KeyError, match=r"keeps no choices\['task'\] \(its choices: "):
        r.choice("task")
    row = RunRecord.of_row({"choices": {"loss": "softmax"}, "config": {"loss": {}}, "tokens_per_s": 1000.0})
    assert row.choice("loss") == "softmax" and row.setting("loss") == {} and row.metrics == {}  # a measurement's head


def test_a_record_is_saved_atomically_as_strict_json_and_reads_back_the_same(tmp_path):
    r = RunRecord.new(experiment="e", run_name="r", seed=0, choices={"study": "s"}, config={"x": 1}, command=["python", "-m", "a b"],
                      git={"commit": "abc1234", "dirty": False, "dirty_paths": [], "dirty_paths_more": 0},
                      metrics={"nll": float("inf")}, timing={"wall_s": 1.0})
    path = r.save(tmp_path)
    assert path == tmp_path / "e" / "r.json" and json.loads(path.read_text())["metrics"] == {"nll": "inf"}
    assert r.command == "python -m 'a b'" and "data" not in json.loads(path.read_text())  # a study's run has no data
    assert RunRecord.load(path) == RunRecord.of(r.to_dict())
