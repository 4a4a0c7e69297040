"""The ledger rows of the kernel review, the fix paper and the adaptive-softmax abstract that have no seeds
behind them (deterministic computations, design properties) or that come from one setting's records."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from softmax_zoo.reports._kernel_diagnostics import deviation_row, spearman
from softmax_zoo.reports._kernel_grid import FLAT_GAIN, diminishing_row, flat_from, gains_per_doubling, gaps_by_m
from softmax_zoo.reports._pages import read_claims, said
from softmax_zoo.reports._stable_examples import examples, loss_forms
from softmax_zoo.reports._verdicts import VerdictKind, by_construction, deterministic
from softmax_zoo.reports.kernel_bias import DESIGN_IDS
from softmax_zoo.run_record import RunRecord

REPO = Path(__file__).resolve().parents[2]
LEDGER = REPO / "results" / "claims.md"


def test_deterministic_and_by_construction_verdicts():
    v = deterministic("0 vs 0", True, where="torch 2.0, CPU, float32")
    assert v.kind is VerdictKind.DETERMINISTIC and said(v) == (
        "deterministic (no training, no seed; torch 2.0, CPU, float32): matches the paper: 0 vs 0")
    assert "differs from the paper" in said(deterministic("1 vs 0", False, where="x"))
    b = by_construction("reads h and w", "tests/a.py::test_b")
    assert b.kind is VerdictKind.BY_CONSTRUCTION and said(b) == "by construction: reads h and w; checked by tests/a.py::test_b"
    with pytest.raises(ValueError, match="pytest node id"):
        by_construction("reads h and w", "a test somewhere")


def test_the_fix_papers_examples_become_deterministic_rows():
    rows = {r["id"]: r for r in examples(loss_forms(REPO / "results"))}
    assert set(rows) == {"stable-example-collapse", "stable-example-cancellation", "stable-equivalence", "stable-kd-equivalence",
                         "stable-kd-nearly-identical"}
    assert rows["stable-kd-nearly-identical"]["shown"] and rows["stable-kd-nearly-identical"]["deltas"] == [1e-3, 1e-4, 1e-5]
    assert rows["stable-example-collapse"]["matches"] and rows["stable-example-cancellation"]["zero"]
    assert rows["stable-example-cancellation"]["residual"] and rows["stable-equivalence"]["within"]
    assert rows["stable-kd-equivalence"]["off"] == []  # every (scale, T) within the tolerance


def test_gains_per_doubling_and_where_they_flatten():
    gains = gains_per_doubling({8: 1.0, 32: 0.5, 128: 0.45, 512: 0.44})
    assert gains == [(8, 32, pytest.approx(0.25)), (32, 128, pytest.approx(0.025)), (128, 512, pytest.approx(0.005))]
    assert flat_from(gains) == 32
    assert flat_from([(8, 16, 0.01), (16, 32, 2 * FLAT_GAIN)]) is None  # the last doubling still gains


def test_spearman_with_ties():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([0, 0, 1, 2], [0, 1, 2, 3]) == pytest.approx(0.9486832980505138)  # scipy.stats.spearmanr's value
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def _record(sampler, m, val_loss, curve=None, seed=0):
    loss = "softmax" if sampler is None else "sampled_softmax"
    history = [{"step": s, "val/curve_perplexity": math.exp(v)} for s, v in (curve or {}).items()]
    return RunRecord.of({"seed": seed, "run_name": f"{sampler}_{m}", "choices": {"loss": loss, "sampler": sampler},
                         "config": {"loss": {"num_samples": m}}, "metrics": {"val/loss": val_loss}, "history": history})


def test_diminishing_returns_reads_the_curves_when_every_run_has_one():
    full = _record(None, None, 5.0, {0: 9.0, 100: 6.0, 200: 5.0})
    runs = [full, *(_record("quadratic", m, 5.0 + g, {0: 9.0, 100: 6.0 + g, 200: 5.0 + g}) for m, g in ((8, 0.3), (32, 0.1), (128, 0.05)))]
    with_curves, gaps = gaps_by_m(runs)
    assert with_curves and gaps["quadratic"] == pytest.approx({8: 0.3, 32: 0.1, 128: 0.05})
    row, = diminishing_row(runs, "kernel_bias_paper")
    assert row["id"] == "kernel-bias-diminishing-returns-paper-like" and row["paper_setting"]
    assert row["gains"]["quadratic"] == [(8, 32, pytest.approx(0.1)), (32, 128, pytest.approx(0.025))]
    assert row["seeds"] == [0] and row["flats"] == {"quadratic": (32, 128)}  # flat from m=32; one seed decides nothing
    without_curves = [_record(None, None, 5.0), _record("uniform", 8, 7.0), _record("uniform", 16, 6.0)]
    assert gaps_by_m(without_curves) == (False, {"uniform": {8: 2.0, 16: 1.0}})
    assert diminishing_row(without_curves, "kernel_bias")[0]["flats"] == {"uniform": (None, 16)}  # not flat up to m=16


def test_deviation_row_ranks_kl_against_bias_at_the_last_checkpoint(tmp_path):
    assert deviation_row(tmp_path, "kernel_bias") == []
    folder = tmp_path / "diagnostics" / "sampler_bias" / "kernel_bias"
    folder.mkdir(parents=True)
    for step, sign in ((0, -1), (400, +1)):  # only the later checkpoint counts
        rows = [{"sampler": s, "m": 8, "kl": kl, "loss_bias": -b, "grad_bias": sign * b}
                for s, kl, b in (("uniform", 3.0, 0.9), ("unigram", 1.0, 0.2), ("softmax", 0.0, 0.0))]
        meta = {"step": step, "rows": 10, "draws": 4, "seed": 7, "run_name": "ptb_full_softmax_cpu_seed2"}
        (folder / f"s{step}.json").write_text(json.dumps({"meta": meta, "rows": rows, "stats": {}}))
    row, = deviation_row(tmp_path, "kernel_bias")
    assert row["meta"]["step"] == 400 and row["seed"] == 2 and row["rho"] == {8: pytest.approx((1.0, 1.0))}
    assert row["low"] == pytest.approx(1.0)  # the smallest ρ over m, from one checkpoint of one run


@pytest.mark.parametrize("row_id", DESIGN_IDS)
def test_design_rows_name_tests_that_exist(row_id):
    nodes = re.findall(r"tests/\S+::test_\w+", read_claims(LEDGER)[row_id]["verdict"])
    assert nodes
    for node in nodes:
        path, name = node.split("::")
        assert re.search(rf"^def {name}\(", (REPO / path).read_text(), re.M), f"{node} does not exist"


def test_committed_ledger_has_the_review_rows_and_marks_unverified_numbers():
    rows = read_claims(LEDGER)
    kinds = {
        "stable-example-collapse": "deterministic", "stable-example-cancellation": "deterministic", "stable-equivalence": "deterministic",
        "stable-kd-equivalence": "deterministic", "stable-kd-nearly-identical": "deterministic",
        "kernel-design-last-hidden-layer": "by construction", "kernel-design-sampling-only": "by construction",
        "kernel-design-partition-function": "by construction", "kernel-bias-vs-unigram-paper-like": "not tested",
        "kernel-bias-diminishing-returns-paper-like": "inconclusive", "kernel-bias-deviation-paper-like": "single run",
        "kernel-bias-adapts-low-bias": "single run", "kernel-bias-adapts-low-bias-paper-like": "single run",
        "lm1b-adaptive-gpu": "not tested", "lm1b-adaptive-cutoffs": "not tested", "lm1b-europarl": "not tested",
        "lm1b-adaptive-speed-ppl": "supported",  # the regularised baselines at seeds 0, 1, 2
    }
    for id_, kind in kinds.items():
        assert rows[id_]["verdict"].startswith(kind), (id_, rows[id_]["verdict"])
    for id_ in ("lm1b-adaptive-43.9", "lm1b-adaptive-speed-ppl"):
        assert rows[id_]["paper"].endswith("unverified)") or "unverified, not used)" in rows[id_]["paper"]
    assert not [id_ for id_ in rows if id_.endswith("-paper-setting")]  # the paper-like setting is ours: its ids say so


def test_the_float32_epsilon_the_equivalence_bound_uses_is_torchs():
    import torch

    from softmax_zoo.reports._stable_examples import FLOAT32_EPS

    assert FLOAT32_EPS == torch.finfo(torch.float32).eps
