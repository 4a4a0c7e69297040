"""The UniLM fine-tuning settings of Sun et al. 2021's Table 5 (Gigaword-10k) and Table 3 (SQuAD QG) beside ours.

:func:`seq2seq_settings` gives the rows of :func:`softmax_zoo.reports._settings.settings_rows` for
one task: the paper's values as its §4 states them, ours read from a column's records (both arms of
a setting, or the runs of one start), and the reason for each choice of ours at the cpu scale.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..records import get
from ._settings import NOT_RECORDED, NOT_STATED, Records, Setting, pretrained_name, shown, values
from ._stats import seeds_label
from ._verdicts import MIN_SEEDS

SPARSE = "sparse_softmax"  # configs/loss/ name of the sparse-softmax arm

# Sun et al. 2021, §4, as its text states them (summarisation: Table 5; question generation: Table 3).
PAPER = {
    "gigaword": {
        "model": "UniLM (Dong et al. 2019), fine-tuned as a sequence-to-sequence model",
        "training data": "Gigaword-10k's training set",
        "epochs": "30",
        "batch size": "64",
        "learning rate": NOT_STATED,
        "masking probability": "0.7",
        "label smoothing": "0.1",
        "maximum length": "256",
        "beams": "1 and 5",
        "decoding mask": "beam 5: all but the top 5 tokens masked",
        "test set": "Gigaword-10k's test set (its size not stated)",
        "metric": "the F1 version of ROUGE, as UniLM computes it",
    },
    "squad_qg": {
        "model": "UniLM (Dong et al. 2019), fine-tuned as a sequence-to-sequence model",
        "training data": "SQuAD 1.1's training set (split and size not stated)",
        "epochs": "10",
        "batch size": "32",
        "learning rate": "2e-5",
        "masking probability": "0.7",
        "label smoothing": "0.1",
        "maximum length": "input truncated to 464 tokens, a passage chunk that contains the answer",
        "beams": "1",
        "decoding mask": NOT_STATED,
        "test set": NOT_STATED,
        "metric": "BLEU-4 as in Dong et al. 2019 (Table 3 also gives BLEU-1 to 3)",
    },
}
UNITS = {"gigaword": "pair", "squad_qg": "question"}
METRIC_OURS = {
    "gigaword": "rouge-score's F1 (stemmed)",
    "squad_qg": "corpus BLEU-1 to 4 (sacrebleu's computation on lower-cased BERT-basic tokens, one reference per question)",
}
METRIC_WHY = {
    "gigaword": "UniLM's ROUGE-1.5.5 (Perl) needs XML::DOM; results/rouge_perl.md compares the two on these outputs",
    "squad_qg": "Du et al.'s script takes the questions on one sentence as its references; ours scores each question "
                "against its own, so absolute BLEU is not directly comparable with UniLM's",
}


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


def k(records: Records) -> str:
    ks = sorted(values(_sparse(records), "config.loss.k"))
    return ", ".join(map(str, ks)) if ks else "—"


def test_set(unit: str):
    def read(records: Records) -> str:
        r = _first(records)
        n = shown(records, "task_info.sizes.test")
        if get(r, "config.task.eval_size") is None:
            return f"{n} {unit}s (all)"
        return f"{n} {unit}s (a fixed random subset, data seed {get(r, 'config.task.data_seed')})"
    return read


def seeds(records: Records) -> str:
    return seeds_label(sorted(values(records, "seed"))) if records else NOT_RECORDED


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
    paper, unit = PAPER[task], UNITS[task]
    budget = "fits the cpu-scale budget: per seed, two trainings and their test decodes on a shared CPU"
    return [
        Setting("model", paper["model"], model,
                "no UniLM checkpoint is reachable here (offline); all-MiniLM-L6-v2, a BERT-format encoder we have, "
                "runs with UniLM's sequence-to-sequence attention mask (`scale=paper` takes UniLM v1)"),
        Setting("training data", paper["training data"], training_data(unit),
                "Gigaword-10k is a prefix of the training split: the same set" if task == "gigaword" else
                "a subset, to fit the budget; the split is Du et al.'s, the one UniLM's question-generation result uses"),
        Setting("epochs", paper["epochs"], epochs, budget),
        Setting("batch size", paper["batch size"], lambda rs: shown(rs, "config.train.batch_size"),
                "the cpu scale's batch for both tables; not tuned"),
        Setting("learning rate", paper["learning rate"], learning_rate,
                "a few hundred steps from an encoder whose LM-head transform starts fresh need a larger step than "
                "UniLM's fine-tuning rate; not tuned"),
        Setting("masking probability", paper["masking probability"], lambda rs: shown(rs, "config.model.mask_prob"),
                "UniLM's fine-tuning value, which the paper keeps"),
        Setting("label smoothing", paper["label smoothing"], lambda rs: shown(rs, "config.loss.label_smoothing"),
                "UniLM's fine-tuning value, which the paper keeps"),
        Setting("label smoothing of the sparse arm", NOT_STATED, sparse_smoothing,
                "sparse-softmax gives no probability outside its top k, so the smoothing mass stays inside them"),
        Setting("maximum length", paper["maximum length"], maximum_length,
                "a shorter input costs less attention; Gigaword's sources are short, so the cut touches few"
                if task == "gigaword" else
                "attention over the paper's input length does not fit the budget: a shorter chunk around the answer"),
        Setting("beams", paper["beams"], beams, "the beam the paper reports"),
        Setting("decoding mask", paper["decoding mask"], decoding_mask,
                "the paper's beam-5 rule, applied to the sparse arm at every beam; at beam 1 keeping the top 1 picks "
                "the same token as the full distribution (greedy decoding)"),
        Setting("sparse-softmax k", NOT_STATED, k, "the paper's best classification k (Fig. 2); it gives none for this table"),
        Setting("test set", paper["test set"], test_set(unit),
                "the whole test set where the decoding budget allows it; a fixed subset, the same for every arm, where not"),
        Setting("metric", paper["metric"], lambda rs: METRIC_OURS[task], METRIC_WHY[task]),
        Setting("seeds", NOT_STATED, seeds,
                f"each seed costs two trainings at this scale; a verdict needs {MIN_SEEDS}, and fewer say so"),
    ]
