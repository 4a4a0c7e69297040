"""Pages key arms by what they are (the loss choice and its options) and word them in templates: relabelling a
variant (its registered ``label``) changes the words naming it on a page, nothing else."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from softmax_zoo.losses.machinery import registry
from softmax_zoo.reports.__main__ import builder, pages

RESULTS = Path(__file__).resolve().parents[2] / "results"
MARK = "relabelled-"  # put before each label: a word no page uses
RELABELLED = ("softmax", "sparse_softmax", "adaptive_softmax", "sampled_softmax")


@pytest.fixture
def relabelled(monkeypatch) -> None:
    """The variants of :data:`RELABELLED` with :data:`MARK` before their labels."""
    for name in RELABELLED:
        variant = registry.variant(name)
        monkeypatch.setitem(registry._VARIANTS, name, dataclasses.replace(variant, label=MARK + variant.label))


@pytest.mark.parametrize("page", pages())
def test_relabelling_a_variant_changes_only_the_words_naming_it(relabelled, page, tmp_path):
    builder(page)(RESULTS, tmp_path)
    text = (tmp_path / f"{page}.md").read_text(encoding="utf-8")
    assert text.replace(MARK, "") == (RESULTS / f"{page}.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("page, label", [("table5", "relabelled-sparse"), ("lm1b", "relabelled-adaptive")])
def test_a_page_words_its_arms_by_the_registered_label(relabelled, page, label, tmp_path):
    builder(page)(RESULTS, tmp_path)
    assert label in (tmp_path / f"{page}.md").read_text(encoding="utf-8")  # e.g. a table row or the throughput line
