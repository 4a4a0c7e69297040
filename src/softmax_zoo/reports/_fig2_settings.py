"""The classification settings of Sun et al. 2021's Fig. 1 / Fig. 2 beside ours, one column per task.

The paper's text names its datasets, its best k and that k's micro-F1, and no training setting:
model, epochs, batch, learning rate, length and seeds are all :data:`~._settings.NOT_STATED`.
Ours are read from each task's records (:func:`fig2_settings`, rows of
:func:`softmax_zoo.reports._settings.settings_rows`); the paper's statements and our reasons are
templates/_fig2_settings.j2's.
"""

from __future__ import annotations

from typing import Any

from ..records import get
from ._fig2_claims import PAPER_F1
from ._fig2_summary import PAPER_K, task_name
from ._render import words
from ._settings import NOT_RECORDED, NOT_STATED, Records, Setting, pretrained_name, seeds, shown, sparse_ks, values
from ._verdicts import MIN_SEEDS


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


def _metric(records: Records) -> str:
    text = "test micro-F1 over all classes (single-label: accuracy)"
    return text + ("; in-scope accuracy beside it" if values(records, "config.task.oos_label") else "")


def fig2_settings() -> list[Setting]:
    """The rows of the page's settings table: the paper's values, ours per task, and why ours (templates/_fig2_settings.j2)."""
    paper_f1 = [f"{v} on {task_name(t)}" for t, v in sorted(PAPER_F1.items(), key=lambda kv: -kv[1])]
    text = words("_fig2_settings.j2", PAPER_K=PAPER_K, MIN_SEEDS=MIN_SEEDS, paper_f1=paper_f1)
    readers = {
        "training data": _data, "model": _model, "epochs": lambda rs: shown(rs, "config.train.epochs"),
        "batch size": lambda rs: shown(rs, "config.train.batch_size"),
        "learning rate": lambda rs: shown(rs, "config.train.lr", lambda v: f"{v:g}"),
        "maximum length (tokens)": lambda rs: shown(rs, "config.task.max_length"), "sparse-softmax k": sparse_ks, "metric": _metric,
        "seeds": seeds,
    }
    return [Setting(name, text.paper.get(name, NOT_STATED), read, text.why[name]) for name, read in readers.items()]
