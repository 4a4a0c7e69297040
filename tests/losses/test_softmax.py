"""softmax_cross_entropy: equal to F.cross_entropy, and to the float64 plain formula; errors."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from softmax_zoo.losses import softmax_cross_entropy
from softmax_zoo.losses.reference.logits import REDUCTIONS, cross_entropy_ref, make_inputs, value_and_grad


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_equals_torch(reduction, label_smoothing, gen, device):
    logits, target = make_inputs(3 * 41, 1001, gen)
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    loss, grad = value_and_grad(softmax_cross_entropy, logits.to(device), target.to(device), **kw)
    torch_loss, torch_grad = value_and_grad(F.cross_entropy, logits.to(device), target.to(device), **kw)
    assert torch.equal(loss, torch_loss) and torch.equal(grad, torch_grad)


@pytest.mark.parametrize("label_smoothing", [0.0, 0.1])
def test_matches_reference_odd_shape(label_smoothing, gen):
    """A flattened 3 × 423 × 3001 batch against the float64 formula."""
    logits, target = make_inputs(3 * 423, 3001, gen)
    kw = dict(reduction="none", label_smoothing=label_smoothing)
    loss, grad = value_and_grad(softmax_cross_entropy, logits, target, **kw)
    ref_loss, ref_grad = value_and_grad(cross_entropy_ref, logits.double(), target, **kw)
    torch.testing.assert_close(loss.double(), ref_loss, rtol=2e-6, atol=1e-6)
    torch.testing.assert_close(grad.double(), ref_grad, rtol=1e-4, atol=1e-8)


@pytest.mark.parametrize(
    "logits, target, kwargs, match",
    [
        (torch.zeros(3, 4), torch.tensor([0, 4, 1]), {}, "target 4 is outside"),
        (torch.zeros(3, 4), torch.tensor([0, 1]), {}, "target must be"),
        (torch.zeros(3, 4), torch.tensor([0.0, 1.0, 2.0]), {}, "integer"),
        (torch.zeros(3, 4), torch.tensor([0, 1, 2]), {"reduction": "avg"}, "'avg'"),
    ],
)
def test_bad_input(logits, target, kwargs, match):
    with pytest.raises(ValueError, match=match):
        softmax_cross_entropy(logits, target, **kwargs)
