"""Gigaword headline generation and SQuAD question generation with UniLM and any loss head.

``build_task(cfg)`` reads the prepared ``data/<task>/`` ({train,validation,test}.jsonl of
``{"source", "target"}``, question generation adding ``"answer"``, ``"answer_start"``;
meta.json), tokenises it with the model's tokenizer under the task's token budget
(:mod:`softmax_zoo.data.seq2seq`), and builds a :class:`~softmax_zoo.models.unilm.UniLM` whose
output head is ``cfg.loss`` tied to the word embeddings (``cfg.model``, e.g.
:func:`~softmax_zoo.models.unilm.build_unilm`).

``evaluate`` decodes the split once per beam size in ``task.decode.beams``
(:mod:`softmax_zoo.models.decoding`) and reports, for each beam b, ``<split>/<metric>_beam<b>``
(ROUGE-1/2/L; BLEU-1..4 too for question generation), ``<split>/examples_per_s_beam<b>``
(decoding throughput, batches sorted by source length) and ``<split>/altered_by_constraint_beam<b>``,
``<split>/ended_by_constraint_beam<b>``, ``<split>/blocked_by_constraint_beam<b>`` (shares of outputs the
search constraints changed, ended, or steered away from the full distribution's best token,
:class:`~softmax_zoo.models.decoding.Decoded`); and, once per split, where the target
tokens sit among the logits, teacher-forced as decoding sees them (``<split>/target_in_topk``,
``median_target_rank``, ``logits_near_kth`` for k = the sparse head's k or ``task.diagnostics_k``:
:mod:`softmax_zoo.diagnostics.topk`). It returns the predictions, per-example
scores and constraint counts as rows, which the engine writes to
``<results_dir>/runs/<experiment>/<run>.<split>.predictions.jsonl`` and the reports
(``softmax_zoo.reports.table5``/``table3``) bootstrap over.

Text for the metrics: Gigaword's ``<unk>`` is fed to the model as the tokenizer's unknown token,
and a generated unknown token is written back as ``<unk>`` (the references keep ``<unk>``).
For BLEU, hypotheses and references are lower-cased and split by the tokenizer's own
normaliser and pre-tokeniser (BERT's basic tokenisation: punctuation split off), so that both
sides are tokenised the same way.
"""

from __future__ import annotations

import json
import random
import time
from functools import partial
from pathlib import Path
from typing import Any

import hydra
import torch
from omegaconf import DictConfig

from softmax_zoo import metrics as M
from softmax_zoo import progress
from softmax_zoo.data.layout import read_jsonl
from softmax_zoo.data.seq2seq import (
    Seq2SeqDataset,
    Truncation,
    UniLMTrainCollator,
    check_budget,
    collate_sources,
    encode_question_generation,
    encode_summarisation,
    encode_target,
)
from softmax_zoo.data.tokenizers import minilm_tokenizer, pretrained_tokenizer
from softmax_zoo.diagnostics.topk import TopkDiagnostics, diagnostics_k, head_scores
from softmax_zoo.hub import MINILM, tokenizer_folder
from softmax_zoo.models import build_model, evaluating, head_factory, model_target
from softmax_zoo.models.contracts import SEQ2SEQ
from softmax_zoo.models.decoding import DecodeConfig, Decoded, decode, decoding_view, teacher_forced_states
from softmax_zoo.models.unilm import UniLM
from softmax_zoo.tasks.base import Batches, Evaluation, Task, require_prepared, split_prefix

FORMATS = ("summarisation", "question_generation")


def load_tokenizer(name: str, lowercase: bool | None = None):
    """The model's tokenizer (a fast BERT WordPiece tokenizer is expected: offsets are used).

    Args:
        name: hub id, folder or ``"minilm"``; a folder with only ``vocab.txt`` (UniLM v1) gets a
            WordPiece tokenizer built from it.
        lowercase: lower-case the text; None: as the tokenizer files say (a bare vocab.txt: only
            when the vocabulary is uncased, :func:`~softmax_zoo.data.tokenizers.vocab_is_cased`).
    """
    tok = minilm_tokenizer() if name == MINILM and lowercase is None else pretrained_tokenizer(tokenizer_folder(name), lowercase)
    if not tok.is_fast:
        raise ValueError(f"tokenizer {name!r} must be a fast tokenizer (offset mappings are needed)")
    return tok


