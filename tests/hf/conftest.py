"""Tiny random transformers models built from configs (no downloads), one per architecture family.

Dropout is off so that training-mode forwards are deterministic and comparable."""

from __future__ import annotations

import pytest
import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
)

VOCAB = 97  # > the sparse head's k, small enough for float64 comparisons in milliseconds


def gpt2() -> GPT2LMHeadModel:  # lm_head tied to the input embeddings, no bias
    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=16, n_layer=2, n_head=2,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0))


def llama() -> LlamaForCausalLM:  # untied lm_head, final RMSNorm before it
    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    return LlamaForCausalLM(cfg)


def qwen2() -> Qwen2ForCausalLM:  # tied word embeddings
    cfg = Qwen2Config(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32,
                      tie_word_embeddings=True)
    return Qwen2ForCausalLM(cfg)


def bert() -> BertForMaskedLM:  # masked LM: head transform, then a decoder with a bias
    cfg = BertConfig(vocab_size=VOCAB, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                     num_attention_heads=2, max_position_embeddings=32,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertForMaskedLM(cfg)


MODELS = {"gpt2": gpt2, "llama": llama, "qwen2": qwen2, "bert": bert}


def make_model(name: str, dtype=torch.float64, seed: int = 0):
    torch.manual_seed(seed)
    model = MODELS[name]().to(dtype)
    with torch.no_grad():  # a random, non-zero bias so that tying it is tested
        bias = getattr(model.get_output_embeddings(), "bias", None)
        if bias is not None:
            bias.normal_()
    return model


def batch(name: str, batch_size: int = 2, length: int = 12, seed: int = 1):
    """input_ids (B, T) and labels (B, T): causal labels = the inputs with padding ignored;
    masked labels = the ids at ~30% of the positions, -100 elsewhere."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (batch_size, length), generator=gen)
    labels = ids.clone()
    if name == "bert":
        masked = torch.rand(batch_size, length, generator=gen) < 0.3
        masked[:, 0] = True
        labels[~masked] = -100
    else:
        labels[0, -3:] = -100  # padding at the end of the first row
    return ids, labels


@pytest.fixture(params=list(MODELS))
def arch(request) -> str:
    return request.param
