"""An LSTM language model whose output layer is any loss head of :mod:`softmax_zoo.losses`.

Embedding -> dropout -> LSTM layers (optionally with a projection, LSTMP, Sak et al. 2014) ->
dropout -> head. The head can be tied to the input embedding (Press & Wolf 2017) when it is a
linear head and the LSTM's output size equals the embedding size. This is the model of Grave et al.
2017 ("Efficient softmax approximation for GPUs", one LSTM layer of 2048 units on One Billion Word)
and of Blanc & Rendle 2018 (an LSTM with 200 units on Penn Treebank), with the head swapped.

Truncated BPTT with the transformers ``Trainer``: the model is *stateful*. The stream
(:mod:`softmax_zoo.data.lm_stream`) puts segment k+1 of a stream in the same batch row as segment
k, and flags the rows where a stream starts (``reset``). The model keeps the last (h, c) of each
row, detached (gradients stop at the segment boundary), and zeroes the rows flagged ``reset``
before the next segment. Training and evaluation keep separate states, so an evaluation in the
middle of training does not disturb the training streams. Each checkpoint keeps the training state
(:class:`softmax_zoo.models.stream_lm.StreamLanguageModel`'s ``resume_state``), so a resumed run reads
on from the context an uninterrupted one has.
``torch.nn.DataParallel`` (several GPUs in one process) would lose the state on its replicas: use
one process per GPU (torchrun), as the Trainer does with DDP.

Precision under autocast (``train.precision=bf16|fp16``): on the CPU the embedding and the LSTM run in
float32 (the parameters' dtype) on every CPU alike, and only the head under autocast: its logits are in
autocast's dtype (each loss's docstring says in which dtype it computes on them). oneDNN has a bfloat16
LSTM only on CPUs with AVX512-BF16 or AMX, so a bfloat16 LSTM would make whether a run works, and its
numbers, depend on the CPU. On a GPU, CUDA autocast applies to the LSTM as to any module.
"""

from __future__ import annotations

import torch
from torch import nn

from .build import MakeHead
from .stream_lm import StreamLanguageModel


class LSTMLanguageModel(StreamLanguageModel):
    """LSTM LM; ``forward(input_ids, labels, reset) -> {"loss"}``, Trainer-compatible.

    Args:
        vocab_size: V, number of word ids (the head's number of classes).
        make_head: the output-layer hook ``(in_features, weight) -> OutputHead``; ``weight`` is the
            (V, E) input embedding when ``tie_weights`` else None (:func:`softmax_zoo.models.head_factory`).
        embedding_dim: E.
        hidden_size: LSTM units per layer.
        num_layers: stacked LSTM layers.
        proj_size: if > 0, each layer's output is projected to this size (LSTMP); the head then sees
            ``proj_size`` features instead of ``hidden_size``.
        dropout: on the embeddings, between LSTM layers and before the head.
        tie_weights: share the embedding with the head's projection.
        init_range: embeddings drawn from U(-init_range, init_range) (0.1 in Grave et al.'s code).
    """

    def __init__(
        self,
        vocab_size: int,
        make_head: MakeHead,
        *,
        embedding_dim: int,
        hidden_size: int,
        num_layers: int = 1,
        proj_size: int = 0,
        dropout: float = 0.0,
        tie_weights: bool = False,
        init_range: float = 0.1,
    ) -> None:
        super().__init__()
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
        for name, value in (("embedding_dim", embedding_dim), ("hidden_size", hidden_size), ("num_layers", num_layers)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if not 0 <= proj_size < hidden_size:
            raise ValueError(f"proj_size must be 0 (none) or in [1, hidden_size={hidden_size}), got {proj_size}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.vocab_size = vocab_size
        self.output_size = proj_size or hidden_size
        if tie_weights and self.output_size != embedding_dim:
            raise ValueError(
                f"tie_weights needs the LSTM output size ({self.output_size}) to equal "
                f"embedding_dim ({embedding_dim})"
            )
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        nn.init.uniform_(self.embedding.weight, -init_range, init_range)
        self.lstm = nn.LSTM(
            embedding_dim,
            hidden_size,
            num_layers=num_layers,
            dropout=dropout if num_layers > 1 else 0.0,
            batch_first=True,
            proj_size=proj_size,
        )
        self.drop = nn.Dropout(dropout)
        self.head = make_head(self.output_size, self.embedding.weight if tie_weights else None)
        if self.head.num_classes != vocab_size:
            raise ValueError(f"head has {self.head.num_classes} classes but the vocabulary {vocab_size} words")

    def initial_state(self, input_ids: torch.Tensor, reset: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The (h, c) to start this segment from: the carried one, zeroed at rows flagged ``reset``."""
        batch = input_ids.shape[0]
        layers = self.lstm.num_layers
        zeros_h = input_ids.new_zeros((layers, batch, self.output_size), dtype=self.embedding.weight.dtype)
        zeros_c = input_ids.new_zeros((layers, batch, self.lstm.hidden_size), dtype=self.embedding.weight.dtype)
        carried = self.carried.get(self.training)
        if carried is None or carried[0].shape != zeros_h.shape or carried[0].device != zeros_h.device:
            return zeros_h, zeros_c
        if reset is None:
            return carried
        keep = (~reset.bool()).to(zeros_h.dtype).view(1, batch, 1)  # (B,) -> (1, B, 1)
        return carried[0] * keep, carried[1] * keep

    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor | None = None,
        reset: torch.Tensor | None = None,
    ) -> dict[str, torch.Tensor]:
        """Run one BPTT segment.

        Args:
            input_ids: (B, T) word ids.
            labels: (B, T) next-word ids, ``IGNORE_INDEX`` where nothing is predicted (padding).
            reset: (B,) bool, rows where a new stream starts (zero state).

        Returns:
            ``{"loss": scalar}`` (mean over labelled positions) when ``labels`` is given, else
            ``{"hidden": (B, T, d)}``, the head's input.
        """
        state = self.initial_state(input_ids, reset)
        with torch.autocast("cpu", enabled=False):  # float32 on every CPU (module docstring: Precision)
            out, (h, c) = self.lstm(self.drop(self.embedding(input_ids)), state)  # out: (B, T, d)
        self.carried[self.training] = (h.detach(), c.detach())
        hidden = self.drop(out)
        return self.output(hidden, labels)
