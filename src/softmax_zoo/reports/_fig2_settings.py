"""The classification settings of Sun et al. 2021's Fig. 1 / Fig. 2 beside ours, one column per task.

The paper's text names its datasets, its best k and that k's micro-F1, and no training setting:
model, epochs, batch, learning rate, length and seeds are all :data:`~._settings.NOT_STATED`.
Ours are read from each task's records (:func:`fig2_settings`, rows of
:func:`softmax_zoo.reports._settings.settings_rows`).
"""

from __future__ import annotations

from typing import Any

from ..records import get
from ._fig2_claims import PAPER_F1
from ._fig2_summary import PAPER_K, task_name
from ._settings import NOT_RECORDED, NOT_STATED, Records, Setting, pretrained_name, shown, values
from ._stats import seeds_label
from ._verdicts import MIN_SEEDS

PAPER_DATASETS = "WoS-46985, OOS-eval, RCV1-v2 and IFLYTEK (sizes and splits not stated)"


def encoder(model: dict[str, Any]) -> str:
    """How much of the encoder trains: frozen with cached pooled features, its top layers on cached states, or all of it."""
    if model.get("cache_features"):
        return f"frozen encoder (pooled features cached once), {model.get('mlp_layers')} trainable MLP layer(s) + head"
    if model.get("cache_layers"):
        return (f"top {model['cache_layers']} encoder layer(s) trained with the head on cached token states "
                "of the frozen layers below")
    return "whole encoder trained"


def _model(records: Records) -> str:
    model = get(records[0], "config.model") if records else None
    if not model:
        return NOT_RECORDED
    return f"`{model.get('name')}` ({pretrained_name(model.get('pretrained'))}, {encoder(model)})"


def _data(records: Records) -> str:
    r = records[0] if records else {}
    return f"{get(r, 'task_info.examples.train') or '?'} training examples, {get(r, 'task_info.num_classes') or '?'} classes"


def _ks(records: Records) -> str:
    ks = sorted(values([r for r in records if get(r, "choices.loss") == "sparse_softmax"], "config.loss.k"))
    return ", ".join(map(str, ks)) or "—"


def _metric(records: Records) -> str:
    text = "test micro-F1 over all classes (single-label: accuracy)"
    return text + ("; in-scope accuracy beside it" if values(records, "config.task.oos_label") else "")


def fig2_settings() -> list[Setting]:
    """The rows of the page's settings table: the paper's values, ours per task, and why ours."""
    tuned = ("set per task to fit the cpu budget, some by validation micro-F1 and some not tuned (each task config's "
             "`scales.cpu` block, and the fine-tuned runs' experiment config, say which)")
    paper_f1 = " and ".join(f"{v} on {task_name(t)}" for t, v in sorted(PAPER_F1.items(), key=lambda kv: -kv[1]))
    return [
        Setting("training data", PAPER_DATASETS, _data, "the data held here: each task's caveat on this page says how it differs"),
        Setting("model", NOT_STATED, _model,
                "no pretrained Chinese checkpoint is available offline, so IFLYTEK's model trains from scratch; fine-tuning "
                "all of all-MiniLM-L6-v2 does not fit the cpu budget, so the English tasks cache its pooled features once "
                "and train a small head on them (the fine-tuned column trains its top layer(s) too); `scale=paper` fine-tunes "
                "BERT-base, our choice"),
        Setting("epochs", NOT_STATED, lambda rs: shown(rs, "config.train.epochs"), tuned),
        Setting("batch size", NOT_STATED, lambda rs: shown(rs, "config.train.batch_size"), tuned),
        Setting("learning rate", NOT_STATED, lambda rs: shown(rs, "config.train.lr", lambda v: f"{v:g}"), tuned),
        Setting("maximum length (tokens)", NOT_STATED, lambda rs: shown(rs, "config.task.max_length"), tuned),
        Setting("sparse-softmax k", f"k={PAPER_K} is best when there are about 100 classes; the text names no other k", _ks,
                f"a grid around the paper's k={PAPER_K}, up to about the class count"),
        Setting("metric", f"micro-F1; at k={PAPER_K}: {paper_f1}", _metric,
                "single-label micro-F1 is accuracy; the paper does not say whether OOS-eval's counts the out-of-scope class"),
        Setting("seeds", NOT_STATED, lambda rs: seeds_label(sorted(values(rs, "seed"))) if rs else NOT_RECORDED,
                f"a verdict needs {MIN_SEEDS} seeds (results/claims.md)"),
    ]
