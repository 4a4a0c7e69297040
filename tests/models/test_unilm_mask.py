"""The seq2seq attention mask, checked by perturbing inputs and watching which outputs move."""

import pytest
import torch
from transformers import BertConfig, GPT2Config, GPT2LMHeadModel

from softmax_zoo.models.unilm import load_bert, seq2seq_attention_mask

from .tiny_unilm import CLS, MASK, SEP, tiny_unilm

SRC = [CLS, 4, 5, 6, SEP]  # positions 0-4, segment 0
TGT = [7, 4, 5, SEP]  # positions 5-8, segment 1


def _encode(model, tgt, src=SRC, pad=0):
    ids = torch.tensor([src + tgt + [0] * pad])
    seg = torch.tensor([[0] * len(src) + [1] * len(tgt) + [0] * pad])
    att = torch.tensor([[1] * (len(src) + len(tgt)) + [0] * pad])
    return model.encode(ids, seg, att)[0]


def test_mask_pattern_by_hand():
    seg = torch.tensor([[0, 0, 0, 1, 1, 0]])
    att = torch.tensor([[1, 1, 1, 1, 1, 0]])
    expected = torch.tensor(
        [
            [1, 1, 1, 0, 0, 0],
            [1, 1, 1, 0, 0, 0],
            [1, 1, 1, 0, 0, 0],
            [1, 1, 1, 1, 0, 0],
            [1, 1, 1, 1, 1, 0],
            [1, 1, 1, 0, 0, 0],  # a padding query sees the source only
        ],
        dtype=torch.bool,
    )
    assert torch.equal(seq2seq_attention_mask(seg, att)[0], expected)


@torch.no_grad()
def test_later_target_token_does_not_change_earlier_positions():
    model = tiny_unilm()
    base = _encode(model, TGT)
    for j in range(len(TGT)):  # change target token j
        changed = list(TGT)
        changed[j] = MASK if TGT[j] != MASK else 4
        out = _encode(model, changed)
        cut = len(SRC) + j
        torch.testing.assert_close(out[:cut], base[:cut], rtol=0, atol=1e-5)  # source + earlier targets
        assert (out[cut:] - base[cut:]).abs().amax(-1).min() > 1e-4  # position j and later do move


@torch.no_grad()
def test_source_sees_whole_source_and_no_target():
    model = tiny_unilm()
    base = _encode(model, TGT)
    other = _encode(model, [5, 5, 5, 5])
    torch.testing.assert_close(other[: len(SRC)], base[: len(SRC)], rtol=0, atol=1e-5)
    changed_src = _encode(model, TGT, src=[CLS, 4, 5, 7, SEP])  # the last source word changes
    assert (changed_src - base).abs().amax(-1).min() > 1e-4  # every position, first source included


@torch.no_grad()
def test_padding_changes_nothing():
    model = tiny_unilm()
    torch.testing.assert_close(_encode(model, TGT, pad=3)[: len(SRC) + len(TGT)], _encode(model, TGT), rtol=0, atol=1e-5)


def test_loss_only_on_masked_positions_and_backprops_to_tied_embeddings():
    model = tiny_unilm().train()
    ids = torch.tensor([SRC + [MASK, 4, MASK, SEP]])
    seg = torch.tensor([[0] * 5 + [1] * 4])
    labels = torch.full_like(ids, -100)
    labels[0, 5], labels[0, 7] = 7, 5
    loss = model(ids, seg, torch.ones_like(ids), labels=labels)["loss"]
    logp = model.log_probs(model.encode(ids, seg, torch.ones_like(ids))[0])
    torch.testing.assert_close(loss, -(logp[5, 7] + logp[7, 5]) / 2)
    loss.backward()
    assert model.head.weight is model.encoder.embeddings.word_embeddings.weight
    assert model.head.weight.grad is not None and model.head.weight.grad.abs().sum() > 0


def test_non_bert_checkpoint_names_what_is_missing(tmp_path):
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16, n_positions=16)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="not BERT-compatible.*intermediate_size.*type_vocab_size"):
        load_bert(str(tmp_path))


def test_missing_encoder_weights_are_named_and_missing_transform_starts_fresh(tmp_path):
    from transformers import BertModel

    config = BertConfig(vocab_size=16, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    BertModel(config, add_pooling_layer=False).save_pretrained(tmp_path / "ok")
    loaded = load_bert(str(tmp_path / "ok"))
    assert loaded.fresh == [
        "cls.predictions.transform.LayerNorm.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.dense.weight",
    ]
    assert loaded.bias is None
    model = BertModel(config, add_pooling_layer=False)
    state = {k: v for k, v in model.state_dict().items() if "layer.0.attention.self.query" not in k}
    model.save_pretrained(tmp_path / "broken", state_dict=state)
    with pytest.raises(ValueError, match="lacks the weights .*attention.self.query.bias"):
        load_bert(str(tmp_path / "broken"))
    with pytest.raises(ValueError, match="no loadable config.json"):
        load_bert(str(tmp_path / "nothing_here"))
