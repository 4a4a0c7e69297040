"""The Fig. 1/Fig. 2 report on hand-made records: means, intervals, best k, plots and claims."""

from __future__ import annotations

import numpy as np
import pytest

from softmax_zoo import records
from softmax_zoo.reports import _fig1, fig2
from softmax_zoo.reports._fig1 import fig1_data
from softmax_zoo.reports._pages import read_claims, render_page
from softmax_zoo.reports._stats import mean_ci
from softmax_zoo.reports._verdicts import Form, VerdictKind
from softmax_zoo.reports.fig2 import regime
from softmax_zoo.run_record import RunRecord, typed

SEEDS = (0, 1, 2)
SPARSE = "sparse_softmax"  # the arm as the page keys it: its loss choice
# test micro-F1 per (loss, k) and seed: softmax 50/52/54 -> 52.0 ± 5.0; sparse k=20 60/61/62 -> 61.0 ± 2.5
F1 = {
    ("softmax", None): (0.50, 0.52, 0.54),
    ("sparse", 5): (0.40, 0.41, 0.42),
    ("sparse", 20): (0.60, 0.61, 0.62),
    ("sparse", 100): (0.55, 0.56, 0.57),
}


def record(kind: str, k: int | None, seed: int, f1: float) -> dict:
    loss = {} if kind == "softmax" else {"k": k}
    name = f"iflytek_cpu_{kind}{'' if k is None else f'_k{k}'}_seed{seed}"
    return {
        "experiment": "fig2_iflytek",
        "run_name": name,
        "seed": seed,
        "choices": {"loss": "softmax" if kind == "softmax" else "sparse_softmax"},
        "config": {
            "loss": loss,
            "task": {"name": "iflytek", "max_length": 64, "diagnostics_k": 20},
            "model": {"name": "char_transformer", "pretrained": None, "cache_features": False, "mlp_layers": 0},
            "train": {"epochs": 3, "batch_size": 32, "lr": 0.003},
            "scale": {"name": "cpu"},
        },
        "metrics": {"test/micro_f1": f1, "val/micro_f1": f1 - 0.01, "test/macro_f1": f1 / 2},
        "train_loss": {"step": [1, 2, 3, 4], "loss": [4.0, 3.0 - seed * 0.1, 2.5, 2.0]},
        "history": [{"epoch": 1.0, "val/micro_f1": f1 - 0.1}, {"epoch": 2.0, "val/micro_f1": f1 - 0.01}],
        "timing": {"train_s": 10.0, "wall_s": 12.0, "train_examples_per_s": 100.0},
        "task_info": {"examples": {"train": 3024}, "num_classes": 119},
        "job": {"overrides": [*([] if k is None else [f"loss.k={k}"]), f"seed={seed}",
                              f"experiment=fig2_iflytek{'_softmax' if k is None else ''}", "scale=cpu"]},
        "command": "(the page reads job.overrides, not this)",
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("fig2")
    for (kind, k), values in F1.items():
        for seed, f1 in zip(SEEDS, values):
            records.write_record(record(kind, k, seed, f1), records.runs_dir(tmp_path))
    fig2.build(tmp_path)
    return tmp_path


def test_summary_has_means_intervals_the_paper_number_and_the_baseline(built):
    data = fig2.summarise(built)
    # the per-job Hydra overrides of the records, gathered back into the two multirun commands
    assert data["commands"] == ["python -m softmax_zoo.train -m experiment=fig2_iflytek scale=cpu loss.k=5,20,100 seed=0,1,2",
                                "python -m softmax_zoo.train -m experiment=fig2_iflytek_softmax scale=cpu seed=0,1,2"]
    task, = data["tasks"]
    assert task["caveat"] == fig2.caveat("iflytek") and "not CLUE's 12,133 / 2,599 split" in task["caveat"]  # configs/task/iflytek.yaml
    rows = {(r["kind"], r["k"]): r for r in task["rows"]}
    assert list(rows) == [("softmax", None), (SPARSE, 5), (SPARSE, 20), (SPARSE, 100)]  # softmax first, then by k
    assert mean_ci(rows[("softmax", None)]["test/micro_f1"])[:2] == pytest.approx((52.0, 4.97), abs=0.01)  # t(0.975, 2) * 2 / sqrt(3)
    assert mean_ci(rows[(SPARSE, 20)]["val/micro_f1"])[0] == pytest.approx(60.0)
    assert rows[(SPARSE, 20)]["paper"] == 60.7 and rows[(SPARSE, 5)]["paper"] is None
    assert task["best"] == 20 and task["best_mean"] == pytest.approx(61.0)
    # k=100's own interval (56 ± 2.5) overlaps softmax's (52 ± 5.0), but paired by seed Δ = +5, +4, +3: above 0 after Holm
    assert task["above"] == [20, 100] and task["below"] == [5]
    paired = {r["k"]: r for r in task["paired"]}
    assert paired[100]["delta"] == pytest.approx(4.0) and paired[100]["raw"] == pytest.approx((4 - 2.484, 4 + 2.484), abs=1e-3)
    # Holm: k=100 has the largest p, its step's level is 95% (its raw interval); k=5 and k=20 are adjusted, wider
    assert paired[100]["holm"] == pytest.approx(paired[100]["raw"]) and paired[100]["level"] == pytest.approx(0.95)
    assert all(paired[k]["holm"][0] < paired[k]["raw"][0] and paired[k]["p_holm"] > paired[k]["p"] for k in (5, 20))
    assert data["headline"]["faster"] == ["iflytek"] and data["headline"]["k20_above"] == ["iflytek"]
    # the table's cells: k=20 test 61.0 ± 2.5 (n=3), validation 60.0 ± 2.5; the paired row of k=100 over 3 seeds
    assert mean_ci(rows[(SPARSE, 20)]["test/micro_f1"]) == pytest.approx((61.0, 2.48, 3), abs=0.01)
    assert mean_ci(rows[(SPARSE, 20)]["val/micro_f1"]) == pytest.approx((60.0, 2.48, 3), abs=0.01)
    assert paired[100]["n"] == 3 and paired[100]["raw"] == pytest.approx((1.52, 6.48), abs=0.01)


def test_plots_are_written(built):
    for name in ("fig2.png", "fig1.png"):
        data = (built / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_claims_rows(built):
    claims = fig2.summarise(built)["tasks"][0]["claims"]
    assert claims["k20-best"]["verdict"].kind is VerdictKind.SUPPORTED and claims["k20-best"]["seeds"] == [0, 1, 2]
    assert claims["k20-best"]["verdict"].form is Form.GRID and claims["k20-best"]["verdict"].data["m"] == 2  # Holm over 2
    k20 = claims["k20-vs-softmax"]  # Δ per seed +10, +9, +8: the paper's claim, one row per task
    assert k20["delta"].deltas == pytest.approx((10.0, 9.0, 8.0)) and k20["verdict"].kind is VerdictKind.SUPPORTED
    assert k20["verdict"].data["d"].method.startswith("paired t")
    robust = claims["robust-k"]
    assert [r["k"] for r in robust["deltas"]] == [5, 20, 100] and robust["regime"] is None  # no diagnostics
    assert robust["verdict"].kind is VerdictKind.CONTRADICTS and robust["verdict"].data["keys"] == [5]  # k=5: Δ -10, -11, -12
    stable = claims["stable-k"]  # k=5 and k=100 lie 20 and 5 points from k=20: far outside the ±1 margin
    assert stable["verdict"].kind is VerdictKind.CONTRADICTS and stable["verdict"].data["margin"] == 1
    assert claims["f1"]["paper"] == 60.7 and claims["f1"]["k20"] == pytest.approx(61.0)
    faster, smoother = claims["convergence"]["faster"], claims["convergence"]["smoother"]
    assert (faster["softmax"], faster["sparse"]) == pytest.approx((42.0, 51.0))  # mean f1 - 10 points after epoch 1
    # paired by seed, Δ after epoch 1 is +10, +9, +8; the curves are the same per seed, so no smoothness measure differs
    assert faster["delta"].deltas == pytest.approx((10.0, 9.0, 8.0)) and faster["verdict"].kind is VerdictKind.SUPPORTED
    assert all(m["verdict"].kind is VerdictKind.INCONCLUSIVE for m in smoother["measures"].values())
    ledger = read_claims(built / "claims.md")
    assert ledger["fig2-iflytek-f1"]["paper"] == "60.7" and ledger["fig2-iflytek-f1"]["ours"].startswith("61.0")
    assert {"fig2-k20-best-iflytek", "fig2-robust-k-iflytek", "fig2-k20-vs-softmax-iflytek", "fig2-stable-k-iflytek",
            "fig1-convergence-iflytek", "sparse-faster-timing", "sparse-sota-k20", "sparse-simpler"} <= set(ledger)
    assert ledger["sparse-sota-k20"]["verdict"].startswith("not tested: ")
    assert ledger["sparse-simpler"]["verdict"].startswith("by construction: ")
    assert "overlap" not in " ".join(row["verdict"] for row in ledger.values())


def test_the_plots_read_the_paired_delta(built):
    data = fig2.summarise(built)
    (e1, d1), (e2, d2) = data["fig1"]["IFLYTEK"]["paired"]  # k=20 − softmax of validation micro-F1 per epoch
    assert (e1, e2) == (1.0, 2.0) and d1.delta == pytest.approx(9.0) and d2.delta == pytest.approx(9.0)
    assert d1.method == "paired t over seeds (n=3)"


@pytest.mark.parametrize("seeds, kind", [((0,), VerdictKind.SINGLE_RUN), ((0, 1), VerdictKind.TOO_FEW_SEEDS)])
def test_fewer_seeds_than_a_verdict_needs(tmp_path, seeds, kind):
    for (arm, k), values in F1.items():
        for seed, f1 in zip(seeds, values):
            records.write_record(record(arm, k, seed, f1), records.runs_dir(tmp_path))
    claims = fig2.summarise(tmp_path)["tasks"][0]["claims"]
    for row in ("k20-best", "robust-k", "k20-vs-softmax", "stable-k"):
        assert claims[row]["verdict"].kind is kind, row
    assert claims["convergence"]["faster"]["verdict"].kind is kind
    fig2.build(tmp_path)
    assert "nan" not in (tmp_path / "fig2.md").read_text() and "nan" not in (tmp_path / "claims.md").read_text()


def test_fig1_loss_curve_averages_seeds_step_by_step():
    runs = [record("softmax", None, s, 0.5) for s in SEEDS]
    runs[2]["train_loss"] = {"step": [1, 2, 3, 4, 5], "loss": [4.0, 2.8, 2.5, 2.0, 1.0]}  # a longer run: cut to the shortest
    curve = fig1_data({("softmax", None): typed(runs)})["softmax"]
    assert curve["steps"].tolist() == [1, 2, 3, 4] and curve["seeds"] == 3
    assert curve["loss"].tolist() == pytest.approx([4.0, 2.9, 2.5, 2.0])


def test_no_records_says_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="make reproduce-fig2"):
        fig2.build(tmp_path)


def test_fine_tuned_rows_appear_beside_the_frozen_ones_only_when_recorded(built, tmp_path):
    assert fig2.summarise(built)["tuned"] == []
    for (kind, k), values in F1.items():
        for seed, f1 in zip(SEEDS, values):
            r = record(kind, k, seed, f1 + 0.2)
            r["experiment"], r["run_name"] = "fig2_finetune_iflytek", "ft_" + r["run_name"]
            r["config"]["model"]["cache_layers"] = 1
            r["metrics"]["test/target_in_topk"] = 0.9
            records.write_record(r, records.runs_dir(built))
    data = fig2.summarise(built)
    (frozen,), (tuned,) = data["tasks"], data["tuned"]
    assert max(max(r["test/micro_f1"]) for r in frozen["rows"]) == pytest.approx(62.0)  # the frozen table keeps its own runs
    assert mean_ci(tuned["rows"][0]["test/micro_f1"])[0] == pytest.approx(72.0) and tuned["config"]["model"]["cache_layers"] == 1
    assert tuned["rate"] == 100.0 and tuned["runs"] == 12 and tuned["wall_min"] == pytest.approx(12 * 12.0 / 60)
    assert "## IFLYTEK: top 1 encoder layer(s) fine-tuned with the head" in render_page("fig2.md.j2", data)[0]
    assert tuned["topk_measured"] and not frozen["topk_measured"]
    assert {c["id"] for c in data["claims"]} >= {"fig2-finetune-k20-best-iflytek", "fig1-finetune-convergence-iflytek"}


def test_claims_name_the_measured_regime():
    runs = [RunRecord(seed=s, metrics={"test/target_in_topk": share}) for s, share in enumerate((0.97, 0.99))]
    assert regime({(SPARSE, 20): runs}) == pytest.approx(98.0)
    assert regime({(SPARSE, 20): [*runs, RunRecord(seed=2)]}) is None


def test_claims_are_computed_once_per_build(built, tmp_path, monkeypatch):
    calls = []
    claims = fig2.task_claims
    monkeypatch.setattr(fig2, "task_claims",
                        lambda task, groups, **kw: calls.append((task, kw.get("finetuned", False))) or claims(task, groups, **kw))
    fig2.build(built, tmp_path)
    assert ("iflytek", False) in calls and len(calls) == len(set(calls))  # once per task and group (frozen, fine-tuned)


def test_caveats_come_from_the_task_configs():
    assert "690 training examples for 134 classes" in fig2.caveat("wos")
    assert "`test/oos_recall`" in fig2.caveat("clinc_oos")
    assert fig2.caveat("ptb") is None and fig2.caveat("no_such_task") is None


def test_smoothness_measures_read_log_loss_with_the_descent_removed():
    """Scaling a curve changes neither measure (log loss); noise around the same descent raises both."""
    steps = np.arange(60)
    descent = 3.0 * np.exp(-steps / 20) + 0.5
    noisy = descent * np.exp(0.05 * (-1.0) ** steps)  # ±5% around the descent, alternating
    run = lambda loss: RunRecord(train_loss={"step": list(steps), "loss": list(loss)})  # noqa: E731
    for measure in (_fig1.late_steps, _fig1.off_trend):
        assert measure(run(2 * descent)) == pytest.approx(measure(run(descent)))
        assert measure(run(noisy)) > 2 * measure(run(descent))
    assert _fig1.off_trend(run(descent[: _fig1.SMOOTH - 1])) is None and _fig1.late_steps(run([1.0])) is None
