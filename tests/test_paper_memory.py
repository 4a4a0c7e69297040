"""scripts/paper_memory.py: every paper-scale experiment arm's memory against a 141 GB GPU, from models
built on the meta device; run here on two experiments, and its committed page checked against its list."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts")]

import paper_memory  # noqa: E402


def test_a_small_and_a_large_experiment(tmp_path):
    """PTB's full softmax fits; lm1b's quadratic tree (263 GiB) does not, and its leaf_size=1024 variant does."""
    out = tmp_path / "pm"
    assert paper_memory.main(["--experiments", "kernel_bias_full", "lm1b_sampled_quadratic", "--out", str(out)]) == 0
    rows = {(r["experiment"], r["arm"]): r for r in json.loads(out.with_suffix(".json").read_text())["rows"]}
    assert list(rows) == [("kernel_bias_full", ""), ("lm1b_sampled_quadratic", ""),
                          ("lm1b_sampled_quadratic", "+loss.sampler.leaf_size=1024")]
    ptb = rows["kernel_bias_full", ""]
    assert ptb["fits"] and ptb["classes"] == 10_000 and ptb["rows_per_step"] == 64 * 20 and ptb["activations"] == "not estimated"
    quadratic = rows["lm1b_sampled_quadratic", ""]
    assert not quadratic["fits"] and quadratic["head_buffers"]["the kernel tree for C=793,471, d=2,048"] == pytest.approx(263.4, abs=0.1)
    assert quadratic["params_gib"] == pytest.approx(7.65, abs=0.01)  # C x 2,048 head + bias, C x 512 embedding, the LSTM
    assert rows["lm1b_sampled_quadratic", "+loss.sampler.leaf_size=1024"]["fits"]
    page = out.with_suffix(".md").read_text()
    assert "| lm1b_sampled_quadratic | - |" in page and "**no**" in page and "not estimated" in page


def test_every_experiment_is_planned():
    """Every experiment file is in the script's list (sparse_regime: the runs of sparse_regime_start's model)."""
    files = {p.stem for p in (ROOT / "configs" / "experiment").glob("*.yaml") if not p.stem.startswith("_")}
    assert files - set(paper_memory.EXPERIMENTS) == {"sparse_regime"}


def test_the_committed_page_has_every_arm():
    """results/paper_memory.json holds one row per arm of the script's list: rerun the script when it changes."""
    committed = json.loads((ROOT / "results" / "paper_memory.json").read_text())["rows"]
    expected = [(e, " ".join(arm)) for e in paper_memory.EXPERIMENTS for arm in paper_memory.arms(e)]
    assert [(r["experiment"], r["arm"]) for r in committed] == expected
