"""Every committed page in results/ rebuilds from its records byte for byte (``make check-pages``)."""

from pathlib import Path

import pytest

from softmax_zoo.reports.__main__ import differences, pages

RESULTS = Path(__file__).resolve().parents[2] / "results"


def test_every_page_module_has_a_committed_page():
    # a page is found by its module's name: adding one needs no registration beyond the module itself
    assert {"fig2", "kernel_bias", "lm1b", "sparse_regime", "stable", "table3", "table5"} <= set(pages())
    assert [page for page in pages() if not (RESULTS / f"{page}.md").is_file()] == []


@pytest.mark.parametrize("page", pages())
def test_page_rebuilds_identically(page):
    assert differences(page, RESULTS) == []
