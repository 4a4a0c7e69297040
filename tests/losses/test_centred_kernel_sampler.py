"""CentredQuadraticKernelSampler (our extension): the tree draws from q ∝ α(h·w − h·w̄)² + 1 (and
q̃ without the target), log_q is exact, w̄ follows the weight, a refresh equals a rebuild."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import CentredQuadraticKernelSampler
from softmax_zoo.losses.reference.sampled import centred_kernel_probs, chi_square_pvalue, kernel_probs

from .test_kernel_sampler import (
    ALPHA,
    P_FALSE_ALARM,
    SMALL_TREE,
    TREE_IDS,
    TREES,
    C,
    D,
    check_draws_follow,
    check_log_prob_closed_form,
)


@pytest.fixture
def data():
    """hidden (4, D), weight (C, D) = a large shared row w̄ + small class parts, a few large ones."""
    g = torch.Generator().manual_seed(7)
    common = torch.randn(D, generator=g) * 3.0
    weight = common + torch.randn(C, D, generator=g) * 0.3
    weight[[3, 20]] += torch.randn(2, D, generator=g) * 1.5  # classes with most of the centred mass
    return torch.randn(4, D, generator=g), weight, torch.tensor([0, 20, C - 1, 3])


def test_centring_changes_the_distribution(data):
    """The fixture's shared row makes the plain and centred kernels disagree (else the tests below prove little)."""
    hidden, weight, _ = data
    plain, centred = kernel_probs(hidden, weight, ALPHA), centred_kernel_probs(hidden, weight, ALPHA)
    assert float((plain - centred).abs().sum(1).min()) > 0.5  # total variation > 0.25 on every row


@pytest.mark.parametrize("excluded", [False, True], ids=["q", "q_tilde"])
@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_draws_follow_centred_kernel_distribution(excluded, tree, data):
    check_draws_follow(CentredQuadraticKernelSampler(**tree), centred_kernel_probs, data, excluded)


def test_log_prob_is_closed_form(data):
    check_log_prob_closed_form(CentredQuadraticKernelSampler(**SMALL_TREE), centred_kernel_probs, data)


def test_refresh_after_a_large_move_recentres_and_equals_rebuild(data):
    """A shift of every row moves w̄ beyond the recentring threshold: the tree is that of a rebuild."""
    hidden, weight, _ = data
    sampler = CentredQuadraticKernelSampler(**SMALL_TREE)
    sampler.refresh(weight)
    new = weight.clone()
    new += 1.0  # w̄ moves by 2 (D = 4), the centred rows' rms norm stays ~0.8
    sampler.refresh(new)
    torch.testing.assert_close(sampler._centre, new.mean(0), rtol=0, atol=0)
    rebuilt = CentredQuadraticKernelSampler(**SMALL_TREE)
    rebuilt.refresh(new)
    for ours, theirs in zip(sampler._S, rebuilt._S, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-5)
    ids = torch.arange(C).expand(4, C)
    torch.testing.assert_close(
        sampler.log_prob(hidden, new, ids).double(), centred_kernel_probs(hidden, new, ALPHA).log(), rtol=0, atol=1e-5
    )


def test_small_move_keeps_the_centre_and_stays_exact(data):
    """w̄ moves a little: the tree keeps its centre c ≠ w̄ (partial refresh), draws stay exact."""
    hidden, weight, target = data
    sampler = CentredQuadraticKernelSampler(**SMALL_TREE)
    sampler.refresh(weight)
    centre = sampler._centre.clone()
    new = weight.clone()
    new[5] += 0.5
    sampler.refresh(new)
    assert torch.equal(sampler._centre, centre) and not torch.equal(sampler._mean, centre)
    torch.manual_seed(0)
    ids, log_q = sampler.sample(hidden, new, 20_000, exclude=target)
    probs = centred_kernel_probs(hidden, new, ALPHA, target)
    assert chi_square_pvalue(ids, probs) > P_FALSE_ALARM
    torch.testing.assert_close(log_q.double(), probs.gather(1, ids).log(), rtol=0, atol=1e-5)


def test_weight_with_zero_mean_gives_the_plain_kernel(data):
    hidden, weight, target = data
    weight = weight - weight.mean(0)
    ids = torch.arange(C).expand(4, C)
    got = CentredQuadraticKernelSampler(**SMALL_TREE).log_prob(hidden, weight, ids, exclude=target).double()
    torch.testing.assert_close(got, kernel_probs(hidden, weight, ALPHA, target).log(), rtol=0, atol=1e-5)


def test_runs_on_device(data, device):
    hidden, weight, target = (x.to(device) for x in data)
    torch.manual_seed(0)
    ids, log_q = CentredQuadraticKernelSampler(**SMALL_TREE).sample(hidden, weight, 2000, exclude=target)
    assert ids.device.type == device.type
    assert not bool((ids == target[:, None]).any())
    probs = centred_kernel_probs(hidden.cpu(), weight.cpu(), ALPHA, target.cpu())
    torch.testing.assert_close(log_q.cpu().double(), probs.gather(1, ids.cpu()).log(), rtol=0, atol=1e-5)
