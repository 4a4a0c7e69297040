"""TextClassifier: every loss head trains through a tiny BERT encoder; pooling; frozen features."""

from __future__ import annotations

import pytest
import torch
from transformers import BertConfig, BertModel

from softmax_zoo import config
from softmax_zoo.losses import SoftmaxHead
from softmax_zoo.models import head_factory
from softmax_zoo.models.classifier import TextClassifier, freeze_lower, pool, pooled_features

HEADS = ["softmax", "stable_softmax", "sparse_softmax", "adaptive_softmax", "sampled_softmax"]
C, D, VOCAB = 24, 32, 50


def tiny_bert(seed: int = 0) -> BertModel:
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=D, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=16)
    return BertModel(cfg, add_pooling_layer=False)


def batch(gen: torch.Generator, n: int = 6, t: int = 9) -> dict[str, torch.Tensor]:
    ids = torch.randint(1, VOCAB, (n, t), generator=gen)
    mask = torch.ones(n, t, dtype=torch.long)
    mask[::2, t // 2:] = 0  # every other row is half padding
    return {"input_ids": ids * mask, "attention_mask": mask, "labels": torch.randint(0, C, (n,), generator=gen)}


@pytest.fixture(scope="module")
def loss_cfgs():
    return {h: config.compose([f"loss={h}"]).loss for h in HEADS}


@pytest.mark.parametrize("head_name", HEADS)
def test_every_head_trains_through_the_encoder(head_name, loss_cfgs, gen):
    counts = torch.arange(C, 0, -1)  # decreasing frequencies, as adaptive softmax expects
    make_head = head_factory(loss_cfgs[head_name], C, counts)
    model = TextClassifier(make_head, D, tiny_bert(), pooling="mean", mlp_layers=1)
    head = model.head
    b = batch(gen)
    out = model(**b)
    assert out["hidden"].shape == (6, D)
    assert torch.isfinite(out["loss"]) and out["loss"] > 0
    out["loss"].backward()
    layer0 = model.encoder.encoder.layer[0].attention.self.query.weight.grad
    assert layer0 is not None and layer0.abs().sum() > 0  # the loss reaches the lowest layer
    model.eval()
    loss, pred = model.loss_and_predictions(b["labels"], input_ids=b["input_ids"], attention_mask=b["attention_mask"])
    assert pred.shape == (6,) and pred.dtype == torch.long and torch.isfinite(loss)
    assert torch.equal(pred, head.predict(model.hidden(b["input_ids"], b["attention_mask"])))


def test_mean_pooling_ignores_padding(gen):
    states = torch.randn(2, 4, 3, generator=gen)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])
    pooled = pool(states, mask, "mean")
    torch.testing.assert_close(pooled[0], states[0, :2].mean(0))
    torch.testing.assert_close(pooled[1], states[1].mean(0))
    torch.testing.assert_close(pool(states, mask, "cls"), states[:, 0])
    with pytest.raises(ValueError, match="pooling must be one of \\('cls', 'mean'\\), got 'max'"):
        pool(states, mask, "max")


def test_padding_does_not_change_the_prediction(gen):
    """A row padded with extra [PAD] positions gets the same logits (mask respected end to end)."""
    model = TextClassifier(lambda d, weight=None: SoftmaxHead(d, C), D, tiny_bert(), pooling="mean").eval()
    ids = torch.randint(1, VOCAB, (1, 5), generator=gen)
    padded = torch.cat([ids, torch.zeros(1, 3, dtype=torch.long)], 1)
    mask = torch.cat([torch.ones(1, 5, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long)], 1)
    with torch.no_grad():
        a = model(input_ids=ids, attention_mask=torch.ones_like(ids))["hidden"]
        b = model(input_ids=padded, attention_mask=mask)["hidden"]
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_cached_features_give_the_same_outputs_as_the_frozen_encoder(gen):
    encoder = tiny_bert()
    head = SoftmaxHead(D, C)
    full = TextClassifier(lambda d, weight=None: head, D, encoder, pooling="mean", freeze_encoder=True).eval()
    b = batch(gen)
    feats = pooled_features(encoder, [b], "mean")
    cached = TextClassifier(lambda d, weight=None: head, D, None, pooling="mean").eval()
    with torch.no_grad():
        torch.testing.assert_close(full(**b)["loss"], cached(features=feats, labels=b["labels"])["loss"])
    assert all(not p.requires_grad for p in encoder.parameters())
    full.train()
    assert not encoder.training  # a frozen encoder keeps dropout off while the head trains
    with pytest.raises(ValueError, match="no encoder: pass precomputed features"):
        cached(input_ids=b["input_ids"])


def test_freeze_lower_layers():
    encoder = tiny_bert()
    freeze_lower(encoder, 1)
    assert not any(p.requires_grad for p in encoder.embeddings.parameters())
    assert not any(p.requires_grad for p in encoder.encoder.layer[0].parameters())
    assert all(p.requires_grad for p in encoder.encoder.layer[1].parameters())
    with pytest.raises(ValueError, match="freeze_layers must be in \\[0, 2\\], got 3"):
        freeze_lower(encoder, 3)
