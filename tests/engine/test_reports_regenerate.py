"""Every committed page in results/ rebuilds from its records byte for byte (``make check-pages``)."""

from pathlib import Path

import pytest

from softmax_zoo.reports.__main__ import differences, pages

RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_every_page_module_has_a_committed_page():
    assert pages() == ["fig2", "kernel_bias", "lm1b", "sparse_regime", "stable", "table3", "table5"]
    assert all((RESULTS / f"{page}.md").is_file() for page in pages())


@pytest.mark.parametrize("page", pages())
def test_page_rebuilds_identically(page):
    assert differences(page, RESULTS) == []
