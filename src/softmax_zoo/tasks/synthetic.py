"""A generated classification task for tests and smoke runs (no files, seconds on a CPU).

Each class c has a Gaussian centre mu_c ~ N(0, I_dim) * separation; an example of class c is
mu_c + N(0, I_dim) * noise. Class frequencies are Zipf-skewed (p_c ∝ 1 / (c + 1)^zipf), and
classes are numbered by decreasing training frequency, so that adaptive-softmax cutoffs and the
unigram sampler have real counts to work with. The model is an MLP encoder and any output head
from ``cfg.loss`` (:func:`softmax_zoo.models.build_head`). Everything is drawn from
``task.data_seed``, so the data do not change with the training seed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from omegaconf import DictConfig
from torch import nn
from torch.utils.data import DataLoader, Dataset

from ..metrics import macro_f1, micro_f1
from ..models import build_head
from .base import Task, split_prefix


class TensorPairs(Dataset):
    """Examples ``{"features": (dim,), "labels": ()}`` from two aligned tensors."""

    def __init__(self, features: torch.Tensor, labels: torch.Tensor) -> None:
        self.features = features
        self.labels = labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"features": self.features[i], "labels": self.labels[i]}


def collate(examples: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """List of examples -> ``{"features": (B, dim), "labels": (B,)}``."""
    return {key: torch.stack([ex[key] for ex in examples]) for key in examples[0]}


class MLPClassifier(nn.Module):
    """MLP encoder + output head.

    Args:
        dim: input features.
        hidden: width of each hidden layer (the head's d).
        layers: number of hidden layers (>= 1).
        loss_cfg: the ``loss`` config of the head.
        num_classes: C.
        dropout: dropout after each hidden layer.
        tie_weights: keep a (C, hidden) class-embedding table and tie the head's projection to
            it, as a language model ties its output layer to its input embeddings; here it
            exercises tied-weight checkpointing (the same tensor under two state_dict names).
        class_counts: (C,) counts for ``auto`` head settings.
    """

    def __init__(
        self,
        dim: int,
        hidden: int,
        layers: int,
        loss_cfg: DictConfig,
        num_classes: int,
        *,
        dropout: float = 0.0,
        tie_weights: bool = False,
        class_counts: torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        if layers < 1:
            raise ValueError(f"layers must be >= 1, got {layers}")
        blocks: list[nn.Module] = []
        for i in range(layers):
            blocks += [nn.Linear(dim if i == 0 else hidden, hidden), nn.GELU(), nn.Dropout(dropout)]
        self.encoder = nn.Sequential(*blocks)
        self.class_embed = nn.Embedding(num_classes, hidden) if tie_weights else None
        weight = self.class_embed.weight if tie_weights else None
        self.head = build_head(loss_cfg, hidden, num_classes, weight=weight, class_counts=class_counts)

    def forward(self, features: torch.Tensor, labels: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """features (B, dim), labels (B,) -> {"hidden": (B, hidden), "loss": scalar when labels given}."""
        hidden = self.encoder(features)
        out = {"hidden": hidden}
        if labels is not None:
            out["loss"] = self.head(hidden, labels)
        return out


def make_split(
    centres: torch.Tensor, probs: torch.Tensor, n: int, noise: float, generator: torch.Generator
) -> TensorPairs:
    """n examples: labels ~ probs, features = centres[label] + noise * N(0, I)."""
    labels = torch.multinomial(probs, n, replacement=True, generator=generator)
    features = centres[labels] + noise * torch.randn(n, centres.shape[1], generator=generator)
    return TensorPairs(features, labels)


@torch.no_grad()
def evaluate(model: nn.Module, split: str, dataset: TensorPairs, batch_size: int = 256) -> dict[str, float]:
    """micro-F1 (= accuracy), macro-F1 and the mean NLL of the head's inference distribution."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    preds, golds, nll = [], [], 0.0
    for batch in DataLoader(dataset, batch_size=batch_size, collate_fn=collate):
        hidden = model(batch["features"].to(device))["hidden"]
        logp = model.head.log_probs(hidden)  # (B, C)
        gold = batch["labels"].to(device)
        nll -= logp.gather(1, gold[:, None]).sum().item()
        preds.append(logp.argmax(-1).cpu())
        golds.append(gold.cpu())
    model.train(was_training)
    pred, gold = torch.cat(preds), torch.cat(golds)
    p = split_prefix(split)
    return {
        f"{p}/micro_f1": micro_f1(pred, gold),
        f"{p}/macro_f1": macro_f1(pred, gold, model.head.num_classes),
        f"{p}/nll": nll / len(gold),
    }


def build_task(cfg: DictConfig) -> Task:
    """The Gaussian-cluster task of ``cfg.task`` with the MLP of ``cfg.model`` and the head of ``cfg.loss``."""
    t, m = cfg.task, cfg.model
    g = torch.Generator().manual_seed(t.data_seed)
    centres = torch.randn(t.num_classes, t.dim, generator=g) * t.separation  # (C, dim)
    probs = 1.0 / torch.arange(1, t.num_classes + 1, dtype=torch.float64) ** t.zipf  # (C,) Zipf
    probs = probs / probs.sum()
    splits = {name: make_split(centres, probs, t[f"n_{name}"], t.noise, g) for name in ("train", "validation", "test")}
    # Renumber the classes by decreasing training frequency (ties by id), as the data preparers
    # do: adaptive softmax and its cutoffs need class 0 to be the most frequent.
    order = torch.sort(-torch.bincount(splits["train"].labels, minlength=t.num_classes), stable=True).indices
    new_id = torch.empty_like(order)
    new_id[order] = torch.arange(t.num_classes)
    for split in splits.values():
        split.labels = new_id[split.labels]
    counts = torch.bincount(splits["train"].labels, minlength=t.num_classes)
    model = MLPClassifier(
        t.dim,
        m.hidden,
        m.layers,
        cfg.loss,
        t.num_classes,
        dropout=m.dropout,
        tie_weights=m.tie_weights,
        class_counts=counts,
    )
    digest = hashlib.sha256(
        b"".join(s.features.numpy().tobytes() + s.labels.numpy().tobytes() for s in splits.values())
    )
    meta: dict[str, Any] = {
        "source": "generated (softmax_zoo.tasks.synthetic)",
        "counts": {name: len(s) for name, s in splits.items()},
        "class_counts_train": counts.tolist(),
        "sha256": {"generated": digest.hexdigest()},
    }
    return Task(
        model=model,
        train_dataset=splits["train"],
        eval_datasets={"validation": splits["validation"], "test": splits["test"]},
        collator=collate,
        evaluate=evaluate,
        data_meta=meta,
    )
