"""Word-level language modelling (One Billion Word, Penn Treebank, WikiText-2) with any loss head.

``build_task(cfg)`` reads the prepared ``data/<task>/`` ({train,validation,test}.txt, vocab.txt,
meta.json), builds the word vocabulary (``task.min_count``), the LSTM of ``cfg.model`` with the
head of ``cfg.loss`` (adaptive cutoffs and unigram counts from the vocabulary counts), and the
streams of BPTT segments (:mod:`softmax_zoo.data.lm_stream`): the training stream in the global
layout over ``WORLD_SIZE`` processes with ``train.batch_size`` rows each, and one evaluation
stream per split with ``train.eval_batch_size`` rows.

Evaluation reports the perplexity of the distribution each variant defines at inference
(``head.log_probs``): the full softmax for the softmax and sampled heads, the adaptive model's
own distribution for adaptive softmax, over every token of the split (words and ``<eos>``), with
the hidden state carried through the split as in training. Training throughput (tokens/second,
timed inside the model, curve evaluations excluded) is reported with it, so that heads can be
compared from their records. ``task.curve_every > 0`` adds a validation-perplexity curve against
training wall time (:class:`ValidationCurve`).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from functools import partial
from pathlib import Path

import torch
from omegaconf import DictConfig
from torch.utils.data import DataLoader
from transformers import TrainerCallback

from softmax_zoo import progress
from softmax_zoo.data.layout import EOS, IGNORE_INDEX
from softmax_zoo.data.lm_stream import LMStream
from softmax_zoo.data.tokenizers import WordVocab
from softmax_zoo.metrics import perplexity
from softmax_zoo.models import build_model, evaluating, head_factory
from softmax_zoo.models.contracts import LM
from softmax_zoo.models.lstm_lm import LSTMLanguageModel
from softmax_zoo.tasks.base import Batches, Evaluation, Task, require_prepared, split_prefix

LOGPROB_BUDGET = 1 << 25  # floats per log_probs chunk (128 MiB), so that evaluation fits with an 800k vocabulary


def check_vocab_counts(vocab_path: Path, meta: dict) -> None:
    """Raise ``ValueError`` if vocab.txt's counts are not those of the prepared training split.

    vocab.txt counts every training token (``<eos>`` once per sentence), so its counts must sum to
    the split's ``tokens_with_eos``, its ``<eos>`` count must equal the number of sentences and its
    size must equal meta.json's ``vocab_size``; a vocabulary from another corpus, split or
    preparation fails one of the three.
    """
    total, eos, size = 0, 0, 0
    with open(vocab_path, encoding="utf-8") as f:
        for line in f:
            word, _, n = line.rstrip("\n").rpartition("\t")
            total += int(n)
            size += 1
            eos = int(n) if word == EOS else eos
    train = meta.get("splits", {}).get("train", {})
    expected = (train.get("tokens_with_eos"), train.get("sentences"), meta.get("vocab_size"))
    if None in expected:
        raise ValueError(f"{vocab_path.parent / 'meta.json'} lacks the train token/sentence counts or vocab_size; prepare the data again")
    if (total, eos, size) != expected:
        raise ValueError(
            f"{vocab_path} does not match the prepared training data: its counts sum to {total} tokens with "
            f"{eos} <eos> over {size} words, but meta.json has {expected[0]} tokens, {expected[1]} sentences and "
            f"{expected[2]} words; prepare the data again (make data TASK=...)"
        )


def world_size() -> int:
    """Data-parallel processes (torchrun sets WORLD_SIZE; 1 otherwise)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def collate(rows: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Rows of one batch-unit -> ``input_ids`` (B, T), ``labels`` (B, T), ``reset`` (B,)."""
    return {key: torch.stack([r[key] for r in rows]) for key in ("input_ids", "labels", "reset")}


class FirstRows(torch.utils.data.IterableDataset):
    """The first ``rows`` rows of an evaluation stream, rounded up to whole batches (``train.eval_subset``).

    A row is one BPTT segment of one stream (the module docstring of :mod:`softmax_zoo.data.lm_stream`),
    so the hidden state still carries over from one batch to the next.
    """

    def __init__(self, stream: LMStream, rows: int) -> None:
        self.stream = stream
        self.batch_size = stream.batch_size
        self.rows = -(-rows // stream.batch_size) * stream.batch_size

    def __len__(self) -> int:
        return min(self.rows, len(self.stream))

    def __iter__(self):
        return itertools.islice(iter(self.stream), self.rows)


def split_nll(model: LSTMLanguageModel, stream: LMStream | FirstRows, max_tokens: int | None = None) -> tuple[float, int]:
    """Summed negative log-likelihood (nats) of the labelled tokens of ``stream``, and their number.

    Args:
        model: the LM; its evaluation state starts from zero and is dropped afterwards.
        stream: an evaluation stream.
        max_tokens: stop after the batch that reaches this many tokens (None: the whole split).
    """
    device = next(model.parameters()).device
    total, count = 0.0, 0
    chunk = max(1, LOGPROB_BUDGET // model.vocab_size)
    with evaluating(model):
        model.reset_eval_state()
        for batch in progress.bar(DataLoader(stream, batch_size=stream.batch_size, collate_fn=collate), "evaluate"):
            batch = {k: v.to(device) for k, v in batch.items()}
            hidden = model(batch["input_ids"], reset=batch["reset"])["hidden"]  # (B, T, d)
            keep = batch["labels"] != IGNORE_INDEX
            hidden, labels = hidden[keep], batch["labels"][keep]  # (N, d), (N,)
            for start in range(0, labels.numel(), chunk):
                logp = model.log_probs(hidden[start : start + chunk])  # (n, V), float32
                total -= logp.gather(1, labels[start : start + chunk, None]).sum().item()
            count += labels.numel()
            if max_tokens is not None and count >= max_tokens:
                break
        model.reset_eval_state()
    return total, count


def evaluate(model: LSTMLanguageModel, split: str, dataset: LMStream | FirstRows) -> Evaluation:
    """``<p>/perplexity``, ``<p>/loss`` (nats/token), ``<p>/tokens`` (p = "val" or "test"), and training throughput."""
    total, count = split_nll(model, dataset)
    p = split_prefix(split)
    metrics = {f"{p}/perplexity": perplexity(total, count), f"{p}/loss": total / count, f"{p}/tokens": float(count)}
    return Evaluation({**metrics, **model.throughput()})


class ValidationCurve(TrainerCallback):
    """Validation perplexity on the first ``tokens`` tokens, before training and every ``every`` steps.

    Each point goes into the Trainer's ``log_history`` (hence the run record's ``history``) as
    ``{"step", "train_wall_s", "train/tokens", "val/curve_perplexity", "val/curve_tokens"}``;
    ``train_wall_s`` is training time so far without the time spent on these evaluations (nor on
    the Trainer's validations of ``train.eval_steps``), which is also taken out of the model's
    tokens/second; a resumed run counts on from the checkpoint's (:meth:`resume_state`).
    Evaluated on the main process only.
    """

    def __init__(self, stream: LMStream, every: int, tokens: int) -> None:
        if every < 1 or tokens < 1:
            raise ValueError(f"curve_every and curve_tokens must be >= 1, got {every} and {tokens}")
        self.stream = stream
        self.every = every
        self.tokens = tokens
        self.start = 0.0
        self.spent = 0.0
        self.earlier = 0.0  # training seconds of the run's earlier segments (a resumed run)

    def training_seconds(self, now: float) -> float:
        """Training time of the run until ``now`` (a ``time.perf_counter()``), these evaluations left out."""
        return self.earlier + now - self.start - self.spent

    def resume_state(self) -> dict[str, float]:
        """What a checkpoint keeps for a resumed run: the training time so far."""
        return {"train_wall_s": self.training_seconds(time.perf_counter())}

    def load_resume_state(self, state: dict[str, float]) -> None:
        """Count the training time on from a checkpoint's :meth:`resume_state`."""
        self.earlier = float(state["train_wall_s"])

    def point(self, state, model: LSTMLanguageModel) -> None:
        t0 = time.perf_counter()
        total, count = split_nll(model, self.stream, max_tokens=self.tokens)
        state.log_history.append({
            "step": state.global_step,
            "train_wall_s": self.training_seconds(t0),
            "train/tokens": model.tokens_trained,
            "val/curve_perplexity": perplexity(total, count),
            "val/curve_tokens": count,
        })
        spent = time.perf_counter() - t0
        self.spent += spent
        model.exclude_time(spent)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.start = time.perf_counter()
        if state.is_world_process_zero and state.global_step == 0:
            self.point(state, model)
        return control

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.is_world_process_zero and state.global_step % self.every == 0:
            self.point(state, model)
        return control

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        self.spent += (metrics or {}).get("eval_runtime", 0.0)  # the Trainer's validation (train.eval_steps) is not training
        return control


def build_task(cfg: DictConfig, batches: Batches) -> Task:
    """Task for ``task=lm1b|ptb|wikitext2``: the LM of ``cfg.model`` + the ``cfg.loss`` head over the prepared corpus."""
    t = cfg.task
    splits = ("train", *t.eval_splits)
    data_dir = require_prepared(t.data_dir, t.name, ("meta.json", "vocab.txt", *(f"{s}.txt" for s in splits)))
    meta = json.loads((data_dir / "meta.json").read_text(encoding="utf-8"))
    vocab = WordVocab.load(data_dir / "vocab.txt", min_count=t.min_count)  # a malformed line: file:line error
    check_vocab_counts(data_dir / "vocab.txt", meta)
    counts = torch.tensor(vocab.counts, dtype=torch.float)
    model = build_model(cfg.model, head_factory(cfg.loss, len(vocab), counts), contract=LM, vocab_size=len(vocab))
    stream = partial(LMStream, encode=partial(vocab.encode, add_eos=False), eos_id=vocab.eos_id, bptt=t.bptt)
    evals = {s: stream([data_dir / f"{s}.txt"], batch_size=batches.eval) for s in t.eval_splits}
    callbacks = []
    if t.curve_every > 0:
        curve_stream = stream([data_dir / "validation.txt"], batch_size=batches.eval)
        callbacks.append(ValidationCurve(curve_stream, t.curve_every, t.curve_tokens))
    return Task(
        model=model,
        train_dataset=stream([data_dir / "train.txt"], batch_size=batches.train, world_size=world_size()),
        eval_datasets=evals,
        collator=collate,
        evaluate=evaluate,
        data_meta=meta,
        info={
            "vocab_size": len(vocab),
            "min_count": t.min_count,
            "unk_train_tokens": vocab.counts[vocab.unk_id],
            "bptt": t.bptt,
            "streams": batches.train * world_size(),
            "parameters": sum(p.numel() for p in model.parameters()),
        },
        callbacks=callbacks,
        subset=FirstRows,
    )
