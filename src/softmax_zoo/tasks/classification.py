"""Text classification (WoS-46985, OOS-eval/CLINC150, IFLYTEK): ``task=<name>`` in configs/task/.

Sparse-softmax paper (Sun et al. 2021), Sec. 4.1 and Fig. 1-2: an encoder + output layer trained
with full softmax or sparse-softmax (top-k), reported as micro-F1 (= accuracy, single-label).

:func:`build_task` reads ``data/<task>/`` (:mod:`softmax_zoo.data.classification`), loads the
tokenizer of ``cfg.model``, builds the model (its head from ``cfg.loss`` first, so that a bad
head setting such as k > num_classes fails before anything expensive) and the datasets. A model
built with ``cache_features=true`` holds no encoder (``model.feature_encoder``): the frozen
encoder runs once over every split and the pooled vectors are cached in ``<task.data_dir>/features/``
under a key of the data's sha256, the model and the tokenisation, so that every later run
(seed, loss, k) only trains the layers on top. With ``cache_layers=N`` the cache holds each
example's token states below the top N layers (``model.state_encoder``), and the top N layers
are fine-tuned with the head.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig
from torch import nn

from .. import progress
from ..data.classification import (
    ClassificationCollator,
    FeatureDataset,
    StateDataset,
    TokenizedDataset,
    batches,
    data_fingerprint,
    load_meta,
    pad_id_of,
    read_split,
    stratified_subset,
    tokenize,
)
from ..data.layout import CHAR_VOCAB_FILE, SPLITS
from ..data.tokenizers import CharTokenizer
from ..diagnostics.topk import TopkDiagnostics, head_scores
from ..diagnostics.topk import diagnostics_k as topk_k
from ..files import cached_tensors, json_key
from ..hub import resolve_pretrained
from ..metrics import macro_f1, micro_f1
from ..models import build_model, evaluating, head_factory, model_target
from ..models.classifier import TextClassifier, pooled_features, token_states
from ..models.contracts import CLASSIFICATION
from .base import Batches, Evaluation, Task, require_prepared, split_prefix

log = logging.getLogger(__name__)
ENCODE_BATCH = 128  # examples per forward pass when caching features (sorted by length)


def load_tokenizer(model_cfg: DictConfig, data_dir: Path, train_texts: list[str]) -> Any:
    """``model.tokenizer``: "char" -> the prepared char_vocab.txt (else built from ``train_texts``);
    otherwise a transformers tokenizer by hub id, local folder or "minilm"."""
    name = model_cfg.tokenizer
    if name == "char":
        vocab = data_dir / CHAR_VOCAB_FILE
        return CharTokenizer.load(vocab) if vocab.is_file() else CharTokenizer.build(train_texts)
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_pretrained(name))


def _cache_key(meta: dict, model_cfg: DictConfig, max_length: int, seed: int | None = None) -> str:
    what = {
        "data": data_fingerprint(meta),
        "pretrained": model_cfg.pretrained,
        "tokenizer": model_cfg.tokenizer,
        "pooling": model_cfg.pooling,
        "max_length": max_length,
    }
    if model_cfg.get("cache_layers") is not None:  # token states below the top N layers (pooling not applied)
        what["cache_layers"] = model_cfg.cache_layers
    if seed is not None:  # a model from scratch: its random lower layers depend on the seed
        what["seed"] = seed
    return json_key(what)


def _encode(encoder: nn.Module, ids: list[list[int]], pad_id: int, pooling: str) -> torch.Tensor:
    """Pooled features (N, d) of token sequences, run in length-sorted batches (less padding)."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    ds = TokenizedDataset([ids[i] for i in order], [0] * len(ids))
    feats = pooled_features(encoder, batches(ds, ClassificationCollator(pad_id), ENCODE_BATCH), pooling)
    out = torch.empty_like(feats)
    out[torch.tensor(order)] = feats  # back to the original order
    return out


