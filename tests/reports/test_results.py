"""Records, the atomic writer, statistics, tables, the claims ledger and the pages' command line, on hand-made records."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from softmax_zoo import config, files, records, reports
from softmax_zoo.markdown import markdown_table
from softmax_zoo.provenance import REPO_ROOT as REPO
from softmax_zoo.reports import __main__ as cli
from softmax_zoo.reports._pages import commits, dirty_note, file_commit, provenance, read_claims, update_claims
from softmax_zoo.reports._stats import format_mean_ci, mean_ci, paired_bootstrap


def record(experiment: str, run: str, loss: str, seed: int, f1: float) -> dict:
    return {
        "experiment": experiment,
        "run_name": run,
        "seed": seed,
        "choices": {"loss": loss},
        "config": {"loss": {}},
        "metrics": {"test/micro_f1": f1},
    }


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    for seed, f1 in enumerate([0.90, 0.92, 0.94]):
        records.write_record(record("fig2", f"softmax_s{seed}", "softmax", seed, f1), root)
    for seed, f1 in enumerate([0.95, 0.96]):
        records.write_record(record("fig2", f"sparse_s{seed}", "sparse_softmax", seed, f1), root)
    records.write_record(record("other", "x", "softmax", 0, 0.1), root)
    return root


def test_mean_ci_is_student_t():
    mean, half, n = mean_ci([1.0, 2.0, 3.0])
    # s = 1, t_{0.975, 2} = 4.302653 -> half = 4.302653 / sqrt(3)
    assert (mean, n) == (2.0, 3) and half == pytest.approx(4.302653 / math.sqrt(3), rel=1e-6)
    mean, half, n = mean_ci([5.0])
    assert mean == 5.0 and math.isnan(half) and n == 1
    with pytest.raises(ValueError, match="at least one"):
        mean_ci([])


def test_load_filter_and_group(runs):
    assert len(records.load_records(runs)) == 6
    fig2 = records.load_records(runs, experiment="fig2")
    groups = records.group_by(fig2, ["choices.loss"])
    f1 = {k[0]: [records.get(r, "metrics.test/micro_f1") for r in v] for k, v in groups.items()}
    assert f1 == {"softmax": [0.90, 0.92, 0.94], "sparse_softmax": [0.95, 0.96]}
    mean, half, _ = mean_ci(f1["softmax"])
    assert mean == pytest.approx(0.92) and half == pytest.approx(4.302653 * 0.02 / math.sqrt(3), rel=1e-6)
    assert format_mean_ci(f1["sparse_softmax"], scale=100) == "95.50 ± 6.35 (n=2)"  # t_{0.975,1} = 12.706 * 0.5
    assert records.get(fig2[0], "config.nope.deeper") is None


def test_write_record_is_atomic(tmp_path):
    path = records.write_record(record("e", "r", "softmax", 0, 0.5), tmp_path)
    assert json.loads(path.read_text())["metrics"]["test/micro_f1"] == 0.5
    bad = record("e", "bad", "softmax", 0, 0.5)
    bad["metrics"]["obj"] = object()  # not JSON: the dump fails half-way
    with pytest.raises(TypeError):
        records.write_record(bad, tmp_path)
    assert sorted(p.name for p in (tmp_path / "e").iterdir()) == ["r.json"]


def test_paired_bootstrap():
    rng = np.random.default_rng(0)
    a = rng.random(400)
    b = a + 0.05 + 0.01 * rng.standard_normal(400)
    out = paired_bootstrap(a, b, num_samples=2000)
    assert out["delta"] == pytest.approx(float(np.mean(b - a)))
    assert out["low"] < out["delta"] < out["high"] and out["low"] > 0.04 and out["p_le_0"] == 0.0
    same = paired_bootstrap(a, a, num_samples=100)
    assert same == {"delta": 0.0, "low": 0.0, "high": 0.0, "p_le_0": 1.0}
    with pytest.raises(ValueError, match="equal-length"):
        paired_bootstrap(a, b[:10])


def test_markdown_table():
    table = markdown_table(["a", "b"], [[1, "x|y"]])
    assert table == "| a | b |\n|---|---|\n| 1 | x\\|y |\n"
    with pytest.raises(ValueError, match="header has 2"):
        markdown_table(["a", "b"], [[1]])


def claim(cid: str, ours: str, source: str) -> dict:
    return {"id": cid, "claim": "k=20 | best", "paper": "60.7", "ours": ours, "verdict": "supported", "source": source,
            "form": {"kind": "superiority", "cue": "best"}}


def test_claims_ledger_rows_are_keyed_by_id(tmp_path):
    ledger = tmp_path / "claims.md"
    update_claims([claim("fig2.iflytek", "59.1", "fig2")], ledger)
    update_claims([claim("lm1b.ppl", "120", "lm1b")], ledger)
    update_claims([claim("fig2.iflytek", "61.0", "fig2")], ledger)  # rebuilt: replaces its row only
    rows = read_claims(ledger)
    assert set(rows) == {"fig2.iflytek", "lm1b.ppl"}
    assert rows["fig2.iflytek"]["ours"] == "61.0" and rows["lm1b.ppl"]["ours"] == "120"
    assert rows["lm1b.ppl"]["claim"] == "k=20 | best"
    assert "| k=20 \\| best |" in ledger.read_text()  # the page made from the rows' data (claims.json) escapes "|"
    with pytest.raises(ValueError, match="lacks"):
        update_claims([{"id": "x"}], ledger)


def test_cli_dispatches_to_a_report(tmp_path, monkeypatch, capsys):
    (tmp_path / "fake_report.py").write_text(
        f"def build():\n    open({str(tmp_path / 'built.txt')!r}, 'w').write('ok')\n"
    )
    monkeypatch.setattr(reports, "__path__", [*reports.__path__, str(tmp_path)])
    assert cli.main(["fake_report"]) == 0
    assert (tmp_path / "built.txt").read_text() == "ok"
    assert cli.main(["no_such_report"]) == 2
    err = capsys.readouterr().err
    assert "fake_report" in err and "_pages" not in err  # private helper modules are not pages


def test_provenance_names_the_command_and_commits():
    recs = [{"git": {"commit": "abcdef123", "dirty": False}}, {"git": {"commit": "abcdef123", "dirty": True}}]
    line = provenance("fig2", recs)
    assert line == ("Made by `python -m softmax_zoo.reports fig2` from 2 run records; records from commit abcdef1 (2 runs, "
                    "1 with uncommitted changes: changed files not recorded); 1 of 2 records made with uncommitted changes.\n")


def test_commits_name_the_changed_files_each_dirty_record_lists():
    recs = [{"created": "1", "git": {"commit": "aaaaaaa1", "dirty": True, "dirty_paths": ["src/b.py", "configs/a.yaml"],
                                     "dirty_paths_more": 2}},
            {"created": "2", "git": {"commit": "aaaaaaa1", "dirty": True, "dirty_paths": ["src/b.py"], "dirty_paths_more": 0}},
            {"created": "3", "git": {"commit": "bbbbbbb2", "dirty": False, "dirty_paths": []}},
            {"created": "4", "git": {"commit": None}}]
    assert commits(recs) == ("commits aaaaaaa (2 runs, 2 with uncommitted changes: configs/a.yaml, src/b.py, and 2 more), "
                             "bbbbbbb (1 run), unknown (1 run); 2 of 4 records made with uncommitted changes")
    assert commits(recs[2:3]) == "commit bbbbbbb (1 run); none of 1 record made with uncommitted changes"
    assert dirty_note(recs[2:3]) == ""
    assert dirty_note(recs[:3]) == ("rests on 2 of 3 records made with uncommitted changes "
                                    "(configs/a.yaml, src/b.py, and 2 more)")


def test_a_measurement_file_names_its_commit_or_says_it_has_none():
    assert file_commit({"rows": []}) == "commit not recorded"
    assert file_commit({"git": {"commit": "abcdef123", "dirty": False, "dirty_paths": []}}) == "commit abcdef1"
    assert file_commit({"git": {"commit": "abcdef123", "dirty": True, "dirty_paths": ["src/a.py"]}}) == (
        "commit abcdef1, with uncommitted changes: src/a.py")


def test_atomic_write_leaves_the_old_file_when_the_writer_fails(tmp_path):
    path = files.write_text(tmp_path / "sub" / "page.md", "old ±\n")

    def half_then_fail(tmp):
        tmp.write_text("half")
        raise RuntimeError("writer failed")

    with pytest.raises(RuntimeError, match="writer failed"):
        files.atomic_write(path, half_then_fail)
    assert path.read_text(encoding="utf-8") == "old ±\n" and [p.name for p in path.parent.iterdir()] == ["page.md"]
    files.atomic_write(path, lambda tmp: tmp.write_bytes(b"\x89PNG"))
    assert path.read_bytes() == b"\x89PNG"


def test_choice_names_the_record_when_it_lacks_one():
    r = record("e", "r", "sparse_softmax", 0, 0.5)
    assert records.choice(r, "loss") == "sparse_softmax"
    with pytest.raises(KeyError, match="'r' keeps no choices\\['sampler'\\]"):
        records.choice(r, "sampler")


def test_compose_gives_hydras_choices():
    config.compose(["experiment=kernel_bias_sampled", "loss/sampler=quadratic", "scale=smoke"])
    assert config.hydra_choices() == {
        "task": "ptb", "model": "lstm_lm", "loss": "sampled_softmax", "sampler": "quadratic",
        "scale": "smoke", "experiment": "kernel_bias_sampled", "start": None,
    }


def test_predictions_sit_beside_the_record(tmp_path):
    rows = [{"index": 0, "reference": "a b", "beam1": {"prediction": "a ü"}}]
    path = records.write_predictions(rows, tmp_path, "table5", "run", "test")
    assert path == tmp_path / "table5" / "run.test.predictions.jsonl" == records.predictions_path(tmp_path, "table5", "run", "test")
    assert records.read_predictions({"experiment": "table5", "run_name": "run"}, tmp_path) == rows
    with pytest.raises(FileNotFoundError, match="rerun other"):
        records.read_predictions({"experiment": "table5", "run_name": "other"}, tmp_path)


COMMITTED_CLAIMS = REPO / "results" / "claims.md"
DECIDED = re.compile(r"\b(supported|contradicts)\b[^(]*\((seeds? [\d, ]+)")


def seed_count(label: str) -> int:
    return len(label.split(" ", 1)[1].strip(" ,").split(","))


@pytest.mark.parametrize("source", [
    "fig2", "kernel_bias", "sparse_regime", "sparse_helps", "stable", "table3", "table5",
    "lm1b",
])
def test_committed_claims_decide_only_from_three_seeds_and_name_them(source):
    rows = [r for r in read_claims(COMMITTED_CLAIMS).values() if r["source"] == source]
    assert rows
    for row in rows:
        if row["verdict"].startswith(("not tested", "deterministic", "by construction", "single measurement")):  # no seeds behind them
            assert not re.search(r"\b(?:supported|contradicts)\b", row["verdict"]), row["id"]
            continue
        assert re.search(r"\bseeds? \d", row["ours"] + row["verdict"]), f"{row['id']} names no seeds"
        words = re.findall(r"\b(?:supported|contradicts)\b", row["verdict"])
        decided = DECIDED.findall(row["verdict"])
        assert len(decided) == len(words), f"{row['id']}: a verdict without its seeds: {row['verdict']}"
        assert all(seed_count(label) >= 3 for _, label in decided), f"{row['id']}: decided from fewer than 3 seeds"


@pytest.mark.parametrize("row_id", [
    "fig1-convergence-rcv1", "sparse-margin-log-n-1", "fig2-finetune-robust-k-clinc_oos",
    "kernel-bias-vs-unigram", "kernel-bias-m10-50", "kernel-sampling-log-n", "lm1b-adaptive-vs-approximations",
    "stable-zero-sum-ce", "stable-zero-sum-kd", "fig2-robust-k-wos",
])
def test_committed_claims_quote_the_papers(row_id):
    row = read_claims(COMMITTED_CLAIMS)[row_id]
    assert row["claim"].startswith('"'), f"{row_id} does not quote its paper"
    kinds = ("supported", "contradicts", "inconclusive", "too few seeds", "single run", "not tested", "equivalent", "not equivalent",
             "not comparable (regime)")
    assert row["verdict"].startswith(kinds) or re.match(r"(faster|m=\d+): ", row["verdict"]), row["verdict"]


def test_log_time_claim_reads_the_benchmarks_tree_timing(tmp_path):
    from softmax_zoo.reports.kernel_bias import BENCH_FILE, log_time_claim

    assert log_time_claim(tmp_path)["sizes"] is None
    (tmp_path / BENCH_FILE).with_suffix(".json").write_text(json.dumps({"groups": [
        {"title": "sampled softmax: tree sampling time vs C (N=1024, m=64, d=64)",
         "rows": [{"variant": "QuadraticKernelSampler tree (C=1,000)", "ms": 100.0},
                  {"variant": "QuadraticKernelSampler tree (C=1,000,000)", "ms": 200.0}]},
        {"title": "next", "rows": [{"variant": "QuadraticKernelSampler tree (C=5)", "ms": 9.0}]},
    ]}))
    row = log_time_claim(tmp_path)
    assert row["sizes"] == [(1_000, 100.0), (1_000_000, 200.0)]  # the first group's smallest and largest C
    assert row["log_grow"] == pytest.approx(2.0)  # log(1e6) / log(1e3)


@pytest.mark.parametrize("values, digits, want", [
    ((0.0019, -0.0002, 0.0040), 2, 4),  # -0.00 and +0.00 at 2 and 3 digits
    ((2.97, 1.90, 4.05), 2, 2),  # already distinct and nonzero
    ((0.00095, 0.00089, 0.00101), 2, 5),  # the bounds print alike until 5 digits
    ((0.0, -0.5, 0.5), 2, 2),  # an exact 0 is no blur
    ((1e-12, -1e-12, 2e-12), 2, 6),  # capped
])
def test_enough_digits(values, digits, want):
    from softmax_zoo.reports._pages import enough_digits

    assert enough_digits(values, digits) == want
