"""README.md's results status block is generated from the records and the claims ledger, and is current."""

from __future__ import annotations

import pytest

from softmax_zoo import provenance, records
from softmax_zoo.reports.__main__ import BEGIN, END, headlines, page_module, pages, readme_differs, status_rows, with_status
from softmax_zoo.reports._pages import CLAIMS_FILE, read_claims, update_claims


def test_the_committed_readme_block_is_the_generated_one():
    assert not readme_differs()  # else: python -m softmax_zoo.reports readme


def test_every_page_heads_its_experiments_with_a_row_of_the_ledger():
    found, ledger = headlines(), read_claims(provenance.REPO_ROOT / "results" / CLAIMS_FILE)
    assert {page for page, _ in found.values()} == {page for page in pages() if page_module(page).HEADLINES}
    no_records = {page for page in pages() if not page_module(page).HEADLINES}
    assert no_records == {"grad_precision", "sampled_uniform"}  # measurements, no experiment of run records
    assert [claim for _, claim in found.values() if claim not in ledger] == []


def test_every_headline_is_the_main_claim_of_its_figure():
    """Fig. 2's experiments are headed by its main claim, a wide range of k, on every task alike."""
    fig2 = {experiment: claim for experiment, (page, claim) in headlines().items() if page == "fig2"}
    assert fig2 and all("-robust-k-" in claim for claim in fig2.values()), fig2


def test_rows_count_runs_scales_and_seeds_and_take_the_headline_verdict(tmp_path):
    for seed in (2, 0):
        records.write_record({"experiment": "table5", "run_name": f"r{seed}", "seed": seed,
                              "config": {"scale": {"name": "cpu"}}}, tmp_path / "runs")
    update_claims([{"id": "table5_cpu+init_beam1_rouge1", "claim": "c", "paper": "+0.67", "ours": "o",
                    "verdict": "inconclusive (seeds 0, 2): Δ +0.1 [-1.0, +1.2]; a caveat", "source": "table5",
                    "form": {"kind": "superiority", "cue": "c"}}],
                  tmp_path / "claims.md")
    (row,) = status_rows(tmp_path)
    assert (row["experiment"], row["runs"], row["scales"], row["seeds"]) == ("table5", 2, ["cpu"], [0, 2])
    assert row["verdict"] == "inconclusive (seeds 0, 2): Δ +0.1 [-1.0, +1.2]; a caveat" and row["page"] == "table5"  # whole


def test_the_block_is_replaced_between_its_markers_only():
    text = f"a\n{BEGIN}\nold\n{END}\nb\n"
    assert with_status(text, f"{BEGIN}\nnew\n{END}") == f"a\n{BEGIN}\nnew\n{END}\nb\n"
    with pytest.raises(ValueError, match="no results status block"):
        with_status("no markers", "x")
