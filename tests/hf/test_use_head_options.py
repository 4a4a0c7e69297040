"""The loss options (``softmax_zoo.losses.machinery.options``) through ``use_head`` on a tiny Llama (causal).

The reference is the options' formulas by autograd (``reference.logits.options_ref``) on the
model's own float64 logits, shifted as transformers shifts them: the loss, every parameter's
gradient, the per-position lse and the token accuracy, in training (no logits) and in eval mode.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from transformers import Gemma2Config, Gemma2ForCausalLM

from softmax_zoo.hf import head_of, use_head
from softmax_zoo.losses.reference.logits import (
    cross_entropy_ref,
    entropy_and_target_ref,
    options_ref,
    sparse_cross_entropy_ref,
)

from .conftest import VOCAB, batch, make_model
from .test_use_head import assert_same_grads, grads, shifted

K = 5
VARIANTS = {  # name -> (head options, textbook per-row loss, support of the distribution)
    "softmax": ({}, lambda z, t: cross_entropy_ref(z, t, reduction="none"), lambda z: torch.ones_like(z, dtype=torch.bool)),
    "stable_softmax": ({}, lambda z, t: cross_entropy_ref(z, t, reduction="none"),
                       lambda z: torch.ones_like(z, dtype=torch.bool)),
    "sparse_softmax": ({"k": K}, lambda z, t: sparse_cross_entropy_ref(z, t, K, reduction="none"),
                       lambda z: z >= z.topk(K, dim=1).values[:, -1:]),
}
CLASS_WEIGHT = torch.linspace(0.5, 1.5, VOCAB, dtype=torch.float64)
OPTIONS = {"z_loss": 1e-2, "softcap": 3.0, "class_weight": CLASS_WEIGHT.tolist(), "return_lse": True, "return_token_accuracy": True}


def reference(model, ids, labels, variant):
    """(loss, lse (N,), token accuracy) of the options' formulas on the model's own shifted logits."""
    _, per_row, support = VARIANTS[variant]
    logits, target = shifted("llama", model(input_ids=ids).logits, labels)
    kw = {"z_loss": OPTIONS["z_loss"], "softcap": OPTIONS["softcap"], "class_weight": CLASS_WEIGHT}
    loss = options_ref(logits, target, per_row, support, **kw)
    z = OPTIONS["softcap"] * torch.tanh(logits.detach() / OPTIONS["softcap"])
    keep = target != -100
    lse = z.masked_fill(~support(z), float("-inf")).logsumexp(dim=1)
    accuracy = (z.argmax(dim=1) == target)[keep].double().mean()
    return loss, lse, keep, accuracy


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk_size", [None, 7])
def test_options_through_use_head_equal_their_formulas(variant, chunk_size):
    ref = make_model("llama")
    ids, labels = batch("llama")
    expected, lse, keep, accuracy = reference(ref, ids, labels, variant)
    model = use_head(copy.deepcopy(ref), variant, chunk_size=chunk_size, **VARIANTS[variant][0], **OPTIONS).train()
    out = model(input_ids=ids, labels=labels)
    assert out.logits is None
    torch.testing.assert_close(out.loss, expected, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, out.loss), grads(ref, expected))
    assert out.lse.shape == ids.shape  # (batch, positions): position t's lse, 0 where nothing is predicted
    torch.testing.assert_close(out.lse[:, :-1].reshape(-1)[keep], lse[keep], rtol=0, atol=1e-12)
    assert torch.all(out.lse[:, -1] == 0)
    torch.testing.assert_close(out.token_accuracy, accuracy)
    evaluated = model.eval()(input_ids=ids, labels=labels)  # the model's logits, the same loss and extras
    assert evaluated.logits.shape == (*ids.shape, VOCAB)
    torch.testing.assert_close(evaluated.loss, out.loss, rtol=0, atol=1e-12)
    torch.testing.assert_close(evaluated.lse, out.lse, rtol=0, atol=1e-12)
    torch.testing.assert_close(evaluated.token_accuracy, out.token_accuracy)


def test_use_head_refuses_what_it_sets_and_what_a_head_cannot_give():
    with pytest.raises(ValueError, match="shift is set by use_head"):
        use_head(make_model("llama"), "softmax", shift=True)
    with pytest.raises(ValueError, match="SampledSoftmaxHead does not support z_loss: "):
        use_head(make_model("llama"), "sampled_softmax", z_loss=1e-4)
    with pytest.raises(ValueError, match=f"class_weight must have num_classes = {VOCAB} entries"):
        use_head(make_model("llama"), "softmax", class_weight=[1.0, 2.0])


def test_sampled_softmax_takes_class_weights_through_use_head():
    ref = make_model("llama")
    ids, labels = batch("llama")
    model = use_head(copy.deepcopy(ref), "sampled_softmax", sampler="softmax", class_weight=CLASS_WEIGHT.tolist())
    logits, target = shifted("llama", ref(input_ids=ids).logits, labels)
    expected = torch.nn.functional.cross_entropy(logits, target, weight=CLASS_WEIGHT)
    # the exact softmax sampler makes every draw's sampled loss the full cross-entropy
    torch.testing.assert_close(model.train()(input_ids=ids, labels=labels).loss, expected, rtol=0, atol=1e-10)
    torch.testing.assert_close(model.eval()(input_ids=ids, labels=labels).loss, expected, rtol=0, atol=1e-12)


def gemma2() -> Gemma2ForCausalLM:
    """Gemma 2 caps its logits, 30·tanh(z / 30) (final_logit_softcapping)."""
    torch.manual_seed(0)
    cfg = Gemma2Config(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                       num_key_value_heads=1, head_dim=8, max_position_embeddings=32, final_logit_softcapping=3.0)
    return Gemma2ForCausalLM(cfg).double()


@pytest.mark.parametrize("chunk_size", [None, 7])
def test_gemma2_soft_capping_becomes_the_heads_softcap(chunk_size):
    ref = gemma2()
    ids, labels = batch("llama")
    logits, target = shifted("llama", ref(input_ids=ids).logits, labels)  # capped by the model
    expected = F.cross_entropy(logits, target)
    model = use_head(copy.deepcopy(ref), "softmax", chunk_size=chunk_size).train()
    assert head_of(model).options.softcap == 3.0
    loss = model(input_ids=ids, labels=labels).loss
    torch.testing.assert_close(loss, expected, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, loss), grads(ref, expected))
    torch.testing.assert_close(model.eval()(input_ids=ids, labels=labels).loss, expected, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="softcap=5.0 differs from the model's final_logit_softcapping=3.0"):
        use_head(gemma2(), "softmax", softcap=5.0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("chunk_size", [None, 7])
def test_temperature_entropy_and_target_log_prob_through_use_head(variant, chunk_size):
    """The per-token outputs at a temperature, (batch, positions) like the labels, 0 where nothing is
    predicted, against their formulas on the model's own float64 logits; the loss and its gradients too."""
    ref = make_model("llama")
    ids, labels = batch("llama")
    per_row, support = VARIANTS[variant][1], VARIANTS[variant][2]
    logits, target = shifted("llama", ref(input_ids=ids).logits, labels)
    expected = options_ref(logits, target, per_row, support, temperature=0.7)
    entropy, logp_t = entropy_and_target_ref(logits.detach(), target, support, temperature=0.7)
    model = use_head(copy.deepcopy(ref), variant, chunk_size=chunk_size, temperature=0.7, return_entropy=True,
                     return_target_log_prob=True, **VARIANTS[variant][0]).train()
    out = model(input_ids=ids, labels=labels)
    torch.testing.assert_close(out.loss, expected, rtol=0, atol=1e-12)
    assert_same_grads(grads(model, out.loss), grads(ref, expected))
    assert out.entropy.shape == out.target_log_prob.shape == ids.shape
    torch.testing.assert_close(out.entropy[:, :-1].reshape(-1), entropy, rtol=0, atol=1e-12)
    torch.testing.assert_close(out.target_log_prob[:, :-1].reshape(-1), logp_t, rtol=0, atol=1e-12)
    assert torch.all(out.entropy[:, -1] == 0) and torch.all(out.target_log_prob[:, -1] == 0)
    evaluated = model.eval()(input_ids=ids, labels=labels)
    torch.testing.assert_close(evaluated.loss, out.loss, rtol=0, atol=1e-12)
    torch.testing.assert_close(evaluated.entropy, out.entropy, rtol=0, atol=1e-12)
    torch.testing.assert_close(evaluated.target_log_prob, out.target_log_prob, rtol=0, atol=1e-12)
