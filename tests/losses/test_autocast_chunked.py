"""The chunked softmax head under CPU autocast: the reduction's 1/N row weight reaches the gradients
in float32, after the logit gradient's cast to the autocast dtype, so float16 (V100/T4) keeps the
weight gradient's small entries instead of flushing them to zero."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from softmax_zoo.losses import SoftmaxHead

N, D, C = 4096, 8, 8192  # p ≈ 1/C = 1.2e-4, p / N ≈ 3e-8: below half float16's smallest subnormal (6e-8)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_weight_gradient_keeps_its_small_entries_under_autocast(dtype):
    """Two SGD steps under autocast: the chunked head's weight gradient equals the float32 gradient of
    the same autocast-rounded inputs to 1% (float16 with 1/N inside the cast logit gradient: 11% off)."""
    gen = torch.Generator().manual_seed(0)
    head = SoftmaxHead(D, C, chunk_size=1024, bias=False)  # 4 chunks
    torch.nn.init.normal_(head.weight, std=0.05, generator=gen)  # near-uniform p
    opt = torch.optim.SGD(head.parameters(), lr=1.0)
    for _ in range(2):
        hidden, target = torch.randn(N, D, generator=gen), torch.randint(0, C, (N,), generator=gen)
        with torch.autocast("cpu", dtype=dtype):
            head(hidden, target).backward()
        w = head.weight.detach().to(dtype).float().requires_grad_()
        F.cross_entropy(hidden.to(dtype).float() @ w.T, target).backward()  # float32, from the rounded inputs
        error = (head.weight.grad - w.grad).norm() / w.grad.norm()
        assert error < 0.01, f"relative error of the weight gradient {error:.3g}"
        opt.step()
        opt.zero_grad()
