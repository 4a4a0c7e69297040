"""The uniform-sampler diagnostic: its page is rendered from its JSON, and it retrains the run it diagnoses."""

from __future__ import annotations

import json
from pathlib import Path

from omegaconf import OmegaConf

from softmax_zoo.studies import sampled_uniform as study

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "results/diagnostics/sampled_uniform_check.md"


def test_the_committed_page_is_its_json_rendered_with_the_command_as_run_now():
    result = json.loads(PAGE.with_suffix(".json").read_text(encoding="utf-8"))
    assert study.render(result) == PAGE.read_text(encoding="utf-8")
    assert f"`python -m {study.MODULE} --steps 600 --probe-every 100`" in PAGE.read_text(encoding="utf-8")


def test_rerun_command_keeps_the_arguments_under_this_module():
    assert study.rerun_command("python -m softmax_zoo.diagnostics.sampled_uniform --steps 600 'a b'") == (
        f"python -m {study.MODULE} --steps 600 'a b'")


def test_the_study_retrains_the_committed_record_settings(tmp_path):
    record = json.loads((ROOT / study.COMMITTED_RECORD).read_text(encoding="utf-8"))
    cfg = OmegaConf.to_container(study.study_config(5, str(tmp_path)), resolve=True)
    then = record["config"]
    assert {k: cfg["model"][k] for k in then["model"]} == then["model"]  # dropout 0 among them (the cpu scale now has 0.25)
    assert {k: cfg["loss"][k] for k in then["loss"]} == then["loss"]
    assert (cfg["task"]["min_count"], cfg["task"]["bptt"]) == (then["task"]["min_count"], then["task"]["bptt"]) == (1, 20)
    assert cfg["train"]["eval_steps"] == 0 and cfg["train"]["batch_size"] == record["config"]["train"]["batch_size"]
