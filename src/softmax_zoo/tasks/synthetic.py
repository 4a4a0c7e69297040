"""A generated classification task for tests and smoke runs (no files, seconds on a CPU).

Each class c has a Gaussian centre mu_c ~ N(0, I_dim) * separation; an example of class c is
mu_c + N(0, I_dim) * noise. Class frequencies are Zipf-skewed (p_c ∝ 1 / (c + 1)^zipf), and
classes are numbered by decreasing training frequency, so that adaptive-softmax cutoffs and the
unigram sampler have real counts to work with. The model is ``cfg.model`` (by default the MLP of
:mod:`softmax_zoo.models.mlp`) with the output head of ``cfg.loss``. Everything is drawn from
``task.data_seed``, so the data do not change with the training seed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch
from omegaconf import DictConfig
from torch.utils.data import DataLoader, Dataset

from .. import progress
from ..metrics import macro_f1, micro_f1
from ..models import build_model, evaluating, head_factory
from ..models.contracts import SYNTHETIC
from ..models.mlp import MLPClassifier
from .base import Batches, Evaluation, Task, split_prefix


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


def make_split(
    centres: torch.Tensor, probs: torch.Tensor, n: int, noise: float, generator: torch.Generator
) -> TensorPairs:
    """n examples: labels ~ probs, features = centres[label] + noise * N(0, I)."""
    labels = torch.multinomial(probs, n, replacement=True, generator=generator)
    features = centres[labels] + noise * torch.randn(n, centres.shape[1], generator=generator)
    return TensorPairs(features, labels)


def evaluate(model: MLPClassifier, split: str, dataset: TensorPairs, batch_size: int = 256) -> Evaluation:
    """micro-F1 (= accuracy), macro-F1 and the mean NLL of the head's inference distribution."""
    device = next(model.parameters()).device
    preds, golds, nll = [], [], 0.0
    with evaluating(model):
        loader = DataLoader(dataset, batch_size=batch_size, collate_fn=collate)
        for batch in progress.bar(loader, f"evaluate {split}", total=len(loader)):
            logp = model.log_probs(batch["features"].to(device))  # (B, C)
            gold = batch["labels"].to(device)
            nll -= logp.gather(1, gold[:, None]).sum().item()
            preds.append(logp.argmax(-1).cpu())
            golds.append(gold.cpu())
    pred, gold = torch.cat(preds), torch.cat(golds)
    p = split_prefix(split)
    return Evaluation({
        f"{p}/micro_f1": micro_f1(pred, gold),
        f"{p}/macro_f1": macro_f1(pred, gold, model.num_classes),
        f"{p}/nll": nll / len(gold),
    })


def build_task(cfg: DictConfig, batches: Batches) -> Task:
    """The Gaussian-cluster task of ``cfg.task`` with the model of ``cfg.model`` and the head of ``cfg.loss``.

    ``batches`` is not read: the Trainer batches the training rows, and evaluation uses its own batches of 256.
    """
    t = cfg.task
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
    model = build_model(cfg.model, head_factory(cfg.loss, t.num_classes, counts), contract=SYNTHETIC, in_features=t.dim,
                        num_classes=t.num_classes)
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
