"""The PTB self-distillation part of the stable page: records grouped by form, the verdict over seeds."""

from __future__ import annotations

import json

from softmax_zoo.reports import _stable_kd_ptb as kd


def write(tmp_path, name, seed, ppl, kl=None):
    distill = ({"teacher": "checkpoints/stable_kd_ptb/teacher", "kl": kl, "alpha": 0.5, "temperature": 1.0, "topk": 64}
               if kl else {"teacher": None})
    record = {"seed": seed, "metrics": {"test/perplexity": ppl}, "timing": {"wall_s": 120.0, "global_steps": 400},
              "config": {"distill": distill, "model": {"hidden_size": 200},
                         "train": {"optim": "adagrad", "lr": 0.1, "batch_size": 32}}}
    folder = tmp_path / "runs" / kd.EXPERIMENT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(record))


def test_no_records_is_not_tested_and_no_section(tmp_path):
    assert kd.claim_row(tmp_path)["verdict"].startswith("not tested")
    assert kd.section(tmp_path) == ""


def test_three_seeds_decide_and_the_teacher_is_not_a_student(tmp_path):
    write(tmp_path, "teacher", 0, 300.0)
    for seed, (standard, stable) in enumerate([(250.0, 200.0), (252.0, 201.0), (249.0, 199.0)]):
        write(tmp_path, f"standard{seed}", seed, standard, kl="standard")
        write(tmp_path, f"stable{seed}", seed, stable, kl="stable")
    teachers, students = kd.load(tmp_path)
    assert [t["seed"] for t in teachers] == [0] and sorted(students["stable"]) == [0, 1, 2]
    row = kd.claim_row(tmp_path)
    assert row["verdict"].startswith("supported (seeds 0, 1, 2)"), row["verdict"]
    assert "standard: 250.00, 252.00, 249.00 (seeds 0, 1, 2)" in row["ours"]
    text = kd.section(tmp_path)
    assert "| student, stable KL (bfloat16 logits) | seeds 0, 1, 2 | 200.00, 201.00, 199.00 | 2.0, 2.0, 2.0 |" in text
    assert "the teacher's 64 largest logits" in text


def test_one_seed_is_a_single_run(tmp_path):
    write(tmp_path, "standard0", 0, 250.0, kl="standard")
    write(tmp_path, "stable0", 0, 240.0, kl="stable")
    assert kd.claim_row(tmp_path)["verdict"].startswith("single run (seed 0)")
