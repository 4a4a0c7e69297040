"""The collapse/cancellation study at toy size, and its page (softmax_zoo.studies.stable, reports/stable.py)."""

from __future__ import annotations

import json

import pytest

from softmax_zoo import provenance, records
from softmax_zoo.records import RECORD_SCHEMA
from softmax_zoo.reports import stable as page
from softmax_zoo.run_record import RunRecord
from softmax_zoo.studies import loss_forms
from softmax_zoo.studies.stable import Setting, main, run_all

TINY = Setting(modulus=11, embed=8, hidden=16, collapse_steps=20, teacher_steps=20, distill_steps=10, generalise_steps=10,
               saturate_steps=10, log_every=5, eval_every=10)
RUNS_PER_SEED = 5 + 11 + 10 + 3  # collapse, cancellation (equal, fresh, fresh rewrite-only), generalise (CE, KD), saturate


def test_study_resumes_and_builds_its_page(tmp_path):
    runs = tmp_path / "runs" / "stable"
    written = run_all(runs, seeds=2, setting=TINY)
    assert len(written) == 2 * RUNS_PER_SEED
    assert run_all(runs, seeds=2, setting=TINY) == []  # a rerun skips every finished record
    equal = [json.loads(p.read_text()) for p in runs.glob("cancellation_equal_stable_*.json")]
    assert all(p["logit_grad_norm"] == 0 and p["drift"] == 0 and p["identical_logits"] for r in equal for p in r["history"])
    (tmp_path / "claims.md").write_text("")
    assert loss_forms.main([f"out={tmp_path / page.LOSS_FORMS}"]) == 0  # the deterministic rows' measurement
    page.build(tmp_path)
    assert (tmp_path / "stable.md").is_file() and (tmp_path / "stable_drift.png").is_file()
    claims = (tmp_path / "claims.md").read_text()
    for row in ("stable-collapse", "stable-collapse-training", "stable-cancellation", "stable-collapse-bfloat16-rewrite",
                "stable-cancellation-bfloat16-rewrite", "stable-generalise-ce", "stable-generalise-kd"):
        assert f"| {row} |" in claims
    assert "| stable-kd-ptb |" in claims and "not tested" in claims
    kd = next(r for r in page.summarise(tmp_path)["claims"] if r["id"] == "stable-zero-sum-kd")
    assert kd["parts"]["rewrite"]["seeds"] == kd["parts"]["correction"]["seeds"] == [0, 1]  # three arms, paired by seed
    if kd["share"]:
        assert kd["share"]["rewrite"] + kd["share"]["correction"] == pytest.approx(1)  # log10 ratios add up


def test_records_use_the_training_records_schema(tmp_path):
    runs = tmp_path / "runs" / "stable"
    run_all(runs, seeds=1, only="collapse", setting=TINY, command=["python", "-m", "softmax_zoo.studies.stable", "seeds=1"])
    path = runs / "collapse_standard_float32_seed0.json"
    text = path.read_text()
    record = json.loads(text)
    assert "NaN" not in text and "Infinity" not in text
    assert record["schema"] == RECORD_SCHEMA and record["experiment"] == "stable"
    assert record["run_name"] == "collapse_standard_float32_seed0"
    assert record["choices"] == {"study": "collapse", "form": "standard", "dtype": "float32"}
    assert record["config"]["setting"]["modulus"] == TINY.modulus and record["seed"] == 0
    assert record["command"] == "python -m softmax_zoo.studies.stable seeds=1"
    assert records.choice(record, "form") == "standard"
    typed = RunRecord.of(record)  # as the page reads it
    assert page.group([typed], study="collapse", form="standard", dtype="float32") == [typed]
    assert page.by([typed], "loss") == {0: record["metrics"]["loss"]}
    assert page.setting_of([typed], "collapse") == record["config"]["setting"]
    assert typed.to_dict() == record  # read and written back, the same JSON


def test_every_committed_record_is_in_the_training_records_schema():
    folder = provenance.REPO_ROOT / "results" / "runs" / "stable"  # the earlier flat layout was migrated once
    found = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    assert found and all(r.get("schema") == RECORD_SCHEMA and "metrics" in r and "history" in r for r in found)


def test_bad_options_are_named(capsys):
    assert main(["seeds=0"]) == 2
    assert "seeds='0': must be >= 1" in capsys.readouterr().err
    assert main(["only=both"]) == 2
    assert "only='both': must be one of ['collapse', 'cancellation', 'generalise', 'saturate']" in capsys.readouterr().err
