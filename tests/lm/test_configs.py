"""The LM experiment configs compose, compare heads fairly, and name each run of a sweep uniquely.

(Smoke scale is composed by the smoke runs of test_task.py; composing costs ~0.5 s, so the grids
here are the smallest that check the structure.)
"""

from __future__ import annotations

import itertools

import pytest

from softmax_zoo import config

LM1B = ("lm1b_softmax", "lm1b_adaptive", "lm1b_sampled_quadratic", "lm1b_sampled_uniform")


@pytest.mark.parametrize("scale", ("cpu", "paper"))
def test_lm1b_experiments_differ_only_in_the_head(scale):
    cfgs = [config.compose([f"experiment={e}", f"scale={scale}"]) for e in LM1B]
    assert len({c.run_name for c in cfgs}) == len(LM1B)
    assert {c.experiment_name for c in cfgs} == {"lm1b"}
    for c in cfgs[1:]:  # same model, data and training: the comparison is fair
        assert c.model == cfgs[0].model and c.task == cfgs[0].task and c.train == cfgs[0].train
    quadratic, uniform = cfgs[2].loss, cfgs[3].loss
    assert quadratic.num_samples == uniform.num_samples == cfgs[0].task.num_samples
    assert cfgs[1].loss.cutoffs == list(cfgs[0].task.cutoffs)


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
