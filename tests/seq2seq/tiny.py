"""A tiny randomly initialised UniLM shared by the seq2seq tests (vocabulary of 8 ids)."""

from __future__ import annotations

import torch
from transformers import BertConfig

from softmax_zoo.losses import SoftmaxHead
from softmax_zoo.models.unilm import UniLM, random_bert

PAD, CLS, SEP, MASK = 0, 1, 2, 3
WORDS = (4, 5, 6, 7)


def tiny_unilm(seed: int = 0, vocab_size: int = 8, hidden: int = 16) -> UniLM:
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=2 * hidden, max_position_embeddings=64, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    bert = random_bert(config)
    with torch.no_grad():  # a larger initial scale than BERT's 0.02 so that distributions are not flat
        for p in bert.encoder.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.5)
    model = UniLM(bert, lambda d, weight=None: SoftmaxHead(d, vocab_size, weight=weight))
    return model.eval()


def step_log_probs(model: UniLM, source: list[int], prefix: list[int]) -> torch.Tensor:
    """Reference without a cache: log p(y_t | source, prefix) by running the whole sequence."""
    src = [CLS, *source, SEP]
    ids = torch.tensor([src + prefix + [MASK]])
    seg = torch.tensor([[0] * len(src) + [1] * (len(prefix) + 1)])
    hidden = model.encode(ids, seg, torch.ones_like(ids))
    return model.log_probs(hidden[0, -1])
