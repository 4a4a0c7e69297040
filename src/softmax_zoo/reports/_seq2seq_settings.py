"""The UniLM fine-tuning settings of Sun et al. 2021's Table 5 (Gigaword-10k) and Table 3 (SQuAD QG) beside ours.

:func:`seq2seq_settings` gives the rows of :func:`softmax_zoo.reports._settings.settings_rows` for
one task: the paper's values as its §4 states them, ours read from a column's records (both arms of
a setting, or the runs of one start), and the reason for each choice of ours at the cpu scale. The
paper's values and our reasons are the words of templates/_seq2seq_settings.j2.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..records import get
from ._render import words
from ._settings import NOT_RECORDED, NOT_STATED, SPARSE, Records, Setting, pretrained_name, seeds, shown, sparse_ks, values
from ._verdicts import MIN_SEEDS

WORDS = words("_seq2seq_settings.j2", NOT_STATED=NOT_STATED, MIN_SEEDS=MIN_SEEDS)  # the paper's values, our metric, why ours
PAPER: dict[str, dict[str, str]] = WORDS.paper  # task -> setting -> Sun et al. 2021's §4, as its text states it
UNITS = {"gigaword": "pair", "squad_qg": "question"}


def _first(records: Records) -> dict[str, Any]:
    return records[0] if records else {}


def _sparse(records: Records) -> list[dict[str, Any]]:
    return [r for r in records if get(r, "choices.loss") == SPARSE]


def model(records: Records) -> str:
    r = _first(records)
    checkpoint = get(r, "config.model.checkpoint")
    text = f"{pretrained_name(checkpoint)} as UniLM" if checkpoint else "a randomly initialised BERT as UniLM"
    text += f" (`{get(r, 'config.model.name')}`)"
    if get(r, "task_info.fresh_weights"):
        text += ", its LM-head transform starting fresh"
    if values(records, "config.init_from"):
        text += "; started from a softmax run's checkpoint (`init_from`)"
    return text


def training_data(unit: str):
    def read(records: Records) -> str:
        r = _first(records)
        n = shown(records, "task_info.sizes.train")
        if get(r, "config.task.train_size") is None:
            return f"{n} {unit}s (every prepared one)"
        how = "the first" if get(r, "config.task.train_subset") == "first" else "a random subset"
        return f"{n} {unit}s ({how}, data seed {get(r, 'config.task.data_seed')})"
    return read


def epochs(records: Records) -> str:
    text = f"{shown(records, 'config.train.epochs')} ({shown(records, 'timing.global_steps')} optimiser steps)"
    return text + (", after the run it starts from" if values(records, "config.init_from") else "")


def learning_rate(records: Records) -> str:
    r = _first(records)
    lr, warmup, schedule = (get(r, f"config.train.{k}") for k in ("lr", "warmup_ratio", "lr_scheduler"))
    if lr is None:
        return NOT_RECORDED
    return f"{lr:g}" + (f" ({warmup:g} of the steps warm-up, {schedule} decay)" if warmup is not None else "")


def sparse_smoothing(records: Records) -> str:
    over = values(_sparse(records), "config.loss.smoothing_over")
    if not over:
        return "—"
    return "over its top-k support" if over == ["support"] else f"over {', '.join(map(str, over))} classes"


def maximum_length(records: Records) -> str:
    r = _first(records)
    text = f"source {shown(records, 'config.task.max_source_len')}, target {shown(records, 'config.task.max_target_len')} tokens"
    cut = [get(r, f"task_info.truncation.{split}") for split in ("train", "test")]
    if all(c is not None for c in cut):
        text += f"; {sum(c['source_truncated'] for c in cut)} of {sum(c['examples'] for c in cut)} sources cut"
    return text


def beams(records: Records) -> str:
    return shown(records, "config.task.decode.beams", lambda b: " and ".join(map(str, b)))


def decoding_mask(records: Records) -> str:
    topk = values(_sparse(records), "config.task.decode.topk")
    if topk == ["beam"]:
        return "sparse arm: all but the top-(beam size) tokens masked at each step; softmax arm: the full distribution"
    return "the full distribution for every arm" if records else NOT_RECORDED


def test_set(unit: str):
    def read(records: Records) -> str:
        r = _first(records)
        n = shown(records, "task_info.sizes.test")
        if get(r, "config.task.eval_size") is None:
            return f"{n} {unit}s (all)"
        return f"{n} {unit}s (a fixed random subset, data seed {get(r, 'config.task.data_seed')})"
    return read


def seq2seq_settings(task: str, reasons: dict[str, str] | None = None) -> list[Setting]:
    """The rows for ``task`` ("gigaword" or "squad_qg"): the paper's values, ours, and why ours.

    ``reasons``: setting name -> a page's own reason, replacing the tables' (the regime study's grid).
    """
    rows = _rows(task)
    unknown = set(reasons or {}) - {s.name for s in rows}
    if unknown:
        raise ValueError(f"no such settings: {sorted(unknown)}")
    return [replace(s, why=(reasons or {}).get(s.name, s.why)) for s in rows]


def _rows(task: str) -> list[Setting]:
    paper, unit, why = PAPER[task], UNITS[task], WORDS.why | WORDS.why_of_task[task]
    readers = {
        "model": model, "training data": training_data(unit), "epochs": epochs,
        "batch size": lambda rs: shown(rs, "config.train.batch_size"), "learning rate": learning_rate,
        "masking probability": lambda rs: shown(rs, "config.model.mask_prob"),
        "label smoothing": lambda rs: shown(rs, "config.loss.label_smoothing"), "label smoothing of the sparse arm": sparse_smoothing,
        "maximum length": maximum_length, "beams": beams, "decoding mask": decoding_mask, "sparse-softmax k": sparse_ks,
        "test set": test_set(unit), "metric": lambda rs: WORDS.metric[task], "seeds": seeds,
    }
    return [Setting(name, paper.get(name, NOT_STATED), read, why[name]) for name, read in readers.items()]
