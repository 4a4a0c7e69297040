"""The sparse_helps page (reports/sparse_helps.py): the crossing, the band, the threshold verdict, the real runs, the page."""

from __future__ import annotations

import json
import math

import pytest

from softmax_zoo.provenance import REPO_ROOT
from softmax_zoo.reports import sparse_helps as page
from softmax_zoo.reports._stats import over_seeds
from softmax_zoo.reports._verdicts import VerdictKind
from softmax_zoo.studies import sparse_helps as study
from tests.studies.test_sparse_helps import TINY


def test_crossing_is_where_delta_last_turns_non_negative():
    assert page.crossing([0.2, 0.5, 0.8], [-0.3, -0.1, 0.1]) == pytest.approx(0.65)
    assert page.crossing([0.8, 0.2, 0.5], [0.1, -0.3, -0.1]) == pytest.approx(0.65)  # any order of levels
    assert page.crossing([0.2, 0.5, 0.8], [-0.3, 0.1, -0.1]) is None  # Δ < 0 at the top level: no gain in the range
    assert page.crossing([0.2, 0.5, 0.8], [0.1, 0.2, 0.0]) is None  # never below 0: no sign change
    assert page.crossing([0.2, 0.5, 0.8, 0.9], [-0.3, 0.1, -0.1, 0.2]) == pytest.approx(0.8 + 0.1 / 3)  # the last change counts


def test_prediction_band_is_wider_than_the_interval_of_the_mean():
    values = [0.1, 0.2, 0.4]
    low, high = page.prediction_band(values)
    d = over_seeds(dict(enumerate(values)))
    assert low < d.low < d.high < high
    assert (high - low) / (d.high - d.low) == pytest.approx(math.sqrt(1 + 3))  # √(1 + 1/n) / √(1/n)
    assert all(math.isnan(v) for v in page.prediction_band([0.1]))


def point(share, deltas):
    return {"share": share, "accuracy": over_seeds(dict(enumerate(deltas)))}


def test_threshold_verdict_needs_seeds_a_crossing_and_a_gain_above_it():
    below, above = point(0.3, [-0.3, -0.2, -0.25]), point(0.95, [0.02, 0.03, 0.025])
    crossings = {0: 0.6, 1: 0.62, 2: 0.61}
    assert page.threshold_kind([below, above], [0, 1, 2], crossings, (0.58, 0.64))[0] is VerdictKind.SUPPORTED
    flat = point(0.95, [0.02, -0.01, 0.0])
    assert page.threshold_kind([below, flat], [0, 1, 2], crossings, (0.58, 0.64))[0] is VerdictKind.INCONCLUSIVE
    gain_below = point(0.3, [0.1, 0.2, 0.15])
    assert page.threshold_kind([gain_below, above], [0, 1, 2], crossings, (0.58, 0.64))[0] is VerdictKind.CONTRADICTS
    assert page.threshold_kind([below, above], [0, 1, 2], {**crossings, 2: None}, (0.58, 0.64))[0] is VerdictKind.INCONCLUSIVE
    assert page.threshold_kind([below, above], [0], {0: 0.6}, None)[0] is VerdictKind.SINGLE_RUN


def test_band_at_interpolates_between_levels_and_is_none_outside():
    curve = {"band": [{"share": 0.4, "band": (-1.0, 0.0)}, {"share": 0.8, "band": (-0.2, 0.2)}]}
    assert page.band_at(curve, 0.6) == pytest.approx((-0.6, 0.1))
    assert page.band_at(curve, 0.9) is None and page.band_at(curve, 0.3) is None


def test_real_runs_are_placed_from_their_records(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    for folder in ("table5", "fig2_iflytek"):
        (runs / folder).symlink_to(REPO_ROOT / "results" / "runs" / folder)
    curve = {"band": [{"share": 0.3, "band": (-2.0, 0.0)}, {"share": 0.9, "band": (-0.1, 0.1)}]}
    placed, unplaced = page.real_runs(tmp_path, {(20, "cold"): curve, (20, "init"): curve})
    by_key = {p["key"]: p for p in placed}
    cold = by_key["table5"]
    soft = [json.loads(p.read_text()) for p in sorted((runs / "table5").glob("*_minilm_softmax_cpu_seed*.json"))]
    sparse = [json.loads(p.read_text()) for p in sorted((runs / "table5").glob("*_minilm_sparse_softmax_cpu_seed*.json"))]
    assert cold["seeds"] == [0, 1, 2] and cold["classes"] == 30522
    assert cold["share"] == pytest.approx(sum(r["metrics"]["test/target_in_topk"] for r in soft) / 3)
    assert cold["log_delta"].delta == pytest.approx(sum(math.log(b["metrics"]["test/rouge1_beam1"] / a["metrics"]["test/rouge1_beam1"])
                                                        for a, b in zip(soft, sparse)) / 3)
    assert cold["arms"]["sparse"]["crowd"] == pytest.approx(sum(r["metrics"]["test/logits_near_kth"] for r in sparse) / 3)
    assert cold["inside"] is not None and by_key["table5_init"]["seeds"] == [0, 1, 2]
    assert by_key["iflytek"]["classes"] == 119 and by_key["iflytek"]["inside"] is not None
    assert unplaced == [{"key": "iflytek", "epoch": None, "ks": [5, 10, 50, 100]}]  # the softmax share is at k=20 only


def test_the_study_builds_its_page_and_ledger_rows(tmp_path):
    setting = study.Setting(**{**TINY.__dict__, "levels": (0.3, 0.6, 0.95)})
    study.run_all(tmp_path / "runs" / study.EXPERIMENT, seeds=3, setting=setting)
    (tmp_path / "claims.md").write_text("")
    data = page.summarise(tmp_path)
    assert 0 < data["cpu_slowest"] <= data["cpu_minutes"] * 60  # the records' CPU seconds, summed and their maximum
    page.build(tmp_path)
    assert (tmp_path / "sparse_helps.md").is_file() and (tmp_path / "sparse_helps.png").is_file()
    ledger = json.loads((tmp_path / "claims.json").read_text())
    for row in ("sparse-helps-threshold-k5", "sparse-helps-threshold-k5-init", "sparse-helps-threshold-k2",
                "sparse-helps-crowding-k5", "sparse-helps-loss-k2", "sparse-helps-real-runs", "sparse-helps-frequent-choice"):
        assert ledger[row]["source"] == "sparse_helps", row
    assert "form: a threshold" in ledger["sparse-helps-threshold-k5"]["claim"]
    assert "form: a trend" in ledger["sparse-helps-crowding-k5"]["claim"]
    assert ledger["sparse-helps-real-runs"]["verdict"].startswith("descriptive")
    assert ledger["sparse-helps-frequent-choice"]["verdict"].startswith("not tested")
    assert ledger["sparse-helps-crowding-k5"]["verdict"].split(":")[0].split(" (")[0] in ("supported", "contradicts", "inconclusive")


def test_the_page_without_records_says_how_to_make_them(tmp_path):
    page.build(tmp_path)
    assert "make reproduce-sparse-helps" in (tmp_path / "sparse_helps.md").read_text()
