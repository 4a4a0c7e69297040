"""use_head on models that scale their logits after the output layer, on tiny random configs in
float64: Cohere (logits · logit_scale) and Granite (logits / logits_scaling). The head applies the
scale as its temperature, so the loss and every gradient are the model's own; a temperature given
to use_head multiplies it; the eval-mode loss reads the model's (scaled) logits.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from transformers import CohereConfig, CohereForCausalLM, GraniteConfig, GraniteForCausalLM

from softmax_zoo.hf import CONFIG_KEY, head_of, use_head
from softmax_zoo.losses import sparse_softmax_cross_entropy

from .conftest import VOCAB, batch
from .test_use_head import assert_same_grads, grads, shifted

SIZES = dict(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
             num_key_value_heads=1, max_position_embeddings=32, pad_token_id=0, bos_token_id=0, eos_token_id=0)


def cohere() -> CohereForCausalLM:  # logits = lm_head(h) · logit_scale, tied embeddings
    return CohereForCausalLM(CohereConfig(**SIZES, logit_scale=0.3))


def granite() -> GraniteForCausalLM:  # logits = lm_head(h) / logits_scaling
    return GraniteForCausalLM(GraniteConfig(**SIZES, logits_scaling=4.0))


MODELS = {"cohere": (cohere, 1 / 0.3), "granite": (granite, 4.0)}  # the model, its temperature


def make(name):
    torch.manual_seed(0)
    return MODELS[name][0]().double()


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("chunk_size", [None, 7])
def test_the_head_trains_the_scaled_model_as_its_own_loss(name, chunk_size):
    ref = make(name)
    ids, labels = batch("llama")
    own = ref(input_ids=ids, labels=labels).loss  # the model's own loss (transformers computes it in float32)
    logits, target = shifted("llama", ref(input_ids=ids).logits, labels)  # its scaled float64 logits
    unscaled = ref.lm_head(ref.model(input_ids=ids).last_hidden_state)[:, :-1].reshape(-1, VOCAB)
    assert not torch.allclose(logits, unscaled)  # the scale is real
    expected = F.cross_entropy(logits, target)  # the model's loss, in float64
    torch.testing.assert_close(own.double(), expected, rtol=1e-6, atol=0)
    model = use_head(copy.deepcopy(ref), "softmax", chunk_size=chunk_size).train()
    assert head_of(model).options.temperature == pytest.approx(MODELS[name][1], rel=1e-15)
    out = model(input_ids=ids, labels=labels)
    assert out.logits is None
    torch.testing.assert_close(out.loss, expected, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, out.loss), grads(ref, expected))
    torch.testing.assert_close(model.eval()(input_ids=ids, labels=labels).loss, expected, rtol=0, atol=1e-12)
    assert CONFIG_KEY not in str(ref.config.to_dict()) and "temperature" not in getattr(model.config, CONFIG_KEY)["options"]
    restored = use_head(model)  # the recorded head, the model's scale applied again, not twice
    assert head_of(restored).options.temperature == pytest.approx(MODELS[name][1], rel=1e-15)


@pytest.mark.parametrize("name", MODELS)
def test_a_given_temperature_multiplies_the_models_scale(name):
    ref = make(name)
    ids, labels = batch("llama")
    logits, target = shifted("llama", ref(input_ids=ids).logits, labels)
    expected = sparse_softmax_cross_entropy(logits / 2.0, target, k=5)
    model = use_head(copy.deepcopy(ref), "sparse_softmax", k=5, temperature=2.0, chunk_size=7,
                     return_target_log_prob=True).train()
    out = model(input_ids=ids, labels=labels)
    torch.testing.assert_close(out.loss, expected, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, out.loss), grads(ref, expected))
    evaluated = model.eval()(input_ids=ids, labels=labels)
    torch.testing.assert_close(evaluated.loss, expected, rtol=0, atol=1e-12)
    torch.testing.assert_close(evaluated.target_log_prob, out.target_log_prob, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0, got 0"):
        use_head(make(name), "softmax", temperature=0)
