"""Smoke-scale reproductions on generated pairs, through the training entry point and the reports.

Both experiments of each table run for two optimiser steps with a tiny random BERT
(model=unilm_tiny), decode 8 test examples (Gigaword: beams 1 and 5), and the report is built
from their records and predictions.
"""

import json
import random

import pytest

from softmax_zoo import config, engine
from softmax_zoo.data.prepare.generated import questions, summaries, write_pairs
from softmax_zoo.reports import table3, table5
from softmax_zoo.reports._pages import read_claims


def _run(tmp_path, experiment, data_dir):
    overrides = [
        f"experiment={experiment}", "model=unilm_tiny", "scale=smoke", f"task.data_dir={data_dir}",
        f"results_dir={tmp_path / 'results'}", f"output_dir={tmp_path / 'ckpt' / experiment}",
        # the smoke scale's own values, restated so the test does not depend on the composition order
        "train.max_steps=2", "train.batch_size=8", "train.save_steps=0", "train.precision=fp32",
    ]
    return engine.run(config.compose(overrides))


@pytest.mark.parametrize(
    "table, report, make_rows, metrics",
    [
        ("table5", table5, summaries, ["test/rouge1_beam1", "test/rouge2_beam5", "test/examples_per_s_beam5",
                                         "test/altered_by_constraint_beam1", "test/ended_by_constraint_beam5", "test/target_in_topk",
                                         "test/median_target_rank", "test/logits_near_kth"]),
        ("table3", table3, questions, ["test/bleu4_beam1", "test/rougeL_beam1", "test/examples_per_s_beam1", "test/target_in_topk"]),
    ],
)
def test_smoke_reproduction_on_generated_pairs(tmp_path, table, report, make_rows, metrics):
    rng = random.Random(0)
    data_dir = tmp_path / "data"
    write_pairs(data_dir, {"train": make_rows(rng, 24), "test": make_rows(rng, 12)})
    for loss in ("softmax", "sparse_softmax"):
        record = _run(tmp_path, f"{table}_{loss}", data_dir)
        assert record["experiment"] == table
        assert all(m in record["metrics"] for m in metrics), sorted(record["metrics"])
        assert record["task_info"]["sizes"] == {"train": 16, "test": 8}
        assert record["metrics"]["test/diagnostics_k"] == record["config"]["loss"].get("k", record["config"]["task"]["diagnostics_k"])
        rows = (tmp_path / "results" / "runs" / table / f"{record['run_name']}.test.predictions.jsonl").read_text().splitlines()
        assert len(rows) == 8 and {"prediction", "constraint_steps", "ended_by_constraint"} <= set(json.loads(rows[0])["beam1"])
    report.build(tmp_path / "results")
    text = (tmp_path / "results" / f"{table}.md").read_text()
    assert "## scale=smoke" in text and "Δ per seed [95% over test items]" in text and "altered by a search constraint" in text
    claims = read_claims(tmp_path / "results" / "claims.md")
    rows = [row for claim_id, row in claims.items() if claim_id.startswith(f"{table}_smoke_")]
    assert rows and all(row["source"] == table and row["verdict"].startswith("single run (seed 0)") for row in rows)
    assert all("regime: test targets in Ω_20 softmax" in row["ours"] for row in rows)  # the records carry the diagnostics
    paper_rows = [row for claim_id, row in claims.items() if claim_id.startswith(f"{table}_paper_")]
    assert len(paper_rows) == len(rows) and all(r["verdict"] == "not tested: needs scale=paper" for r in paper_rows)
