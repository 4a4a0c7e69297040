"""The transformer LM: built from its config offline, causal, its carried context window, tying, every head end to end."""

from __future__ import annotations

import math

import pytest
import torch

from softmax_zoo import config, engine
from softmax_zoo.data.prepare.generated import NUM_WORDS
from softmax_zoo.losses import SoftmaxHead
from softmax_zoo.models import build_model, head_factory
from softmax_zoo.models.transformer_lm import TransformerLanguageModel

from .test_task import HEADS

V = 40
ARCHITECTURES = ("llama", "gpt2")
# The LM task's heads (test_task.HEADS) and the linear heads' other forms: stable, sparse, chunked.
EVERY_HEAD = {
    **HEADS,
    "stable": ["loss=stable_softmax"],
    "sparse": ["loss=sparse_softmax", "loss.k=5"],
    "softmax_chunked": ["loss=softmax", "loss.chunk_size=7"],
    "sparse_chunked": ["loss=sparse_softmax", "loss.k=5", "loss.chunk_size=7"],
    "gpt2_tied": ["loss=softmax", "model.architecture=gpt2", "model.tie_weights=true"],
}


def softmax_lm(architecture: str = "llama", **kwargs) -> TransformerLanguageModel:
    torch.manual_seed(0)
    args = {"hidden_size": 16, "num_layers": 2, "num_heads": 2, "max_positions": 32, **kwargs}
    return TransformerLanguageModel(V, lambda d, w: SoftmaxHead(d, V, weight=w), architecture=architecture, **args)


def test_builds_from_the_model_config_with_no_network(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = config.compose(["task=ptb", "model=transformer_lm", "scale=smoke"])
    model = build_model(cfg.model, head_factory(cfg.loss, V), vocab_size=V)
    assert isinstance(model, TransformerLanguageModel)
    assert model.body.config.hidden_size == cfg.model.hidden_size == model.head.in_features
    assert model.body.config.num_hidden_layers == cfg.model.num_layers


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_a_future_token_does_not_change_earlier_outputs(gen, architecture):
    model = softmax_lm(architecture).eval()
    x = torch.randint(0, V, (2, 10), generator=gen)
    changed = x.clone()
    changed[:, 6] = (x[:, 6] + 1) % V
    before = model(x)["hidden"]  # (2, 10, d)
    model.reset_state()  # read `changed` without `x` as its context
    after = model(changed)["hidden"]
    torch.testing.assert_close(model.log_probs(after[:, :6].flatten(0, 1)), model.log_probs(before[:, :6].flatten(0, 1)))
    assert not torch.allclose(after[:, 6:], before[:, 6:])


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_a_window_is_read_with_the_previous_one_as_context(gen, architecture):
    model = softmax_lm(architecture).eval()
    x = torch.randint(0, V, (3, 10), generator=gen)
    whole = model(x)["hidden"]  # (3, 10, d): one pass over both windows
    model.reset_state()
    model(x[:, :5], reset=torch.ones(3, dtype=torch.bool))
    second = model(x[:, 5:], reset=torch.zeros(3, dtype=torch.bool))["hidden"]
    torch.testing.assert_close(second, whole[:, 5:])


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_reset_rows_read_their_window_alone(gen, architecture):
    model = softmax_lm(architecture).eval()
    x = torch.randint(0, V, (2, 6), generator=gen)
    model(torch.randint(0, V, (2, 6), generator=gen))  # leaves a carried window
    out = model(x, reset=torch.tensor([True, False]))["hidden"]
    model.reset_state()
    alone = model(x)["hidden"]
    torch.testing.assert_close(out[0], alone[0])
    assert not torch.allclose(out[1], alone[1])
    assert torch.isfinite(out).all()


def test_training_and_evaluation_carry_separate_windows(gen):
    model = softmax_lm()
    x = torch.randint(0, V, (2, 6), generator=gen)
    model.train()(x)
    model.eval()
    assert False not in model.carried
    model(x)
    model.reset_eval_state()
    assert set(model.carried) == {True}


def test_tied_weights_are_one_tensor():
    model = softmax_lm(tie_weights=True)
    assert model.head.weight is model.body.get_input_embeddings().weight
    assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in softmax_lm().parameters())


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"embedding_dim": 8}, "embeds at its width"),
    ({"num_heads": 3}, "must divide hidden_size"),
    ({"architecture": "bert"}, "architecture must be one of"),
])
def test_bad_sizes_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        softmax_lm(**kwargs)


