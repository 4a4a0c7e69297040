"""Records, statistics, tables and the claims ledger, on hand-made records."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from softmax_zoo import reports, results


def record(experiment: str, run: str, loss: str, seed: int, f1: float) -> dict:
    return {
        "experiment": experiment,
        "run_name": run,
        "seed": seed,
        "config": {"loss": {"_target_": loss}},
        "metrics": {"test/micro_f1": f1},
    }


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    for seed, f1 in enumerate([0.90, 0.92, 0.94]):
        results.write_record(record("fig2", f"softmax_s{seed}", "Softmax", seed, f1), root)
    for seed, f1 in enumerate([0.95, 0.96]):
        results.write_record(record("fig2", f"sparse_s{seed}", "Sparse", seed, f1), root)
    results.write_record(record("other", "x", "Softmax", 0, 0.1), root)
    return root


def test_mean_ci_is_student_t():
    mean, half, n = results.mean_ci([1.0, 2.0, 3.0])
    # s = 1, t_{0.975, 2} = 4.302653 -> half = 4.302653 / sqrt(3)
    assert (mean, n) == (2.0, 3) and half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    mean, half, n = results.mean_ci([5.0])
    assert mean == 5.0 and math.isnan(half) and n == 1
    with pytest.raises(ValueError, match="at least one"):
        results.mean_ci([])


def test_load_filter_and_group(runs):
    assert len(results.load_records(runs)) == 6
    fig2 = results.load_records(runs, experiment="fig2")
    groups = results.group_by(fig2, ["config.loss._target_"])
    f1 = {k[0]: [results.get(r, "metrics.test/micro_f1") for r in v] for k, v in groups.items()}
    assert f1 == {"Softmax": [0.90, 0.92, 0.94], "Sparse": [0.95, 0.96]}
    mean, half, _ = results.mean_ci(f1["Softmax"])
    assert mean == pytest.approx(0.92) and half == pytest.approx(4.302653 * 0.02 / math.sqrt(3), rel=1e-6)
    assert results.format_mean_ci(f1["Sparse"], scale=100) == "95.50 ± 6.35 (n=2)"  # t_{0.975,1} = 12.706 * 0.5
    assert results.get(fig2[0], "config.nope.deeper") is None


def test_write_record_is_atomic(tmp_path):
    path = results.write_record(record("e", "r", "Softmax", 0, 0.5), tmp_path)
    assert json.loads(path.read_text())["metrics"]["test/micro_f1"] == 0.5
    bad = record("e", "bad", "Softmax", 0, 0.5)
    bad["metrics"]["obj"] = object()  # not JSON: the dump fails half-way
    with pytest.raises(TypeError):
        results.write_record(bad, tmp_path)
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == ["r.json"]


def test_paired_bootstrap():
    rng = np.random.default_rng(0)
    a = rng.random(400)
    b = a + 0.05 + 0.01 * rng.standard_normal(400)
    out = results.paired_bootstrap(a, b, num_samples=2000)
    assert out["delta"] == pytest.approx(float(np.mean(b - a)))
    assert out["low"] < out["delta"] < out["high"] and out["low"] > 0.04 and out["p_le_0"] == 0.0
    same = results.paired_bootstrap(a, a, num_samples=100)
    assert same == {"delta": 0.0, "low": 0.0, "high": 0.0, "p_le_0": 1.0}
    with pytest.raises(ValueError, match="equal-length"):
        results.paired_bootstrap(a, b[:10])


def test_markdown_table():
    table = results.markdown_table(["a", "b"], [[1, "x|y"]])
    assert table == "| a | b |\n|---|---|\n| 1 | x\\|y |\n"
    with pytest.raises(ValueError, match="header has 2"):
        results.markdown_table(["a", "b"], [[1]])


def claim(cid: str, ours: str, source: str) -> dict:
    return {"id": cid, "claim": "k=20 | best", "paper": "60.7", "ours": ours, "verdict": "supported", "source": source}


def test_claims_ledger_rows_are_keyed_by_id(tmp_path):
    ledger = tmp_path / "claims.md"
    results.update_claims([claim("fig2.iflytek", "59.1", "fig2")], ledger)
    results.update_claims([claim("lm1b.ppl", "120", "lm1b")], ledger)
    results.update_claims([claim("fig2.iflytek", "61.0", "fig2")], ledger)  # rebuilt: replaces its row only
    rows = results.read_claims(ledger)
    assert set(rows) == {"fig2.iflytek", "lm1b.ppl"}
    assert rows["fig2.iflytek"]["ours"] == "61.0" and rows["lm1b.ppl"]["ours"] == "120"
    assert rows["lm1b.ppl"]["claim"] == "k=20 | best"
    with pytest.raises(ValueError, match="lacks"):
        results.update_claims([{"id": "x"}], ledger)


def test_cli_dispatches_to_a_report(tmp_path, monkeypatch, capsys):
    (tmp_path / "fake_report.py").write_text(
        f"def build():\n    open({str(tmp_path / 'built.txt')!r}, 'w').write('ok')\n"
    )
    monkeypatch.setattr(reports, "__path__", [*reports.__path__, str(tmp_path)])
    assert results.main(["fake_report"]) == 0
    assert (tmp_path / "built.txt").read_text() == "ok"
    assert results.main(["no_such_report"]) == 2
    assert "fake_report" in capsys.readouterr().err


def test_provenance_names_the_command_and_commits():
    recs = [{"git": {"commit": "abcdef123", "dirty": False}}, {"git": {"commit": "abcdef123", "dirty": True}}]
    line = results.provenance("fig2", recs)
    assert line == "Made by `python -m softmax_zoo.results fig2` from 2 run records (code at abcdef1, abcdef1+dirty).\n"
