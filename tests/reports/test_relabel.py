"""Pages key arms by what they are (the loss choice and its options) and word them in templates: relabelling a
variant (its registered ``label``) changes the words naming it on a page, nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from softmax_zoo.losses import registry
from softmax_zoo.reports.__main__ import builder, pages

RESULTS = Path(__file__).resolve().parents[2] / "results"
NOT_YET = ("lm1b",)  # pages still keying arms by labels; it only shrinks
RELABELLED = {"softmax": "relabelled-full", "sparse_softmax": "relabelled-sparse"}  # each label a word no page uses


@pytest.fixture
def labels(monkeypatch) -> dict[str, str]:
    """new label -> old label, with the variants of :data:`RELABELLED` relabelled."""
    old = {}
    for name, label in RELABELLED.items():
        variant = registry.variant(name)
        old[label] = variant.label
        monkeypatch.setitem(registry._VARIANTS, name, dataclasses.replace(variant, label=label))
    return old


@pytest.mark.parametrize("page", [p for p in pages() if p not in NOT_YET])
def test_relabelling_a_variant_changes_only_the_words_naming_it(labels, page, tmp_path):
    builder(page)(RESULTS, tmp_path)
    text = (tmp_path / f"{page}.md").read_text(encoding="utf-8")
    for new, old in labels.items():
        text = text.replace(new, old)
    assert text == (RESULTS / f"{page}.md").read_text(encoding="utf-8")


def test_the_seq2seq_pages_word_their_arms_by_the_registered_label(labels, tmp_path):
    builder("table5")(RESULTS, tmp_path)
    text = (tmp_path / "table5.md").read_text(encoding="utf-8")
    assert all(label in text for label in labels)  # e.g. the throughput line names each arm by its label
