"""python -m softmax_zoo.studies.sampler_bias end to end on the generated corpus (init and a checkpoint)."""

from __future__ import annotations

import json

import pytest

from softmax_zoo import config, engine
from softmax_zoo.reports._kernel_diagnostics import diagnostics
from softmax_zoo.studies import sampler_bias


def overrides(corpus, tmp_path) -> list[str]:
    return ["task=lm1b", "scale=smoke", f"task.data_dir={corpus}", f"results_dir={tmp_path}", f"output_dir={tmp_path}/ckpt"]


def diagnose(checkpoint, corpus, tmp_path, *extra, out="default"):
    argv = [str(checkpoint), *overrides(corpus, tmp_path), "--batches", "1", "--draws", "3", "--samples", "4", "16",
            "--samplers", "uniform", "quadratic_centred", "softmax", *extra]
    if out:
        argv += ["--out", str(tmp_path / "diagnostics" / "sampler_bias")]
    return sampler_bias.run(sampler_bias.parse_args(argv))


def test_init_writes_json_and_table(lm_corpus, tmp_path):
    result = diagnose("init", lm_corpus, tmp_path, "--name", "at_init", "--trained-by", "nothing (init)")
    saved = json.loads((tmp_path / "diagnostics" / "sampler_bias" / "at_init.json").read_text())
    assert saved["rows"] == result["rows"] and saved["meta"]["step"] == 0
    assert [(r["sampler"], r["m"]) for r in saved["rows"]] == [
        (s, m) for s in ("uniform", "quadratic_centred", "softmax") for m in (4, 16)
    ]
    oracle = [r for r in saved["rows"] if r["sampler"] == "softmax"]
    assert all(abs(r["kl"]) < 1e-6 and abs(r["loss_bias"]) < 1e-5 for r in oracle)
    assert all(r["kl"] > 0 for r in saved["rows"] if r["sampler"] != "softmax")
    page = (tmp_path / "diagnostics" / "sampler_bias" / "at_init.md").read_text()
    assert "| quadratic_centred |" in page and "sampler_bias init" in page


def test_checkpoint_after_training(lm_corpus, tmp_path):
    engine.run(config.compose([*overrides(lm_corpus, tmp_path), "loss=softmax", "train.save_steps=2"]))
    ckpt = sorted((tmp_path / "ckpt").glob("checkpoint-*"))[-1]
    result = diagnose(ckpt, lm_corpus, tmp_path)
    step = int(ckpt.name.split("-")[1])
    assert result["meta"]["step"] == step
    assert (tmp_path / "diagnostics" / "sampler_bias" / f"{result['meta']['run_name']}_step{step}.json").is_file()


def test_a_folder_that_is_not_a_checkpoint_is_refused(lm_corpus, tmp_path):
    with pytest.raises(ValueError, match="must be 'init' or a checkpoint-N folder, got"):
        diagnose(tmp_path, lm_corpus, tmp_path)


def test_kernel_bias_page_section_shows_the_diagnostics(lm_corpus, tmp_path):
    assert diagnostics(tmp_path) == []  # no diagnostics: the page has no such section
    result = diagnose("init", lm_corpus, tmp_path, "--trained-by", "train.max_steps=0", out=None)
    experiment = result["meta"]["experiment"]  # the default folder: <results_dir>/diagnostics/sampler_bias/<experiment>
    assert (tmp_path / "diagnostics" / "sampler_bias" / experiment / f"{result['meta']['run_name']}_step0.json").is_file()
    assert diagnostics(tmp_path, "kernel_bias") == []
    found, = diagnostics(tmp_path, experiment)
    assert found["meta"]["trained_by"] == "train.max_steps=0" and found["meta"]["step"] == 0
    assert 16 in found["ms"] and "quadratic_centred" in [s["name"] for s in found["samplers"]]
    assert all(s["kl"] >= 0 and len(s["loss"]) == len(s["grad"]) == len(found["ms"]) for s in found["samplers"])


def test_options_are_dashed_and_every_key_value_is_an_override():
    args = sampler_bias.parse_args(["init", "experiment=kernel_bias_full", "seed=3", "--seed", "7", "--samples", "8", "32",
                                    "scale=cpu", "--trained-by", "python -m softmax_zoo.train seed=3"])
    assert args.checkpoint == "init" and args.overrides == ["experiment=kernel_bias_full", "seed=3", "scale=cpu"]
    assert args.seed == 7 and args.samples == [8, 32] and args.trained_by == "python -m softmax_zoo.train seed=3"
    assert args.batches == 3 and args.samplers == list(sampler_bias.SAMPLERS)
    with pytest.raises(ValueError, match="batches='0': must be >= 1"):
        sampler_bias.parse_args(["init", "--batches", "0"])
    with pytest.raises(ValueError, match="unknown option 'bathces'"):
        sampler_bias.parse_args(["init", "--bathces", "2"])
