"""An MLP encoder + any output head: the model of the generated classification task (tests, smoke runs)."""

from __future__ import annotations

import torch
from torch import nn

from .build import MakeHead


class MLPClassifier(nn.Module):
    """[Linear-GELU-dropout] x layers -> head.

    Args:
        make_head: the output-layer hook, ``(in_features, weight=None) -> OutputHead``.
        in_features: input features (the task's ``dim``).
        num_classes: C (for the tied class-embedding table).
        hidden: width of each hidden layer (the head's d).
        layers: number of hidden layers (>= 1).
        dropout: dropout after each hidden layer.
        tie_weights: keep a (C, hidden) class-embedding table and tie the head's projection to
            it, as a language model ties its output layer to its input embeddings; here it
            exercises tied-weight checkpointing (the same tensor under two state_dict names).
    """

    def __init__(
        self,
        make_head: MakeHead,
        in_features: int,
        num_classes: int,
        *,
        hidden: int,
        layers: int,
        dropout: float = 0.0,
        tie_weights: bool = False,
    ) -> None:
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        blocks: list[nn.Module] = []
        for i in range(layers):
            blocks += [nn.Linear(in_features if i == 0 else hidden, hidden), nn.GELU(), nn.Dropout(dropout)]
        self.encoder = nn.Sequential(*blocks)
        self.class_embed = nn.Embedding(num_classes, hidden) if tie_weights else None
        self.head = make_head(hidden, self.class_embed.weight if tie_weights else None)

    @property
    def num_classes(self) -> int:
        """C, the head's number of classes."""
        return self.head.num_classes

    def forward(self, features: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """features (B, dim), labels (B,) -> {"hidden": (B, hidden), "loss": scalar when labels given}."""
        hidden = self.encoder(features)
        out = {"hidden": hidden}
        if labels is not None:
            out["loss"] = self.head(hidden, labels)
        return out

    def log_probs(self, features: torch.Tensor) -> torch.Tensor:
        """features (B, dim) -> (B, C) log-probabilities of the head's inference distribution."""
        return self.head.log_probs(self.encoder(features))
