"""A transformer decoder language model (a ``transformers`` body) whose output layer is any loss head.

The body is ``LlamaModel`` (pre-norm, RoPE, SwiGLU; Touvron et al. 2023) or ``GPT2Model`` (learned
positions, GELU MLP; Radford et al. 2019), built from its config with random weights (nothing is
downloaded). It returns the final-norm hidden states; the head from ``make_head`` sits on top, as in
:class:`~softmax_zoo.models.lstm_lm.LSTMLanguageModel`, so every head of :mod:`softmax_zoo.losses`
works unchanged: linear heads (softmax, stable, sparse, chunked or not) take the (N, d) hidden states
and the labels, adaptive softmax applies its own projections to them, and the sampled heads sample in
training only and evaluate with the full softmax (``head.log_probs``). The head can be tied to the
body's input embedding (Press & Wolf 2017) when it is a linear head.

Segments: the LM task feeds BPTT windows of T tokens in stream order (segment k+1 of a stream in the
row of segment k, ``reset`` where a stream starts). The LSTM carries its (h, c) across windows; the
transformer has no recurrent state, so it carries the previous window's *tokens* instead and reads
each window with that window as context (recomputed: the body sees 2T positions, the loss and the
evaluation count only the last T). A token thus sees between T and 2T - 1 tokens of context, as in a
strided sliding-window evaluation. Rows flagged ``reset`` (and the first window) mask the carried
window out and start their positions at 0, which gives exactly the window read alone. Training and
evaluation carry separate windows, so an evaluation during training does not disturb the training
streams; checkpoints keep the training window (:meth:`StreamLanguageModel.resume_state`).
"""

from __future__ import annotations

import torch
from transformers import GPT2Config, GPT2Model, LlamaConfig, LlamaModel, PreTrainedModel

from .build import MakeHead
from .stream_lm import StreamLanguageModel

ARCHITECTURES = ("llama", "gpt2")


def decoder_body(
    architecture: str,
    vocab_size: int,
    *,
    hidden_size: int,
    num_layers: int,
    num_heads: int,
    intermediate_size: int,
    max_positions: int,
    dropout: float,
) -> PreTrainedModel:
    """A randomly initialised causal decoder without its LM head: (B, L) ids -> (B, L, hidden_size)."""
    if architecture == "llama":
        config = LlamaConfig(
            vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_layers,
            num_attention_heads=num_heads, num_key_value_heads=num_heads, intermediate_size=intermediate_size,
            max_position_embeddings=max_positions, attention_dropout=dropout, tie_word_embeddings=False,
        )
        config._attn_implementation = "eager"  # masked rows (a reset row's carried window) stay finite
        return LlamaModel(config)
    if architecture == "gpt2":
        config = GPT2Config(
            vocab_size=vocab_size, n_embd=hidden_size, n_layer=num_layers, n_head=num_heads, n_inner=intermediate_size,
            n_positions=max_positions, resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout,
        )
        config._attn_implementation = "eager"
        return GPT2Model(config)
    raise ValueError(f"architecture must be one of {', '.join(ARCHITECTURES)}, got {architecture!r}")


class TransformerLanguageModel(StreamLanguageModel):
    """Decoder-only LM; ``forward(input_ids, labels, reset) -> {"loss"}``, Trainer-compatible.

    Args:
        vocab_size: V, number of word ids (the head's number of classes).
        make_head: the output-layer hook ``(in_features, weight) -> OutputHead``; ``weight`` is the
            (V, d) input embedding when ``tie_weights`` else None (:func:`softmax_zoo.models.head_factory`).
        architecture: ``llama`` or ``gpt2`` (:func:`decoder_body`).
        hidden_size: d, the width of the body and the head's input.
        num_layers: decoder blocks.
        num_heads: attention heads (must divide ``hidden_size``).
        intermediate_size: the MLP's inner width; None: 4 d.
        max_positions: the longest input (GPT-2's position table); must hold two windows (2T).
        dropout: attention dropout (and, for GPT-2, embedding and residual dropout).
        tie_weights: share the input embedding with the head's projection.
        embedding_dim: the LM family's embedding size (the `scales:` block of configs/families/lm.yaml sets it for
            every LM): a transformer embeds at its width, so it must be None or ``hidden_size``.
    """

    def __init__(
        self,
        vocab_size: int,
        make_head: MakeHead,
        *,
        architecture: str = "llama",
        hidden_size: int,
        num_layers: int,
        num_heads: int,
        intermediate_size: int | None = None,
        max_positions: int = 256,
        dropout: float = 0.0,
        tie_weights: bool = False,
        embedding_dim: int | None = None,
    ) -> None:
        super().__init__()
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        for name, value in (("hidden_size", hidden_size), ("num_layers", num_layers), ("num_heads", num_heads)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if hidden_size % num_heads:
            raise ValueError(f"num_heads ({num_heads}) must divide hidden_size ({hidden_size})")
        if embedding_dim not in (None, hidden_size):
            raise ValueError(
                f"a transformer embeds at its width: embedding_dim ({embedding_dim}) must equal hidden_size ({hidden_size})"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.vocab_size = vocab_size
        self.max_positions = max_positions
        self.body = decoder_body(
            architecture, vocab_size, hidden_size=hidden_size, num_layers=num_layers, num_heads=num_heads,
            intermediate_size=intermediate_size or 4 * hidden_size, max_positions=max_positions, dropout=dropout,
        )
        embedding = self.body.get_input_embeddings()
        self.head = make_head(hidden_size, embedding.weight if tie_weights else None)
        if self.head.num_classes != vocab_size:
            raise ValueError(f"head has {self.head.num_classes} classes but the vocabulary {vocab_size} words")

    def with_context(self, input_ids: torch.Tensor, reset: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) ids -> (B, C + T) ids with the carried window in front (C = T, or 0 without one) and its (B, C + T) mask.

        The mask is 0 on the carried window of rows flagged ``reset``.
        """
        carried = self.carried.get(self.training)
        if carried is None or carried.shape != input_ids.shape or carried.device != input_ids.device:
            return input_ids, torch.ones_like(input_ids)
        keep = torch.ones_like(carried) if reset is None else (~reset.bool()).long()[:, None].expand_as(carried)
        return torch.cat([carried, input_ids], dim=1), torch.cat([keep, torch.ones_like(input_ids)], dim=1)

    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        reset: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Run one BPTT segment with the previous segment of its stream as context.

        Args:
            input_ids: (B, T) word ids.
            labels: (B, T) next-word ids, ``IGNORE_INDEX`` where nothing is predicted (padding).
            reset: (B,) bool, rows where a new stream starts (no context).

        Returns:
            ``{"loss": scalar}`` (mean over labelled positions) when ``labels`` is given, else
            ``{"hidden": (B, T, d)}``, the head's input.
        """
        window = input_ids.shape[1]
        ids, mask = self.with_context(input_ids, reset)  # (B, L), L = T or 2T
        if ids.shape[1] > self.max_positions:
            raise ValueError(
                f"two windows of {window} tokens need max_positions >= {ids.shape[1]}, got {self.max_positions}"
            )
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)  # a masked-out context leaves the window at 0..T-1
        out = self.body(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=False)
        self.carried[self.training] = input_ids.detach()
        hidden = out.last_hidden_state[:, -window:]  # (B, T, d)
        return self.output(hidden, labels)