def subset(n_total: int, size: int | None, how: str, seed: int) -> list[int]:
    """Indices of ``size`` examples out of ``n_total``: the first ones, or a sorted random sample."""
    if size is None or size >= n_total:
        return list(range(n_total))
    if size < 1:
        raise ValueError(f"subset size must be >= 1 or null, got {size}")
    if how == "first":
        return list(range(size))
    if how == "random":
        return sorted(random.Random(seed).sample(range(n_total), size))
    raise ValueError(f"subset must be 'first' or 'random', got {how!r}")


def load_split(data_dir: Path, split: str, t: DictConfig, tokenizer: Any, size: int | None, how: str) -> tuple[Seq2SeqDataset, Truncation]:
    """Read, subset and tokenise one split under the task's budget."""
    path = data_dir / f"{split}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the prepared folder {data_dir} has no {split!r} split")
    rows = [ex for _, ex in read_jsonl(path)]
    rows = [rows[i] for i in subset(len(rows), size, how, t.data_seed)]
    if t.unk_text:
        rows = [{**r, "source": r["source"].replace(t.unk_text, tokenizer.unk_token),
                 "target": r["target"].replace(t.unk_text, tokenizer.unk_token)} for r in rows]
    counts = Truncation()
    if t.format == "summarisation":
        sources = encode_summarisation(tokenizer, [r["source"] for r in rows], t.max_source_len, counts)
    elif t.format == "question_generation":
        sources, kept = encode_question_generation(tokenizer, rows, t.max_source_len, counts)
        rows = [rows[i] for i in kept]
    else:
        raise ValueError(f"task.format must be one of {FORMATS}, got {t.format!r}")
    targets = encode_target(tokenizer, [r["target"] for r in rows], t.max_target_len, counts)
    refs = [r["target"].replace(tokenizer.unk_token, t.unk_text) if t.unk_text else r["target"] for r in rows]
    return Seq2SeqDataset(sources, targets, refs, [r["source"] for r in rows]), counts


def first_pairs(dataset: Seq2SeqDataset, n: int) -> Seq2SeqDataset:
    """The first ``n`` pairs of ``dataset`` (``train.eval_subset``)."""
    return Seq2SeqDataset(dataset.source_ids[:n], dataset.target_ids[:n], dataset.references[:n], dataset.sources[:n])


def decode_config(d: DictConfig, beam: int, tokenizer: Any, max_len: int) -> DecodeConfig:
    """``task.decode`` for one beam size; ``topk: beam`` means k = the beam size (Sparse-softmax Table 5)."""
    topk = beam if d.topk == "beam" else d.topk
    return DecodeConfig(
        beam=beam,
        max_len=max_len,
        min_len=d.min_len,
        length_penalty=d.length_penalty,
        ngram_block=d.ngram_block,
        ngram_ignore=tuple(tokenizer.convert_tokens_to_ids(list(d.ngram_ignore))),
        topk=topk,
        banned=(tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.mask_token_id),
    )


def detokenize(tokenizer: Any, ids: list[int], unk_text: str | None) -> str:
    """Generated ids -> text (WordPieces joined; the unknown token written as ``unk_text``)."""
    text = tokenizer.convert_tokens_to_string(tokenizer.convert_ids_to_tokens(ids))
    return text.replace(tokenizer.unk_token, unk_text) if unk_text else text


def tokenizer_lowercases(tokenizer: Any) -> bool:
    """Whether the tokenizer's normaliser lower-cases its input (an uncased vocabulary)."""
    normalizer = tokenizer.backend_tokenizer.normalizer
    return normalizer is not None and normalizer.normalize_str("A") == "a"


