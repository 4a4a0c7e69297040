"""A page names the folder of records it read and the command that rebuilds it from there.

``make reproduce-* SCALE=smoke`` builds pages from scratch/ (``results_dir=scratch``): such a page
must say ``scratch/runs/<experiment>``, not the committed results/runs it did not read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from softmax_zoo.provenance import REPO_ROOT
from softmax_zoo.reports.__main__ import builder, pages
from softmax_zoo.reports._pages import page_command, shown_path

RESULTS = REPO_ROOT / "results"


def test_a_folder_inside_the_repository_is_shown_relative_to_it(tmp_path):
    assert shown_path(REPO_ROOT / "scratch" / "runs" / "table5") == "scratch/runs/table5"
    assert shown_path(tmp_path / "runs") == tmp_path.resolve().as_posix() + "/runs"
    assert page_command("table5", REPO_ROOT / "results") == "python -m softmax_zoo.reports table5"
    assert page_command("table5", REPO_ROOT / "scratch") == "python -m softmax_zoo.reports table5 results_dir=scratch"


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory) -> Path:
    """A copy of the committed records (and the diagnostics the pages read) outside results/."""
    root = tmp_path_factory.mktemp("elsewhere")
    for folder in ("runs", "diagnostics"):
        shutil.copytree(RESULTS / folder, root / folder)
    return root


@pytest.mark.parametrize("page", pages())
def test_a_page_built_elsewhere_names_that_folder(page, elsewhere, tmp_path):
    builder(page)(elsewhere, tmp_path)
    text = (tmp_path / f"{page}.md").read_text(encoding="utf-8")
    assert "results/runs" not in text
    assert f"python -m softmax_zoo.reports {page} results_dir={elsewhere.resolve().as_posix()}" in text


def test_table5_says_which_folder_it_was_built_from(elsewhere, tmp_path):
    builder("table5")(elsewhere, tmp_path)
    text = (tmp_path / "table5.md").read_text(encoding="utf-8")
    assert f"from `{elsewhere.resolve().as_posix()}/runs/table5/`" in text