def test_two_windows_beyond_max_positions_are_refused(gen):
    model = softmax_lm(max_positions=12)
    model(torch.randint(0, V, (1, 8), generator=gen))
    with pytest.raises(ValueError, match="max_positions >= 16"):
        model(torch.randint(0, V, (1, 8), generator=gen))


@pytest.mark.parametrize("head", list(EVERY_HEAD))
def test_each_head_trains_at_smoke_scale(lm_corpus, tmp_path, head):
    cfg = config.compose([
        "task=ptb", "model=transformer_lm", "scale=smoke", f"task.data_dir={lm_corpus}", f"results_dir={tmp_path}",
        f"output_dir={tmp_path}/ckpt", *EVERY_HEAD[head],
    ])
    record = engine.run(cfg)
    m = record["metrics"]
    assert record["timing"]["global_steps"] == 2
    assert record["choices"]["model"] == "transformer_lm"
    assert all(math.isfinite(loss) for loss in record["train_loss"]["loss"])
    assert m["train/tokens_per_second"] > 0
    if head.startswith("sparse"):
        return  # top-k sparse softmax gives the words outside its top k zero probability: perplexity may be inf
    for p in ("val", "test"):
        assert 1.0 < m[f"{p}/perplexity"] < 3 * (NUM_WORDS + 2)
        assert m[f"{p}/loss"] == pytest.approx(math.log(m[f"{p}/perplexity"]))


def test_the_lm1b_page_shows_transformer_rows_beside_the_lstm_rows(tmp_path):
    """The transformer rows (earlier settings) sit beside the LSTM of the same settings, outside the claims ledger."""
    from softmax_zoo import records
    from softmax_zoo.reports import _lm1b_heads as lm1b_heads
    from softmax_zoo.reports import lm1b
    from softmax_zoo.reports._pages import read_claims

    from .test_reports import lm1b_records, record

    for r in lm1b_records():
        records.write_record(r, records.runs_dir(tmp_path))
    lm1b.build(tmp_path)
    lstm_claims = read_claims(tmp_path / "claims.md")
    for name, loss, ppl, tps, model in (("e_softmax", "softmax", 200.0, 50.0, None), ("e_adaptive", "adaptive_softmax", 220.0, 400.0, None),
                                        ("t_softmax", "softmax", 150.0, 50.0, "transformer_lm"),
                                        ("t_adaptive", "adaptive_softmax", 300.0, 400.0, "transformer_lm")):
        r = record(lm1b.EARLIER, name, loss, {"val/perplexity": ppl, "test/perplexity": ppl, "train/tokens_per_second": tps,
                                              "train/tokens": 1000.0}, model=model)
        if model:
            r["config"]["model"] = {"architecture": "llama", "hidden_size": 8, "num_layers": 1, "num_heads": 2, "intermediate_size": None}
            r["task_info"]["parameters"] = 1234
        records.write_record(r, records.runs_dir(tmp_path))
    data = lm1b.summarise(tmp_path)
    assert [r["head"].label for r in data["rows"]] == ["softmax", "adaptive", "sampled (quadratic, m=8)"]  # the LSTM's rows as before
    (section,) = data["sections"]
    assert (section["model"], section["earlier"], section["command"]) == ("transformer_lm", True, "make reproduce-lm1b-transformer")
    assert (section["seeds"], section["parameters"], section["head"]) == ([0], 1234, lm1b_heads.SOFTMAX)
    rows = {r["head"]: (r["test"], r["lstm_test"], r["run_tps"], r["speed"]) for r in section["rows"]}
    assert rows == {lm1b_heads.SOFTMAX: ([150.0], 200.0, 50.0, 1.0), lm1b_heads.ADAPTIVE: ([300.0], 220.0, 400.0, 8.0)}
    assert section["adaptive_ratio"] == 2.0
    lm1b.build(tmp_path)
    assert read_claims(tmp_path / "claims.md") == lstm_claims  # the claims are the LSTM's
