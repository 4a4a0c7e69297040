"""The PTB self-distillation part of the stable page: records grouped by form, the verdict over seeds."""

from __future__ import annotations

import json

from softmax_zoo.reports import stable
from softmax_zoo.reports._verdicts import VerdictKind


def write(tmp_path, name, seed, ppl, kl=None, dirty_paths=()):
    distill = ({"teacher": "checkpoints/stable_kd_ptb/teacher", "kl": kl, "alpha": 0.5, "temperature": 1.0, "topk": 64}
               if kl else {"teacher": None})
    record = {"seed": seed, "metrics": {"test/perplexity": ppl}, "timing": {"wall_s": 120.0, "global_steps": 400},
              "config": {"distill": distill, "model": {"hidden_size": 200},
                         "train": {"optim": "adagrad", "lr": 0.1, "batch_size": 32}},
              "git": {"commit": "0123456789", "dirty": bool(dirty_paths), "dirty_paths": list(dirty_paths)}}
    folder = tmp_path / "runs" / stable.KD_PTB
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(record))


def test_no_records_is_not_tested(tmp_path):
    ptb = stable.kd_ptb(tmp_path)
    assert ptb["verdict"] is None and ptb["teachers"] == [] and ptb["students"] == {"standard": [], "stable": []}


def test_three_seeds_decide_and_the_teacher_is_not_a_student(tmp_path):
    write(tmp_path, "teacher", 0, 300.0)
    for seed, (standard, stable_ppl) in enumerate([(250.0, 200.0), (252.0, 201.0), (249.0, 199.0)]):
        write(tmp_path, f"standard{seed}", seed, standard, kl="standard")
        write(tmp_path, f"stable{seed}", seed, stable_ppl, kl="stable")
    ptb = stable.kd_ptb(tmp_path)
    assert [t.seed for t in ptb["teachers"]] == [0]
    assert [r.seed for r in ptb["students"]["stable"]] == [0, 1, 2]
    assert [r.metrics["test/perplexity"] for r in ptb["students"]["standard"]] == [250.0, 252.0, 249.0]
    v = ptb["verdict"]
    assert v.kind is VerdictKind.SUPPORTED


def test_one_seed_is_a_single_run(tmp_path):
    write(tmp_path, "standard0", 0, 250.0, kl="standard")
    write(tmp_path, "stable0", 0, 240.0, kl="stable")
    assert stable.kd_ptb(tmp_path)["verdict"].kind is VerdictKind.SINGLE_RUN


def test_a_dirty_student_is_counted_on_the_row(tmp_path):
    """The row's note counts the students made with uncommitted changes (the teacher is behind no verdict); none when clean."""
    write(tmp_path, "teacher", 0, 300.0, dirty_paths=["src/a.py"])
    for seed in range(3):
        write(tmp_path, f"standard{seed}", seed, 250.0 + seed, kl="standard", dirty_paths=["src/b.py"] * (seed == 2))
        write(tmp_path, f"stable{seed}", seed, 200.0 + seed, kl="stable")
    assert stable.kd_ptb(tmp_path)["dirty"] == "rests on 1 of 6 records made with uncommitted changes (src/b.py)"
    write(tmp_path, "standard2", 2, 252.0, kl="standard")
    assert stable.kd_ptb(tmp_path)["dirty"] == ""
