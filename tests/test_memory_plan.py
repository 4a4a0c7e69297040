"""The memory plan before training: parameters, gradients, optimiser state and the heads' buffers
against a free-memory figure, a run that cannot fit refused with every part named (on a CPU the
figure is mocked), and the same sizes as the heads' own checks at their first forward."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from softmax_zoo import engine, memory_plan
from softmax_zoo.losses import AdaptiveSoftmaxHead, QuadraticKernelSampler, SampledSoftmaxHead, SoftmaxHead, UniformSampler
from softmax_zoo.losses.machinery import memory
from softmax_zoo.losses.methods.sampled import candidate_logits

GIB = 2**30


class Body(nn.Module):
    def __init__(self, head: nn.Module, d: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, d)
        self.head = head


def test_every_part_is_counted():
    """d = 16, C = 1,000: 1,600 + 16,000 + 1,000 parameters; Adagrad keeps one state per parameter,
    bf16 autocast a 2-byte copy; the softmax head's (64, C) logits x LOGIT_BUFFERS."""
    model = Body(SoftmaxHead(16, 1000))
    found = memory_plan.plan(model, rows=64, optim="adagrad", precision="bf16")
    n = 1600 + 16_000 + 1000
    assert found.parts == {
        "parameters": 4 * n, "gradients": 4 * n, "optimiser state (adagrad: 1 per parameter)": 4 * n,
        "bf16 weight copies": 2 * n, f"head head: (64, 1,000) logits x {memory.LOGIT_BUFFERS}": 4 * memory.LOGIT_BUFFERS * 64 * 1000,
    }
    assert found.head_bytes() == memory.logits_bytes(64, 1000) and found.total == 14 * n + found.head_bytes()
    frozen = Body(SoftmaxHead(16, 1000))
    frozen.embed.requires_grad_(False)
    adamw = memory_plan.plan(frozen, rows=64, optim="adamw_torch", precision="fp32").parts
    assert adamw["gradients"] == 4 * (n - 1600) and adamw["optimiser state (adamw_torch: 2 per parameter)"] == 8 * (n - 1600)
    assert "fp32 weight copies" not in adamw


def test_an_unknown_optimiser_is_named():
    with pytest.raises(ValueError, match=r"train.optim='lion'"):
        memory_plan.plan(Body(SoftmaxHead(16, 100)), rows=4, optim="lion", precision="fp32")


def test_a_run_that_does_not_fit_is_refused_with_its_numbers():
    """lm1b at paper scale on meta (no allocation): the quadratic tree (263.4 GiB) cannot fit 141 GB; the
    message names it, the parameters and the free memory. The uniform arm fits."""
    free = 141 * 10**9
    with torch.device("meta"):
        quadratic = Body(SampledSoftmaxHead(2048, 793_471, sampler=QuadraticKernelSampler(), num_samples=8192, bias=True), d=2048)
        uniform = Body(SampledSoftmaxHead(2048, 793_471, sampler=UniformSampler(793_471), num_samples=8192, bias=True), d=2048)
    found = memory_plan.plan(quadratic, rows=2560, optim="adagrad", precision="bf16", free=free)
    with pytest.raises(torch.OutOfMemoryError) as refused:
        memory_plan.check(found, free, "cuda:0")
    message = str(refused.value)
    assert "has 131.3 GiB free" in message and "the kernel tree for C=793,471, d=2,048 263.4 GiB" in message
    assert "parameters 6.1 GiB" in message and "(2,560, 793,471) candidate logits 7.6 GiB" in message
    fits = memory_plan.plan(uniform, rows=2560, optim="adagrad", precision="bf16", free=free)
    memory_plan.check(fits, free, "cuda:0")  # no error
    assert fits.total / GIB == pytest.approx(6.1 * 3 + 3.0 + 7.6, abs=0.2)


def test_the_plan_and_the_heads_own_check_name_the_same_buffer(monkeypatch):
    """The sampled head's candidate logits: the size its first forward refuses is the plan's."""
    n, m, d, classes = 50, 3, 8, 200  # U = all 200 classes at most: the shared GEMM
    head = SampledSoftmaxHead(d, classes, sampler=UniformSampler(classes), num_samples=m)
    (planned,) = [v for k, v in head.step_buffers(n).items() if "candidate logits" in k]
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1)
    cand = torch.arange(n * (1 + m)).remainder(classes).view(n, 1 + m)
    with pytest.raises(torch.OutOfMemoryError, match=rf"\(50, 200\) candidate logits needs {planned / GIB:,.1f} GiB"):
        candidate_logits(torch.randn(n, d), torch.randn(classes, d), cand)
    assert planned == 4 * n * classes


def test_chunked_and_adaptive_heads_plan_their_chunk():
    chunked = SoftmaxHead(16, 1000, chunk_size=10).step_buffers(64)
    assert list(chunked.values()) == [memory.logits_bytes(10, 1000)]
    auto = SoftmaxHead(16, 793_471, chunk_size="auto").step_buffers(8192, free=141 * 10**9)
    assert list(auto) == [f"one chunk's (1,171, 793,471) logits x {memory.LOGIT_BUFFERS}"]
    adaptive = AdaptiveSoftmaxHead(16, 1000, cutoffs=[100, 400]).step_buffers(64)
    assert adaptive[f"one chunk's (64, 600) logits x {memory.LOGIT_BUFFERS}"] == memory.logits_bytes(64, 600)


UNILM = ["task=gigaword", "model=unilm_tiny", "model.max_pred=6"]


@pytest.mark.parametrize(("overrides", "rows"), [(["task=ptb"], 4 * 5), (["task=synthetic"], 4), (UNILM, 4 * 6)])
def test_head_rows_per_family(overrides, rows):
    """A language model's batch x bptt (smoke: 5), a UniLM's batch x max_pred, a classifier's batch."""
    from softmax_zoo.config import compose

    cfg = compose([*overrides, "scale=smoke", "train.batch_size=4"])
    assert memory_plan.head_rows(cfg) == rows


def test_the_engine_refuses_before_training(tmp_path, monkeypatch):
    """A smoke run with a mocked free-memory figure of 1,000 bytes: refused before the Trainer starts, nothing written."""
    from softmax_zoo.config import compose

    cfg = compose(["scale=smoke", f"results_dir={tmp_path / 'r'}", f"output_dir={tmp_path / 'c'}"])
    monkeypatch.setenv("WANDB_MODE", "disabled")
    monkeypatch.setattr(memory, "free_bytes", lambda device: 1000)
    monkeypatch.setattr(engine, "make_trainer", lambda *a, **k: pytest.fail("the Trainer was built"))
    with pytest.raises(torch.OutOfMemoryError, match=r"has 0.0 GiB free .* parameters 0.0 GiB, gradients .* head \S+: "):
        engine.run(cfg)
    assert not (tmp_path / "c").exists() and not (tmp_path / "r").exists()
