"""UniformSampler, UnigramSampler, SoftmaxSampler: draws follow the closed form, log_q is exact,
the excluded class (the target) is never drawn, bad arguments raise."""

from __future__ import annotations

import math

import pytest
import torch

from softmax_zoo.losses import SoftmaxSampler, UniformSampler, UnigramSampler
from softmax_zoo.losses.reference.sampled import chi_square_pvalue, softmax_probs, unigram_probs

P_FALSE_ALARM = 1e-6  # a correct sampler fails a chi-square test with this probability
C, D = 23, 5
COUNTS = torch.tensor([50.0, 0, 3, 7, 1, 0, 20, 4, 9, 2, 11, 5, 1, 8, 30, 2, 6, 0, 13, 1, 3, 17, 4])


@pytest.fixture
def rows():
    """hidden (4, D), weight (C, D), bias (C,), targets (4,) at the edges and in the middle."""
    g = torch.Generator().manual_seed(1)
    return (torch.randn(4, D, generator=g), torch.randn(C, D, generator=g), torch.randn(C, generator=g),
            torch.tensor([0, 6, C - 1, 14]))


def _closed_form(name, hidden, weight, bias, exclude):
    n = hidden.shape[0]
    if name == "uniform":
        return unigram_probs(torch.ones(C), 1.0, n, exclude)
    if name == "unigram":
        return unigram_probs(COUNTS, 0.75, n, exclude)
    return softmax_probs(hidden, weight, bias, exclude)


SAMPLERS = {
    "uniform": lambda: UniformSampler(C),
    "unigram": lambda: UnigramSampler(COUNTS, power=0.75),
    "softmax": lambda: SoftmaxSampler(),
}


@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("excluded", [False, True], ids=["q", "q_tilde"])
def test_draws_follow_closed_form_and_log_q_is_exact(name, excluded, rows):
    hidden, weight, bias, target = rows
    exclude = target if excluded else None
    torch.manual_seed(0)
    ids, log_q = SAMPLERS[name]().sample(hidden, weight, 20_000, exclude=exclude, bias=bias)
    probs = _closed_form(name, hidden, weight, bias, exclude)
    assert ids.shape == log_q.shape == (4, 20_000) and ids.dtype == torch.long
    assert chi_square_pvalue(ids, probs) > P_FALSE_ALARM
    torch.testing.assert_close(log_q.double(), probs.gather(1, ids).log(), rtol=0, atol=1e-5)
    if excluded:
        assert not bool((ids == target[:, None]).any())


@pytest.mark.parametrize("name", SAMPLERS)
def test_log_prob_is_closed_form(name, rows):
    hidden, weight, bias, target = rows
    ids = torch.arange(C).expand(4, C)
    sampler = SAMPLERS[name]()
    for exclude in (None, target):
        expected = _closed_form(name, hidden, weight, bias, exclude).log()
        got = sampler.log_prob(hidden, weight, ids, exclude=exclude, bias=bias).double()
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


def test_zero_count_classes_are_never_drawn(rows):
    hidden, weight, _, target = rows
    torch.manual_seed(0)
    ids, _ = UnigramSampler(COUNTS).sample(hidden, weight, 5000, exclude=target)
    assert not bool(torch.isin(ids, (COUNTS == 0).nonzero()[:, 0]).any())


def test_unigram_excluding_a_dominant_target():
    """q_t = 0.999: exclusion must stay exact and fast (no rejection loop on the target)."""
    counts = torch.tensor([999.0, 0.5, 0.25, 0.25])
    torch.manual_seed(0)
    ids, log_q = UnigramSampler(counts).sample(torch.zeros(2, 3), torch.zeros(4, 3), 20_000, exclude=torch.tensor([0, 0]))
    probs = unigram_probs(counts, 1.0, 2, torch.tensor([0, 0]))
    assert chi_square_pvalue(ids, probs) > P_FALSE_ALARM
    torch.testing.assert_close(log_q[0, :3].double(), probs[0, ids[0, :3]].log(), rtol=0, atol=1e-6)


def test_uniform_log_q_values():
    ids, log_q = UniformSampler(10).sample(torch.zeros(3, 2), torch.zeros(10, 2), 4, exclude=torch.tensor([0, 5, 9]))
    assert torch.equal(log_q, torch.full((3, 4), -math.log(9)))


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: UnigramSampler(torch.tensor([1.0, -2.0, 3.0])), "-2.0"),
        (lambda: UnigramSampler(torch.zeros(5)), "got 0"),
        (lambda: UnigramSampler(torch.tensor([0.0, 4.0])), "got 1"),
        (lambda: UnigramSampler(torch.ones(3), power=-1.0), "-1.0"),
        (lambda: UniformSampler(1), "got 1"),
    ],
)
def test_bad_arguments_name_the_value(build, message):
    with pytest.raises(ValueError, match=message):
        build()


@pytest.mark.parametrize("name", SAMPLERS)
def test_num_samples_below_one_is_refused(name, rows):
    hidden, weight, _, _ = rows
    with pytest.raises(ValueError, match="got 0"):
        SAMPLERS[name]().sample(hidden, weight, 0)


@pytest.mark.parametrize("name", SAMPLERS)
def test_runs_on_device(name, rows, device):
    hidden, weight, bias, target = (x.to(device) for x in rows)
    ids, log_q = SAMPLERS[name]().sample(hidden, weight, 7, exclude=target, bias=bias)
    assert ids.device.type == log_q.device.type == device.type
    assert not bool((ids == target[:, None]).any())