def bleu_text(tokenizer: Any, text: str) -> str:
    """Lower-cased, tokenised text for BLEU: the tokenizer's normaliser + pre-tokeniser, space-joined.

    Lower-cased whatever the tokenizer's casing: Du et al.'s references are uncased, and UniLM
    lower-cases its cased predictions before scoring (unilm-v1 README, question generation).
    """
    backend = tokenizer.backend_tokenizer
    normalised = (backend.normalizer.normalize_str(text) if backend.normalizer else text).lower()
    return " ".join(tok for tok, _ in backend.pre_tokenizer.pre_tokenize_str(normalised))


def decode_split(
    model: UniLM, dataset: Seq2SeqDataset, dcfg: DecodeConfig, tokenizer: Any, batch_size: int, unk_text: str | None
) -> tuple[list[str], list[Decoded]]:
    """Decoded text and output of every example, in dataset order (batches of similar source length)."""
    device = next(model.parameters()).device
    order = sorted(range(len(dataset)), key=lambda i: len(dataset.source_ids[i]))
    texts: list[str] = [""] * len(dataset)
    outs: list[Decoded] = [Decoded([])] * len(dataset)
    starts = range(0, len(order), batch_size)
    for start in progress.bar(starts, f"decode beam {dcfg.beam}", total=len(starts)):
        batch = collate_sources([dataset[i] for i in order[start : start + batch_size]], tokenizer.pad_token_id)
        decoded = decode(
            model, batch["source_ids"].to(device), batch["source_mask"].to(device), dcfg,
            mask_id=tokenizer.mask_token_id, eos_id=tokenizer.sep_token_id,
        )
        for i, out in zip(batch["index"].tolist(), decoded):
            texts[i], outs[i] = detokenize(tokenizer, out.ids, unk_text), out
    return texts, outs


def target_diagnostics(model: UniLM, dataset: Seq2SeqDataset, k: int, batch_size: int, tokenizer: Any) -> TopkDiagnostics:
    """Top-k diagnostics (:mod:`softmax_zoo.diagnostics.topk`) of every target token, teacher-forced as decoding sees it."""
    diag = TopkDiagnostics(k)
    for start in range(0, len(dataset), batch_size):
        rows = range(start, min(start + batch_size, len(dataset)))
        view = decoding_view([dataset.source_ids[i] for i in rows], [dataset.target_ids[i] for i in rows],
                             mask_id=tokenizer.mask_token_id, pad_id=tokenizer.pad_token_id)
        hidden, target = teacher_forced_states(model, view)
        diag.update(head_scores(model.head, hidden), target)
    return diag


def constraint_shares(outs: list[Decoded], prefix: str, suffix: str) -> dict[str, float]:
    """Shares of outputs the search constraints altered (a fall-through token) or ended (:class:`Decoded`)."""
    n = max(1, len(outs))
    return {
        f"{prefix}altered_by_constraint{suffix}": sum(o.constraint_steps > 0 for o in outs) / n,
        f"{prefix}ended_by_constraint{suffix}": sum(o.ended_by_constraint for o in outs) / n,
        f"{prefix}blocked_by_constraint{suffix}": sum(o.blocked_steps > 0 for o in outs) / n,
    }


def evaluate(model: UniLM, split: str, dataset: Seq2SeqDataset, *, cfg: DictConfig, tokenizer: Any) -> Evaluation:
    """Decode ``split`` with each beam of ``task.decode.beams``; score; return metrics and per-example rows."""
    with evaluating(model):
        return _evaluate(model, split, dataset, cfg.task, tokenizer)


