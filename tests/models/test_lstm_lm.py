"""The LSTM LM: carried state equals one long pass, resets, tying, sampled eval = full softmax."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from softmax_zoo.losses import SampledSoftmaxHead, SoftmaxHead, UniformSampler
from softmax_zoo.models import stream_lm
from softmax_zoo.models.lstm_lm import LSTMLanguageModel
from softmax_zoo.models.stream_lm import TokenRate

V = 40


def softmax_lm(**kwargs) -> LSTMLanguageModel:
    torch.manual_seed(0)
    args = {"embedding_dim": 8, "hidden_size": 12, "num_layers": 2, **kwargs}
    return LSTMLanguageModel(V, lambda d, w: SoftmaxHead(d, V, weight=w), **args)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_carried_state_equals_one_long_pass(gen):
    model = softmax_lm(proj_size=8).eval()
    x = torch.randint(0, V, (3, 12), generator=gen)
    whole = model(x)["hidden"]
    model.reset_state()
    first = model(x[:, :5], reset=torch.ones(3, dtype=torch.bool))["hidden"]
    second = model(x[:, 5:], reset=torch.zeros(3, dtype=torch.bool))["hidden"]
    torch.testing.assert_close(torch.cat([first, second], dim=1), whole)


def test_reset_rows_start_from_zero_state(gen):
    model = softmax_lm().eval()
    x = torch.randint(0, V, (2, 6), generator=gen)
    model(x)  # leaves a non-zero state
    out = model(x, reset=torch.tensor([True, False]))["hidden"]
    model.reset_state()
    fresh = model(x)["hidden"]
    torch.testing.assert_close(out[0], fresh[0])
    assert not torch.allclose(out[1], fresh[1])


def test_training_and_evaluation_keep_separate_states(gen):
    model = softmax_lm()
    x = torch.randint(0, V, (2, 6), generator=gen)
    model(x)
    train_state = model.carried[True]
    model.eval()
    model(torch.randint(0, V, (5, 3), generator=gen))
    assert model.carried[True] is train_state


def test_tied_head_shares_the_embedding():
    model = softmax_lm(embedding_dim=12, tie_weights=True)
    assert model.head.weight is model.embedding.weight
    with pytest.raises(ValueError, match=r"tie_weights needs the LSTM output size \(12\) to equal embedding_dim \(8\)"):
        softmax_lm(tie_weights=True)


@pytest.mark.parametrize("kwargs, message", [
    ({"hidden_size": 0}, "hidden_size must be >= 1, got 0"),
    ({"proj_size": 12}, r"proj_size must be 0 \(none\) or in \[1, hidden_size=12\), got 12"),
    ({"dropout": 1.0}, r"dropout must be in \[0, 1\), got 1.0"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        softmax_lm(**kwargs)


def test_sampled_head_eval_loss_equals_full_softmax_of_the_same_weights(gen):
    full = softmax_lm().eval()
    torch.manual_seed(0)
    sampled = LSTMLanguageModel(
        V,
        lambda d, w: SampledSoftmaxHead(d, V, sampler=UniformSampler(V), num_samples=5, bias=True),
        embedding_dim=8, hidden_size=12, num_layers=2,
    )
    sampled.load_state_dict(full.state_dict(), strict=False)
    sampled.head.weight.data.copy_(full.head.weight)
    sampled.head.bias.data.copy_(full.head.bias)
    sampled.eval()
    x = torch.randint(0, V, (4, 7), generator=gen)
    y = torch.randint(0, V, (4, 7), generator=gen)
    y[0, :3] = -100  # padding positions are ignored by both
    torch.testing.assert_close(sampled(x, labels=y)["loss"], full(x, labels=y)["loss"])


def test_token_rate_excludes_evaluation_time(monkeypatch):
    clock = iter([0.0, 1.0, 5.0])  # forwards at t=0, 1 and 5; 3 s of evaluation between the last two
    monkeypatch.setattr(stream_lm, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    rate = TokenRate()
    rate.exclude(100.0)  # before the first forward: nothing to take out
    rate.update(10)
    rate.update(10)
    rate.exclude(3.0)
    rate.update(7)
    assert rate.total_tokens == 27
    assert rate.tokens_per_second == pytest.approx(20 / (5.0 - 3.0))


def test_padding_only_batch_gives_a_zero_loss_with_zero_gradients(gen):
    model = softmax_lm()
    x = torch.randint(0, V, (2, 4), generator=gen)
    loss = model(x, labels=torch.full((2, 4), -100))["loss"]
    loss.backward()
    assert loss.item() == 0.0
    assert all(p.grad is not None and not p.grad.any() for p in model.parameters())


def test_the_simulated_cpu_refuses_a_bfloat16_lstm(cpu_without_bf16_lstm, gen):
    """The fixture the tests below run under fails a bfloat16 LSTM as an AVX2-only CPU does, and runs a float32 one."""
    lstm = torch.nn.LSTM(4, 4, batch_first=True)
    x = torch.randn(2, 3, 4, generator=gen)
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(RuntimeError, match="LSTM forward propagation primitive"):
        lstm(x)
    with pytest.raises(RuntimeError, match="LSTM forward propagation primitive"):
        lstm.to(torch.bfloat16)(x.to(torch.bfloat16))
    assert lstm.float()(x)[0].dtype == torch.float32


def test_under_cpu_bf16_autocast_the_lstm_is_float32_and_the_logits_bfloat16(cpu_without_bf16_lstm, gen):
    """On a CPU without a bfloat16 LSTM the model still trains under bf16 autocast: the LSTM's output is
    float32, equal to that of a float32 forward, and only the head's logits are bfloat16."""
    model = softmax_lm()
    x = torch.randint(0, V, (3, 6), generator=gen)
    plain = model(x)["hidden"]
    model.reset_state()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        hidden = model(x)["hidden"]
        logits = model.head.logits(hidden)
        model.reset_state()
        loss = model(x, labels=x)["loss"]
    torch.testing.assert_close(hidden, plain, rtol=0, atol=0)
    assert hidden.dtype == torch.float32 and logits.dtype == torch.bfloat16
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.lstm.parameters())


