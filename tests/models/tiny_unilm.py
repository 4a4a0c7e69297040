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


# config.json of a UniLM v1 hub checkpoint (microsoft/unilm-base-cased), shrunk: no model_type,
# 6 segment embeddings, the layer-norm epsilon under UniLM's name.
UNILM_V1_CONFIG = {
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 16,
    "initializer_range": 0.02,
    "intermediate_size": 32,
    "layer_norm_epsilon": 1e-5,
    "max_position_embeddings": 128,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "type_vocab_size": 6,
}


def write_unilm_v1_checkpoint(folder, tokens: list[str], seed: int = 0) -> dict[str, torch.Tensor]:
    """A random checkpoint in the UniLM v1 hub layout: config.json, pytorch_model.bin, vocab.txt only.

    The weights are a ``BertForPreTraining`` state dict (BERT names, ``cls.predictions.*`` and the
    NSP head included), as UniLM v1 ships them. Returns that state dict.
    """
    import json

    from transformers import BertForPreTraining

    folder.mkdir(parents=True)
    config = {**UNILM_V1_CONFIG, "vocab_size": len(tokens)}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in tokens))
    torch.manual_seed(seed)
    fields = {k: v for k, v in config.items() if k != "layer_norm_epsilon"}
    model = BertForPreTraining(BertConfig(**fields, layer_norm_eps=config["layer_norm_epsilon"]))
    with torch.no_grad():
        model.cls.predictions.bias.normal_()  # not zeros, so that a copied bias is visible
    state = {k: v.clone() for k, v in model.state_dict().items()}
    torch.save(state, folder / "pytorch_model.bin")
    return state