def _encode_states(encoder: nn.Module, ids: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Token states of a frozen lower encoder: ``{"states": (sum of T_i, d), "lengths": (N,)}`` in the original order."""
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    ds = TokenizedDataset([ids[i] for i in order], [0] * len(ids))
    states = token_states(encoder, batches(ds, ClassificationCollator(pad_id), ENCODE_BATCH))
    by_example: list[torch.Tensor] = [torch.empty(0)] * len(ids)
    for pos, i in enumerate(order):
        by_example[i] = states[pos]
    return {"states": torch.cat(by_example), "lengths": torch.tensor([len(x) for x in by_example])}


def _examples(cached: Any) -> int:
    """Examples in one split's cache entry: pooled features (N, d) or ``{"states", "lengths"}``."""
    return len(cached["lengths"]) if isinstance(cached, dict) else len(cached)


def cached_features(
    path: Path, encoder_fn, ids: dict[str, list[list[int]]], pad_id: int, pooling: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load ``path`` or compute every split's encoding with ``encoder_fn()`` and save it atomically.

    ``pooling`` set: pooled features (N, d) per split; None: token states (:func:`_encode_states`).
    """
    timing: dict[str, float] = {}

    def compute() -> dict[str, Any]:
        t0 = time.perf_counter()
        encoder = encoder_fn()
        feats = {
            split: _encode(encoder, split_ids, pad_id, pooling) if pooling else _encode_states(encoder, split_ids, pad_id)
            for split, split_ids in ids.items()
        }
        seconds, n = time.perf_counter() - t0, sum(len(v) for v in ids.values())
        timing.update(encode_s=seconds, encode_examples_per_s=n / seconds)
        log.info("cached %d pooled features in %s (%.1f s, %.0f examples/s)", n, path, seconds, n / seconds)
        return feats

    def matches(feats: dict[str, Any]) -> bool:
        return set(feats) == set(ids) and all(_examples(feats[s]) == len(ids[s]) for s in ids)

    feats, hit = cached_tensors(path, compute, matches, what="feature cache")
    return feats, {"path": str(path), "hit": hit, **timing}


def make_evaluate(collator: ClassificationCollator, batch_size: int, oos_id: int | None = None, diagnostics_k: int = 20):
    """``evaluate(model, split, dataset)`` -> ``{"<split>/micro_f1", "<split>/macro_f1", "<split>/loss", ...}``.

    Predictions use the head's own rule (``head.predict``: top-k for sparse-softmax); the loss
    is the head's training loss on the split, averaged over examples. With ``oos_id`` (OOS-eval's
    out-of-scope class) also Larson et al. 2019's ``<split>/in_scope_accuracy`` (rows whose gold
    is not out-of-scope) and ``<split>/oos_recall``. Also where the gold classes sit among the
    logits (``<split>/target_in_topk``, ``median_target_rank``, ``logits_near_kth``:
    :mod:`softmax_zoo.diagnostics.topk`) for the sparse head's k, or ``diagnostics_k`` for other heads.
    """

    def evaluate(model: TextClassifier, split: str, dataset: torch.utils.data.Dataset) -> Evaluation:
        device = next(model.parameters()).device
        preds, golds, loss_sum = [], [], 0.0
        diag = TopkDiagnostics(topk_k(model.head, diagnostics_k))
        with evaluating(model):
            steps = -(-len(dataset) // batch_size)
            for batch in progress.bar(batches(dataset, collator, batch_size), f"evaluate {split}", total=steps):
                batch = {k: v.to(device) for k, v in batch.items()}
                gold = batch.pop("labels")
                hidden = model.hidden(**batch)  # (B, d), as model.loss_and_predictions computes it
                loss, pred = model.head(hidden, gold), model.head.predict(hidden)
                diag.update(head_scores(model.head, hidden), gold)
                loss_sum += loss.item() * len(gold)
                preds.append(pred.cpu())
                golds.append(gold.cpu())
        pred, gold = torch.cat(preds), torch.cat(golds)
        p = split_prefix(split)
        metrics = {
            f"{p}/micro_f1": micro_f1(pred, gold),
            f"{p}/macro_f1": macro_f1(pred, gold, model.num_classes),
            f"{p}/loss": loss_sum / len(gold),
        }
        if oos_id is not None:
            oos = gold == oos_id
            if (~oos).any():
                metrics[f"{p}/in_scope_accuracy"] = micro_f1(pred[~oos], gold[~oos])
            if oos.any():
                metrics[f"{p}/oos_recall"] = micro_f1(pred[oos], gold[oos])
        metrics.update(diag.metrics(f"{p}/"))
        return Evaluation(metrics)

    return evaluate


def build_task(cfg: DictConfig, batches: Batches) -> Task:
    """The classification task of ``cfg.task`` with the encoder of ``cfg.model`` and the head of ``cfg.loss``.

    Raises:
        FileNotFoundError: the data were not prepared (the message gives the command).
        ValueError: a bad model or head setting (e.g. sparse-softmax k > number of classes).
    """
    t, m = cfg.task, cfg.model
    CLASSIFICATION.check_config(m, model_target(m))  # before the tokenizer is read
    data_dir = require_prepared(
        hydra.utils.to_absolute_path(t.data_dir), t.name, ("meta.json", *(f"{s}.jsonl" for s in SPLITS))
    )
    meta = load_meta(data_dir)
    labels = list(meta["labels"])
    num_classes = len(labels)
    oos_label = t.get("oos_label")
    if oos_label is not None and oos_label not in labels:
        raise ValueError(
            f"task.oos_label {oos_label!r} is not one of the {num_classes} labels of {data_dir}/meta.json "
            "(data prepared without an out-of-scope class need task.oos_label=null)"
        )
    oos_id = None if oos_label is None else labels.index(oos_label)

    texts, gold = {}, {}
    for split in SPLITS:
        texts[split], gold[split] = read_split(data_dir, split, labels)
    n_train_all = len(gold["train"])
    if t.train_subset is not None:
        keep = stratified_subset(gold["train"], t.train_subset, t.subset_seed)
        texts["train"] = [texts["train"][i] for i in keep]
        gold["train"] = [gold["train"][i] for i in keep]
    counts = torch.bincount(torch.tensor(gold["train"]), minlength=num_classes)

    tokenizer = load_tokenizer(m, data_dir, texts["train"])
    pad_id = pad_id_of(tokenizer)
    ids = {split: tokenize(texts[split], tokenizer, t.max_length) for split in SPLITS}
    vocab_size = len(tokenizer)
    info: dict[str, Any] = {
        "num_classes": num_classes,
        "examples": {s: len(gold[s]) for s in SPLITS},
        "train_examples_before_subset": n_train_all,
        "train_classes_seen": int((counts > 0).sum()),
        "max_length": t.max_length,
        "tokenizer": m.tokenizer,
        "vocab_size": vocab_size,
        "at_max_length": {s: sum(len(x) >= t.max_length for x in ids[s]) for s in SPLITS},
        "mean_tokens": {s: sum(map(len, ids[s])) / max(1, len(ids[s])) for s in SPLITS},
    }

    model = build_model(m, head_factory(cfg.loss, num_classes, counts), contract=CLASSIFICATION, vocab_size=vocab_size,
                        pad_id=pad_id)
    collator = ClassificationCollator(pad_id)
    if model.feature_encoder is not None:
        path = Path(hydra.utils.to_absolute_path(t.feature_cache_dir)) / f"{t.name}_{_cache_key(meta, m, t.max_length)}.pt"
        feats, info["feature_cache"] = cached_features(path, model.feature_encoder, ids, pad_id, model.pooling)
        datasets = {s: FeatureDataset(feats[s], gold[s]) for s in SPLITS}
    elif model.state_encoder is not None:
        key = _cache_key(meta, m, t.max_length, None if m.pretrained else cfg.seed)
        path = Path(hydra.utils.to_absolute_path(t.feature_cache_dir)) / f"{t.name}_states{m.cache_layers}_{key}.pt"
        states, info["feature_cache"] = cached_features(path, model.state_encoder, ids, pad_id, None)
        model.state_encoder = None  # the lower layers are not needed any more
        datasets = {s: StateDataset(states[s]["states"], states[s]["lengths"], gold[s]) for s in SPLITS}
    else:
        datasets = {s: TokenizedDataset(ids[s], gold[s]) for s in SPLITS}
    info["trainable_parameters"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    info["train_subset"] = t.train_subset
    return Task(
        model=model,
        train_dataset=datasets["train"],
        eval_datasets={"validation": datasets["validation"], "test": datasets["test"]},
        collator=collator,
        evaluate=make_evaluate(collator, batches.eval, oos_id, t.diagnostics_k),
        data_meta=meta,
        info=info,
    )
