"""OOS-eval / CLINC150 (Larson et al., EMNLP 2019): 150 intents + out-of-scope, in English.

Release: clinc/oos-eval ``data/data_<variant>.json``, one object with keys train/val/test and
oos_train/oos_val/oos_test, each a list of ``[text, intent]``. Default: the "Full" setting
(data_full.json) with "oos" as a 151st class (the usual OOS-eval setting, Sun et al. 2021);
``oos=false`` keeps the 150 in-scope intents only (the out-of-scope rows are dropped and counted).
Labels: the in-scope intents in alphabetical order, then "oos" last (index 150).
"""

from __future__ import annotations

import sys
from pathlib import Path

from softmax_zoo.data.layout import read_json
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import register
from softmax_zoo.data.prepare.writer import Prepared

RAW_NAME = "clinc_oos"
KIND = "classification"
OPTIONS = {"variant": "full", "oos": True}
VARIANT_FILES = {
    "full": "data_full.json",
    "small": "data_small.json",
    "imbalanced": "data_imbalanced.json",
    "oos_plus": "data_oos_plus.json",
}
OOS = "oos"
_KEYS = {"train": ("train", "oos_train"), "validation": ("val", "oos_val"), "test": ("test", "oos_test")}
# The hub copy has no "full" config: its "plus" config is data_oos_plus.json (250 OOS train rows).
HUB = {"id": "clinc/clinc_oos", "revision": "155b9c710419136e17307b80d0a13e68cd46b4ec"}
_HUB_CONFIGS = {"oos_plus": "plus", "small": "small", "imbalanced": "imbalanced"}


def _check_variant(variant: str) -> None:
    if variant not in VARIANT_FILES:
        raise ValueError(f"variant must be one of {sorted(VARIANT_FILES)}, got {variant!r}")


def _build(rows: dict[str, list[tuple[str, str]]], opts: dict) -> Prepared:
    """rows: split -> [(text, intent)] with OOS rows included, as in the release."""
    in_scope = sorted({intent for _, intent in rows["train"] if intent != OOS})
    labels = [*in_scope, OOS] if opts["oos"] else in_scope
    splits, dropped = {}, {}
    for split, pairs in rows.items():
        if not opts["oos"]:
            n_oos = sum(intent == OOS for _, intent in pairs)
            if n_oos:
                dropped[split] = {"out-of-scope row (oos=false)": n_oos}
            pairs = [p for p in pairs if p[1] != OOS]
        splits[split] = [{"text": text.strip(), "label": intent} for text, intent in pairs]
    note = f"{len(in_scope)} in-scope intents in alphabetical order" + (', then "oos" last' if opts["oos"] else "")
    return Prepared(KIND, splits, labels=labels, dropped=dropped, meta={"label_order": note})


def load_local(raw: RawDir, opts: dict) -> Prepared:
    _check_variant(opts["variant"])
    path = raw.require(VARIANT_FILES[opts["variant"]], what=f"OOS-eval {opts['variant']!r} file")
    data = read_json(path)
    rows = {}
    for split, keys in _KEYS.items():
        rows[split] = []
        for key in keys:
            if key not in data:
                raise ValueError(f"{path}: key {key!r} missing; expected {[k for ks in _KEYS.values() for k in ks]}")
            for i, pair in enumerate(data[key]):
                if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                    raise ValueError(f"{path}: {key}[{i}]: expected [text, intent], got {pair!r}")
                rows[split].append((pair[0], pair[1]))
    return _build(rows, opts)


def hub_spec(opts: dict) -> dict:
    _check_variant(opts["variant"])
    if opts["variant"] not in _HUB_CONFIGS:
        raise ValueError(
            f"variant={opts['variant']!r} is not on the hub ({HUB['id']} has {sorted(_HUB_CONFIGS)}); "
            "use source=local with data_full.json, or variant=oos_plus"
        )
    return {**HUB, "config": _HUB_CONFIGS[opts["variant"]]}


def from_hub(ds, opts: dict, raw: RawDir | None = None) -> Prepared:
    """ds: DatasetDict with train/validation/test of {"text", "intent": ClassLabel}."""
    names = ds["train"].features["intent"].names
    rows = {split: [(r["text"], names[r["intent"]]) for r in ds[split]] for split in _KEYS}
    return _build(rows, opts)


def generate(root: Path, seed: int = 0) -> Path:
    """Generated data in this task's prepared format under ``root`` (tests, the paper-scale dry run).

    Short English utterances of 4-10 words; the last class is the out-of-scope one."""
    # imported here: the tests' generators (and torch) are no part of preparing real data
    from softmax_zoo.data.prepare.generated import classification_folder, english

    return classification_folder(root, "clinc_oos", english(4, 10), last_label=OOS, seed=seed)


register("clinc_oos", sys.modules[__name__])
