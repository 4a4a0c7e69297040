"""The LM experiment configs compose, compare heads fairly, and name each run of a sweep uniquely.

(Smoke scale is composed by the smoke runs of test_task.py; composing costs ~0.5 s, so the grids
here are the smallest that check the structure.)
"""

from __future__ import annotations

import itertools

import pytest

from softmax_zoo import config

LM1B = ("lm1b_softmax", "lm1b_adaptive", "lm1b_sampled_quadratic", "lm1b_sampled_unigram", "lm1b_sampled_uniform")


@pytest.mark.parametrize("scale", ("cpu", "paper"))
def test_lm1b_experiments_differ_only_in_the_head(scale):
    cfgs = [config.compose([f"experiment={e}", f"scale={scale}"]) for e in LM1B]
    assert len({c.run_name for c in cfgs}) == len(LM1B)
    assert {c.experiment_name for c in cfgs} == {"lm1b_regularised"}
    for c in cfgs[1:]:  # same model, data and training: the comparison is fair
        assert c.model == cfgs[0].model and c.task == cfgs[0].task and c.train == cfgs[0].train
    quadratic, unigram, uniform = cfgs[2].loss, cfgs[3].loss, cfgs[4].loss
    assert quadratic.num_samples == unigram.num_samples == uniform.num_samples == cfgs[0].task.num_samples
    assert unigram.sampler["_target_"].endswith("UnigramSampler") and unigram.sampler.power == 1.0
    assert cfgs[1].loss.cutoffs == list(cfgs[0].task.cutoffs)
    assert cfgs[0].model.dropout == 0.25 and cfgs[0].task.min_count == 3  # regularised as the paper scale


def test_lm1b_cpu_heads_are_evaluated_at_their_best_validation_checkpoint():
    cfg = config.compose(["experiment=lm1b_softmax", "scale=cpu"])
    assert (cfg.train.eval_steps, cfg.train.save_steps, cfg.train.metric_for_best_model) == (200, 200, "val/perplexity")
    assert cfg.train.greater_is_better is False and cfg.train.max_steps == 1000
    assert max(cfg.task.cutoffs) < 9606  # the cutoffs fit min_count 3's vocabulary (results/lm1b.md)
    ptb = config.compose(["experiment=kernel_bias_full", "scale=cpu"])
    assert (ptb.model.dropout, ptb.train.eval_steps) == (0.0, 0)  # the other cpu-scale LMs keep their settings


def test_kernel_bias_grid_names_every_run_and_keeps_everything_else_fixed():
    names, cfgs = set(), []
    for sampler, m in itertools.product(("uniform", "quadratic"), (8, 256)):
        cfg = config.compose(["experiment=kernel_bias_sampled", "scale=cpu", f"loss/sampler={sampler}", f"loss.num_samples={m}"])
        names.add(cfg.run_name)  # resolve now: ${hydra:...} reads the config composed last
        cfgs.append(cfg)
    full = config.compose(["experiment=kernel_bias_full", "scale=cpu"])
    names.add(full.run_name)
    assert len(names) == 5
    assert all(c.model == full.model and c.train == full.train and c.task == full.task for c in cfgs)
    assert full.model.hidden_size == 200  # Blanc & Rendle's LSTM with 200 units
    assert list(full.task.eval_splits) == ["validation"]


@pytest.mark.parametrize("scale", ("cpu", "paper"))
def test_wikitext2_scales_compose(scale):
    cfg = config.compose(["task=wikitext2", f"scale={scale}"])
    assert cfg.model.name == "lstm_lm" and cfg.task.builder == "softmax_zoo.tasks.lm.build_task"


def test_kernel_bias_paper_setting_differs_from_ours_only_in_the_setting():
    """No output bias, plain SGD, longer with a validation curve: the rest (model, data, sampler grid) as ours."""
    ours = config.compose(["experiment=kernel_bias_sampled", "scale=cpu", "loss/sampler=quadratic", "loss.num_samples=8"])
    paper = config.compose(["experiment=kernel_bias_paper_sampled", "scale=cpu", "loss/sampler=quadratic", "loss.num_samples=8"])
    full = config.compose(["experiment=kernel_bias_paper_full", "scale=cpu"])
    assert paper.experiment_name == full.experiment_name == "kernel_bias_paper"
    assert (ours.loss.bias, paper.loss.bias, full.loss.bias) == (True, False, False)
    assert (paper.train.optim, paper.train.lr, paper.train.max_steps) == ("sgd", 20.0, 1200) and paper.train == full.train
    assert paper.model == ours.model and paper.task.curve_every == 100


def test_kernel_bias_paper_study_runs_the_reference_then_kernels_first():
    from softmax_zoo.studies import kernel_bias_paper as study

    jobs = study.jobs([8, 2048], ["quadratic"], [8, 32], scale="cpu", seed=1, extra=["train.max_steps=5"])
    assert jobs[0] == ["experiment=kernel_bias_paper_full", "scale=cpu", "seed=1", "train.max_steps=5"]
    assert [j[-2:] for j in jobs[1:]] == [
        ["loss/sampler=quadratic", "loss.num_samples=8"], ["loss/sampler=uniform", "loss.num_samples=8"],
        ["loss/sampler=uniform", "loss.num_samples=2048"], ["loss/sampler=quadratic", "loss.num_samples=32"],
    ]
    with pytest.raises(ValueError, match=r"sample sizes must be >= 1, got uniform=\[0\]"):
        study.jobs([0], ["quadratic"], [8], scale="cpu", seed=0)
