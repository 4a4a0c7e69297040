"""The UniLM fine-tuning settings of Sun et al. 2021's Table 5 (Gigaword-10k) and Table 3 (SQuAD QG) beside ours.

:func:`seq2seq_settings` gives one task's "the paper's setting and ours" (:func:`._settings.settings_data`): the
paper's values as its §4 states them, ours read from each column's records (:func:`facts`), and why ours at the cpu
scale. Every word, ours included, is templates/_seq2seq_settings.j2's.
"""

from __future__ import annotations

from typing import Any

from ..records import get
from ._render import words
from ._settings import NOT_RECORDED, NOT_STATED, SPARSE, Records, Setting, pretrained_name, seeds, settings_data, shown, sparse_ks, values
from ._verdicts import MIN_SEEDS

# .paper: task -> setting -> Sun et al. 2021's §4, as its text states it; .why*: why ours; .ours: ours in words
WORDS = words("_seq2seq_settings.j2", NOT_STATED=NOT_STATED, NOT_RECORDED=NOT_RECORDED, MIN_SEEDS=MIN_SEEDS)
SHOWN = {  # the values shown as the records hold them (:func:`._settings.shown`)
    "batch size": "config.train.batch_size", "masking probability": "config.model.mask_prob",
    "label smoothing": "config.loss.label_smoothing", "epochs": "config.train.epochs", "steps": "timing.global_steps",
    "train": "task_info.sizes.train", "test": "task_info.sizes.test",
    "source_len": "config.task.max_source_len", "target_len": "config.task.max_target_len",
}
FIRST = {  # the values read from a column's first record
    "checkpoint": "config.model.checkpoint", "model": "config.model.name", "fresh": "task_info.fresh_weights",
    "train_size": "config.task.train_size", "subset": "config.task.train_subset", "eval_size": "config.task.eval_size",
    "data_seed": "config.task.data_seed", "lr": "config.train.lr", "warmup": "config.train.warmup_ratio",
    "schedule": "config.train.lr_scheduler", "cut_train": "task_info.truncation.train", "cut_test": "task_info.truncation.test",
}


def facts(records: Records) -> dict[str, Any]:
    """What the template's ``ours`` words of one column's records (both arms of a setting, or the runs of one start)."""
    first = records[0] if records else {}
    sparse = [r for r in records if get(r, "choices.loss") == SPARSE]
    return {name: shown(records, key) for name, key in SHOWN.items()} | {name: get(first, key) for name, key in FIRST.items()} | {
        "sparse-softmax k": sparse_ks(records), "seeds": seeds(records), "any": bool(records),
        "beams": shown(records, "config.task.decode.beams", lambda b: " and ".join(map(str, b))),
        "pretrained": pretrained_name(get(first, "config.model.checkpoint")), "init": bool(values(records, "config.init_from")),
        "smoothing_over": values(sparse, "config.loss.smoothing_over"), "topk": values(sparse, "config.task.decode.topk"),
    }


def seq2seq_settings(task: str, columns: dict[str, Records], page: str | None = None) -> dict[str, Any]:
    """The settings part of ``task`` ("gigaword" or "squad_qg") for ``columns`` (name -> records); ``page`` names a
    page whose own reasons replace some of the tables' (the template's ``why_of_page``: "sparse_regime")."""
    if task not in WORDS.paper or (page is not None and page not in WORDS.why_of_page):
        raise ValueError(f"no settings of task {task!r} for page {page!r}")
    why = WORDS.why | WORDS.why_of_task[task] | WORDS.why_of_page.get(page, {})
    rows = [Setting(name, WORDS.paper[task].get(name, NOT_STATED), lambda rs, name=name: str(WORDS.ours(name, facts(rs), task)), why[name])
            for name in WORDS.settings]
    return settings_data(rows, columns, WORDS.source_of_page[page] if page else WORDS.source[task])
