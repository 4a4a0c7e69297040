"""The controlled sparse-softmax study at toy size (softmax_zoo.studies.sparse_helps)."""

from __future__ import annotations

import json

import pytest
import torch

from softmax_zoo.records import RECORD_SCHEMA
from softmax_zoo.studies import sparse_helps as study

TINY = study.Setting(classes=30, context_dim=4, hidden=8, ks=(5, 2), dial_k=5, levels=(0.4, 0.9), steps=6, batch=16,
                     test_size=64, calibration_size=256, frequent=3, log_every=3)


def test_the_dial_sets_the_teachers_mass_inside_its_top_k():
    teacher = study.Teacher(TINY)
    x = torch.randn(TINY.calibration_size, TINY.context_dim, generator=torch.Generator().manual_seed(TINY.teacher_seed + 1))
    taus = [study.temperature(teacher, m, TINY) for m in TINY.levels]
    assert [teacher.top_mass(tau, TINY.dial_k, x) for tau in taus] == pytest.approx(TINY.levels, abs=1e-4)
    assert taus[0] > taus[1]  # less mass inside the top-k: a flatter teacher


def test_every_arm_of_a_seed_starts_alike_and_init_continues_the_softmax_student(monkeypatch):
    starts = []
    original = study.train
    monkeypatch.setattr(study, "train", lambda student, *a: starts.append(
        {k: v.clone() for k, v in student.state_dict().items()}) or original(student, *a))
    teacher, tau = study.Teacher(TINY), 1.0
    soft, _ = study.run_one({"level": 0.4, "loss": "softmax", "k": None, "start": "cold", "seed": 0}, TINY, teacher, tau, None)
    study.run_one({"level": 0.4, "loss": "sparse", "k": 5, "start": "cold", "seed": 0}, TINY, teacher, tau, None)
    study.run_one({"level": 0.4, "loss": "sparse", "k": 5, "start": "init", "seed": 0}, TINY, teacher, tau, soft)
    assert all(torch.equal(starts[0][k], starts[1][k]) for k in starts[0])  # the same initialisation
    assert all(torch.equal(starts[2][k], v) for k, v in soft.state_dict().items())  # +init: the trained softmax student
    assert not torch.equal(starts[0]["head.weight"], starts[2]["head.weight"])
    first = [x for x, _ in study.batches(teacher, tau, 0, TINY)]
    assert all(torch.equal(a, b) for a, b in zip(first, (x for x, _ in study.batches(teacher, tau, 0, TINY))))


def test_study_writes_one_record_per_run_and_resumes(tmp_path):
    out = tmp_path / "runs" / study.EXPERIMENT
    written = study.run_all(out, seeds=2, setting=TINY, command=["python", "-m", "softmax_zoo.studies.sparse_helps"])
    assert len(written) == len(study.plan(2, TINY)) == 2 * 2 * 2 * 3  # levels x seeds x starts x (softmax, k=5, k=2)
    assert study.run_all(out, seeds=2, setting=TINY) == []  # a rerun skips every finished record
    (out / "mass0.400_sparse-k5_init_seed1.json").unlink()
    assert [p.name for p in study.run_all(out, seeds=2, setting=TINY)] == ["mass0.400_sparse-k5_init_seed1.json"]
    record = json.loads((out / "mass0.900_sparse-k5_cold_seed1.json").read_text())
    assert record["schema"] == RECORD_SCHEMA and record["experiment"] == study.EXPERIMENT and record["seed"] == 1
    assert record["choices"] == {"level": 0.9, "loss": "sparse", "k": 5, "start": "cold"}
    m = record["metrics"]
    for key in ("test/mode_accuracy", "test/log_likelihood", "test/target_in_top5", "test/target_in_top2", "test/median_target_rank",
                "test/logits_near_kth_k5", "test/logits_near_kth_share_k5", "teacher/top5_mass"):
        assert isinstance(m[key], float), key
    assert m["test/log_likelihood"] < 0 and 0 <= m["test/target_in_top2"] <= m["test/target_in_top5"] <= 1
    assert m["test/logits_near_kth_share_k5"] == pytest.approx(m["test/logits_near_kth_k5"] / TINY.classes)
    assert 1 <= m["test/logits_near_kth_k5"] <= TINY.classes
    timing = record["timing"]
    assert 0 < timing["cpu_s"] and 0 < timing["wall_s"]  # CPU seconds recorded beside wall seconds


def test_bad_settings_are_named(capsys):
    assert study.main(["levels=0.05"]) == 2
    assert "levels must lie in" in capsys.readouterr().err
    with pytest.raises(ValueError, match="ks must be"):
        study.check_setting(study.Setting(ks=(5,)))