def _evaluate(model: UniLM, split: str, dataset: Seq2SeqDataset, t: DictConfig, tokenizer: Any) -> Evaluation:
    p = split_prefix(split)
    metrics: dict[str, float] = {}
    rows: list[dict[str, Any]] = [{"index": i, "reference": r} for i, r in enumerate(dataset.references)]
    refs_bleu = [bleu_text(tokenizer, r) for r in dataset.references] if "bleu" in t.metrics else None
    k = diagnostics_k(model.head, t.diagnostics_k)
    metrics.update(target_diagnostics(model, dataset, k, t.decode.batch_size, tokenizer).metrics(f"{p}/"))
    for beam in t.decode.beams:
        dcfg = decode_config(t.decode, beam, tokenizer, t.decode.max_len)
        t0 = time.perf_counter()
        hyps, outs = decode_split(model, dataset, dcfg, tokenizer, t.decode.batch_size, t.unk_text)
        metrics[f"{p}/examples_per_s_beam{beam}"] = len(dataset) / (time.perf_counter() - t0)
        per_example = M.rouge_per_example(hyps, dataset.references)
        for name, values in per_example.items():
            metrics[f"{p}/{name}_beam{beam}"] = sum(values) / len(values)
        metrics.update(constraint_shares(outs, f"{p}/", f"_beam{beam}"))
        for row, hyp, out, *scores in zip(rows, hyps, outs, *per_example.values()):
            row[f"beam{beam}"] = {
                "prediction": hyp, **dict(zip(per_example, scores)),
                "constraint_steps": out.constraint_steps, "ended_by_constraint": out.ended_by_constraint,
                "blocked_steps": out.blocked_steps,
            }
        if refs_bleu is not None:
            stats = [M.bleu_stats(bleu_text(tokenizer, h), r) for h, r in zip(hyps, refs_bleu)]
            for n in M.BLEU_ORDERS:
                metrics[f"{p}/bleu{n}_beam{beam}"] = M.bleu_from_stats(stats, n)
            for row, s in zip(rows, stats):
                row[f"beam{beam}"]["bleu_stats"] = s
    return Evaluation(metrics, rows)


def build_task(cfg: DictConfig, batches: Batches) -> Task:
    """The seq2seq task of ``cfg.task`` (gigaword or squad_qg) with ``cfg.model`` and ``cfg.loss``.

    ``batches`` is not read: the Trainer batches the training pairs, and decoding uses ``task.decode.batch_size``.
    """
    t = cfg.task
    SEQ2SEQ.check_config(cfg.model, model_target(cfg.model))  # before the tokenizer is read
    check_budget(t.max_source_len, t.max_target_len)
    data_dir = require_prepared(hydra.utils.to_absolute_path(t.data_dir), t.name, ("meta.json", "train.jsonl"))
    meta = json.loads((data_dir / "meta.json").read_text(encoding="utf-8"))
    tokenizer = load_tokenizer(cfg.model.tokenizer, cfg.model.get("lowercase"))
    model = build_model(cfg.model, head_factory(cfg.loss, len(tokenizer)), contract=SEQ2SEQ, vocab_size=len(tokenizer))
    max_pos = model.encoder.config.max_position_embeddings
    if t.max_source_len + t.max_target_len > max_pos:
        raise ValueError(
            f"task.max_source_len + task.max_target_len = {t.max_source_len + t.max_target_len} exceeds the "
            f"model's {max_pos} positions"
        )
    train, train_counts = load_split(data_dir, "train", t, tokenizer, t.train_size, t.train_subset)
    evals, counts = {}, {"train": train_counts.as_dict()}
    for split in t.eval_splits:
        evals[split], c = load_split(data_dir, split, t, tokenizer, t.eval_size, "random")
        counts[split] = c.as_dict()
    specials = [tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.mask_token_id, tokenizer.unk_token_id]
    collator = UniLMTrainCollator(
        vocab_size=len(tokenizer), mask_id=tokenizer.mask_token_id, pad_id=tokenizer.pad_token_id,
        special_ids=specials, mask_prob=model.mask_prob, max_pred=model.max_pred, seed=cfg.seed,
    )
    info = {
        "truncation": counts,
        "sizes": {"train": len(train), **{s: len(d) for s, d in evals.items()}},
        "fresh_weights": model.fresh,
        "checkpoint": cfg.model.get("checkpoint"),
        "segment_ids": list(model.segment_ids),
        "tokenizer_lowercase": tokenizer_lowercases(tokenizer),
        "torch_threads": torch.get_num_threads(),
    }
    return Task(
        model=model,
        train_dataset=train,
        eval_datasets=evals,
        collator=collator,
        evaluate=partial(evaluate, cfg=cfg, tokenizer=tokenizer),
        data_meta=meta,
        info=info,
        subset=first_pairs,
    )
