"""The uniform-sampler diagnostic: its page is built from its JSON alone, and it retrains the run it diagnoses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from softmax_zoo.cli_args import ArgumentError
from softmax_zoo.reports import sampled_uniform as page
from softmax_zoo.studies import sampled_uniform as study

ROOT = Path(__file__).resolve().parents[2]
MEASURED = ROOT / "results" / page.MEASUREMENT


def test_the_page_reads_its_figures_off_the_probes():
    data = page.summarise(ROOT / "results")
    points = data["points"]
    assert data["best"]["full_nll"] == min(p["full_nll"] for p in points) and data["last"] is points[-1]
    assert [p["step"] for p in data["probed"]] == [points[0]["step"], points[len(points) // 2]["step"], points[-1]["step"]]
    assert data["top"][0] == next(iter(points[-1]["buckets"])) and data["rare"][0] == list(points[-1]["buckets"])[-1]
    c = data["study"]
    assert data["draws_per_word"] == pytest.approx(c["batch_tokens"] * c["num_samples"] / c["vocab_size"])
    assert data["command"] == f"python -m {page.STUDY} --steps 600 --probe-every 100"  # recorded under the module's old name


def test_the_committed_page_is_its_json_built(tmp_path):
    page.build(ROOT / "results", tmp_path)
    built, committed = (folder / "sampled_uniform.md" for folder in (tmp_path, ROOT / "results"))
    assert built.read_text(encoding="utf-8") == committed.read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=f"run `python -m {page.STUDY}` first"):
        page.summarise(tmp_path / "empty")


def test_rerun_command_keeps_the_arguments_under_the_study_module():
    assert page.rerun_command("python -m softmax_zoo.diagnostics.sampled_uniform --steps 600 'a b'") == (
        f"python -m {page.STUDY} --steps 600 'a b'")


def test_the_command_line_keeps_the_recorded_spelling_and_names_a_bad_value():
    args = study.PARSER.parse(["--steps", "600", "--probe-every", "100", "train.lr=0.1"])
    assert (args["steps"], args["probe_every"], args["results_dir"], args.rest) == (600, 100, "results", ["train.lr=0.1"])
    with pytest.raises(ArgumentError, match="steps"):
        study.PARSER.parse(["--steps", "0"])


def test_the_study_retrains_the_committed_record_settings(tmp_path):
    record = json.loads((ROOT / study.COMMITTED_RECORD).read_text(encoding="utf-8"))
    cfg = OmegaConf.to_container(study.study_config(5, str(tmp_path)), resolve=True)
    then = record["config"]
    assert {k: cfg["model"][k] for k in then["model"]} == then["model"]  # dropout 0 among them (the cpu scale now has 0.25)
    assert {k: cfg["loss"][k] for k in then["loss"]} == then["loss"]
    assert (cfg["task"]["min_count"], cfg["task"]["bptt"]) == (then["task"]["min_count"], then["task"]["bptt"]) == (1, 20)
    assert cfg["train"]["eval_steps"] == 0 and cfg["train"]["batch_size"] == record["config"]["train"]["batch_size"]