AVX2_ONLY = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}  # oneDNN and ATen kernels of an AVX2-only CPU
BF16_STEP = """
import torch
from softmax_zoo.losses import SoftmaxHead
from softmax_zoo.models.lstm_lm import LSTMLanguageModel
x = torch.randint(0, 40, (3, 6))
if {raw}:
    model = torch.nn.LSTM(8, 12, batch_first=True)
    run = lambda: model(torch.randn(3, 6, 8))[0].sum()
else:
    model = LSTMLanguageModel(40, lambda d, w: SoftmaxHead(d, 40, weight=w), embedding_dim=8, hidden_size=12, num_layers=2)
    run = lambda: model(x, labels=x)["loss"]
with torch.autocast("cpu", dtype=torch.bfloat16):
    loss = run()
loss.backward()
print("trained")
"""


def test_the_lm_trains_under_bf16_autocast_with_onednns_avx2_kernels():
    """The real oneDNN path of a CPU without AVX512-BF16/AMX: a plain LSTM under bf16 autocast fails
    there, the LM (whose LSTM runs in float32) takes a step."""
    import os
    import subprocess
    import sys

    def step(raw: bool) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", BF16_STEP.format(raw=raw)], env={**os.environ, **AVX2_ONLY},
                              capture_output=True, text=True, timeout=300)

    raw = step(True)
    if raw.returncode == 0:
        pytest.skip("this oneDNN runs a bfloat16 LSTM with AVX2 kernels too: nothing to show")
    assert "could not create a primitive descriptor for the LSTM" in raw.stderr
    model = step(False)
    assert model.returncode == 0 and "trained" in model.stdout, model.stderr[-2000:]
