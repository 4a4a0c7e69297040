"""softmax_zoo.diagnostics.bias_measures on a tiny random output layer: the oracle sampler has no
bias and KL 0, uniform sampling has a bias well above the draws' noise, KL and the logit sizes
match their closed forms."""

from __future__ import annotations

import math

import pytest
import torch

from softmax_zoo.diagnostics.bias_measures import OutputLayer, kl_to_model, logit_stats, sampled_bias
from softmax_zoo.losses import SampledSoftmaxHead, SoftmaxSampler, UniformSampler

N, D, C = 24, 6, 40


@pytest.fixture
def layer() -> OutputLayer:
    """Logits of a few nats (a peaked p, far from uniform), with an output bias."""
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(C, D, generator=g)
    return OutputLayer(torch.randn(N, D, generator=g), torch.randint(0, C, (N,), generator=g), weight, torch.randn(C, generator=g))


def head(sampler, m: int) -> SampledSoftmaxHead:
    return SampledSoftmaxHead(D, C, sampler=sampler, num_samples=m, bias=True)


def test_softmax_sampler_is_unbiased(layer):
    torch.manual_seed(0)
    out = sampled_bias(layer, head(SoftmaxSampler(), 4), draws=200)
    assert abs(out["loss_bias"]) < 1e-5 and out["loss_bias_se"] < 1e-5  # the loss is exact for every draw
    assert out["grad_noise"] > 0.01  # the draws do move the gradient ...
    assert out["grad_bias_raw"] < 2 * out["grad_noise"]  # ... but its mean only by the noise
    assert out["grad_bias"] < out["grad_noise"]  # the noise-corrected estimate scatters around 0 by ~noise·(2/R)^¼
    assert out["grad_cosine"] > 0.99


def test_uniform_sampler_bias_stands_out_of_the_noise(layer):
    torch.manual_seed(0)
    out = sampled_bias(layer, head(UniformSampler(C), 2), draws=200)
    assert out["loss_bias"] < -10 * out["loss_bias_se"]  # few uniform negatives underestimate the partition function
    assert out["grad_bias"] > 5 * out["grad_noise"]


def test_kl_is_zero_for_the_model_distribution_and_closed_form_for_uniform(layer):
    assert kl_to_model(layer, SoftmaxSampler(), rows=5) == pytest.approx(0.0, abs=1e-6)
    logits = layer.logits().scatter(1, layer.target[:, None], -math.inf)
    log_p = logits.log_softmax(1)
    p_log_p = (log_p.exp() * log_p.nan_to_num(neginf=0.0)).sum(1)
    expected = float((p_log_p + math.log(C - 1)).mean())  # KL(p̃ ‖ uniform over C − 1)
    assert kl_to_model(layer, UniformSampler(C), rows=7) == pytest.approx(expected, rel=1e-6)  # log q in float32


def test_logit_stats_see_a_shared_row():
    g = torch.Generator().manual_seed(1)
    common = torch.randn(D, generator=g) * 5
    parts = torch.randn(C, D, generator=g)
    parts -= parts.mean(0)
    hidden = torch.randn(N, D, generator=g)
    stats = logit_stats(OutputLayer(hidden, torch.zeros(N, dtype=torch.long), common + parts, None))
    assert stats["mean_row_norm"] == pytest.approx(float(common.norm()), rel=1e-5)
    assert stats["class_part_norm"] == pytest.approx(float(parts.norm(dim=1).mean()), rel=1e-5)
    assert stats["row_mean_hw"] == pytest.approx(float((hidden @ common).mean()), rel=1e-4)


def test_one_draw_is_refused(layer):
    with pytest.raises(ValueError, match=r"draws must be >= 2 .*, got 1"):
        sampled_bias(layer, head(SoftmaxSampler(), 4), draws=1)
