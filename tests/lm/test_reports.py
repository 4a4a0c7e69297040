"""The lm1b and kernel-bias report builders on hand-made records."""

from __future__ import annotations

import json
import math

import pytest
import torch

from softmax_zoo import files, records
from softmax_zoo.models.build import head_factory
from softmax_zoo.models.lstm_lm import LSTMLanguageModel
from softmax_zoo.reports import _lm1b_heads as lm1b_heads
from softmax_zoo.reports import kernel_bias, lm1b
from softmax_zoo.reports._pages import dirty_note, read_claims
from softmax_zoo.reports._verdicts import VerdictKind, no_interval_verdict
from softmax_zoo.run_record import RunRecord, typed

BODY = 1000  # the hand-made models' parameters outside the output layer
V = 1000  # the hand-made vocabulary: every hand-made perplexity below it but those of the tests of the flags
OUTPUT = {"softmax": V * (8 + 1), "adaptive_softmax": 3000, "sampled_softmax": V * (8 + 1)}  # d = 8, with biases


def record(experiment: str, name: str, loss: str, metrics: dict, seed: int = 0, history=(), sampler=None, m=None, model=None) -> dict:
    """A run record of the fields the reports read; ``experiment`` "lm1b" is the earlier settings (no selection, min_count 1)."""
    earlier = experiment == lm1b.EARLIER
    return {
        "experiment": experiment,
        "run_name": f"{name}_seed{seed}",
        "seed": seed,
        "choices": {"loss": loss, "sampler": sampler, "scale": "cpu", **({"model": model} if model else {})},
        "config": {"loss": {"bias": loss != "adaptive_softmax", **({"num_samples": m} if m else {})},
                   "model": {"hidden_size": 8, "embedding_dim": 8, "dropout": 0.0 if earlier else 0.25},
                   "task": {"bptt": 5, "min_count": 1 if earlier else 3}, "train": {"batch_size": 4, "eval_steps": 0 if earlier else 5}},
        "metrics": metrics,
        "history": list(history) + ([] if earlier else [{"step": 5, "eval_val/perplexity": 1.0, "eval_val/tokens": 20.0}]),
        "timing": {"train_s": 60.0 + seed, "global_steps": 10},
        "task_info": {"vocab_size": V, "min_count": 1 if earlier else 3, "parameters": BODY + OUTPUT.get(loss, 0), "unk_train_tokens": 50},
        "data": {"splits": {"train": {"tokens_with_eos": 1000}}},
        **({} if earlier else {"selection": {"metric": "val/perplexity", "greater_is_better": False, "step": 5 + 5 * (seed % 2),
                                             "value": 1.0, "last_step": 10}}),
    }


def lm1b_records(seeds=(0, 1)):
    heads = {
        "softmax": (("softmax", None, None), 200.0, 100.0),
        "adaptive": (("adaptive_softmax", None, None), 210.0, 500.0),
        "sq": (("sampled_softmax", "quadratic", 8), 230.0, 300.0),
    }
    out = []
    for name, ((loss, sampler, m), ppl, tps) in heads.items():
        for seed in seeds:
            curve = [{"step": s, "train_wall_s": 10.0 * s, "train/tokens": 640 * s, "val/curve_perplexity": ppl * (3 - s)}
                     for s in range(3)]
            out.append(record(lm1b.RECORDS, name, loss, {"val/perplexity": ppl + seed, "test/perplexity": ppl + 2 * seed,
                                                   "train/tokens_per_second": tps, "train/tokens": 1000.0}, seed, curve, sampler, m))
    return out


def lm1b_page(tmp_path, seeds=(0, 1), speed: dict | None = None) -> dict:
    """lm1b's data (summarise) from hand-made records of ``seeds``, with ``speed`` as its side-by-side measurement; the
    page and its claims rows built too (their words are checked by rebuilding the committed pages identically)."""
    for r in lm1b_records(seeds):
        records.write_record(r, records.runs_dir(tmp_path))
    if speed is not None:
        files.write_text(tmp_path / lm1b_heads.SPEED_FILE, json.dumps(speed))
    lm1b.build(tmp_path)
    d = lm1b.summarise(tmp_path)
    assert (tmp_path / "lm1b.png").stat().st_size > 0 and set(read_claims(tmp_path / "claims.md")) == {c["id"] for c in d["claims"]}
    return d


def test_lm1b_report(tmp_path):
    d = lm1b_page(tmp_path)
    rows = {r["head"].label: r for r in d["rows"]}
    assert list(rows) == ["softmax", "adaptive", "sampled (quadratic, m=8)"]  # softmax first
    # output layer: softmax V x (d + 1), adaptive its own; each seed's minutes and evaluated (best-validation) step
    a = rows["adaptive"]
    assert (a["val"], a["test"]) == ([210.0, 211.0], [210.0, 212.0])
    assert (a["output_parameters"], a["parameters"], a["run_tps"]) == (3000, 4000, 500.0)
    assert a["speed"] == 5.0 and math.isnan(a["step_tps"])  # separate runs: 500 / 100 tokens/s
    assert a["train_mins"] == pytest.approx([1.0, 61 / 60]) and a["evaluated_step"] == [5, 10] and a["steps"] == [10, 10]
    assert (rows["softmax"]["output_parameters"], rows["softmax"]["parameters"]) == (V * 9, BODY + V * 9)
    assert not any(r["trivial"] or r["ablation"] for r in rows.values())  # no head worse than a uniform guess
    assert d["dropout"] == "0.25" and (d["facts"]["min_count"], d["facts"]["vocab_size"]) == (3, V)
    assert d["selection"] == [("val/perplexity", 5, None)] and d["validation_tokens"] == [20]
    assert d["steps"] == [10] and (d["facts"]["batch_size"], d["facts"]["bptt"]) == (4, 5)
    assert d["measured"] is None and d["source"] == {"file": lm1b_heads.SPEED_FILE, "found": False, "theirs": None, "ours": None}
    decided = d["decided"]
    # the target is set at min_count 1; these records have min_count 3: not tested there, though 5.00x would meet it
    assert (decided["target_setting"], decided["target_min_count"], decided["met"]) == (False, lm1b.TARGET_MIN_COUNT, True)
    # 211/201 = 1.05 lies within the margin, but two seeds give no verdict; the speed-up has none
    trade_off = decided["trade_off"]
    assert trade_off["kind"] is VerdictKind.TOO_FEW_SEEDS and trade_off["seeds"] == [0, 1] and trade_off["speed"] == 5.0
    assert trade_off["geo"] == pytest.approx(math.sqrt(210 / 200 * 212 / 202)) and trade_off["verdict"].data["d"].method.endswith("(n=2)")
    assert decided["approximations"]["kind"] is VerdictKind.TOO_FEW_SEEDS and decided["approximations"]["verdicts"] == {}
    assert {"lm1b-europarl", "lm1b-vocabulary-cost"} <= {c["id"] for c in d["claims"]} and not d["vocab"]["rows"]  # no timing against V


@pytest.mark.parametrize("adaptive, kind", [
    ([105.0], VerdictKind.SINGLE_RUN),  # one seed: no interval
    ([104.0, 105.0, 106.0], VerdictKind.SUPPORTED),  # the ratio's one-sided upper bound lies below 1.10
    ([80.0, 105.0, 130.0], VerdictKind.INCONCLUSIVE),
    ([125.0, 126.0, 127.0], VerdictKind.CONTRADICTS),  # the interval lies above the margin
    ([80.0, 81.0, 82.0], VerdictKind.SUPPORTED),  # lower is better: it cannot contradict "close"
])
def test_close_to_the_full_softmax_is_non_inferiority(adaptive, kind):
    seeds = list(range(len(adaptive)))
    softmax = [100.0 + s for s in seeds]
    ratio = (sum(adaptive) / len(adaptive)) / (sum(softmax) / len(softmax))
    summary = {lm1b_heads.SOFTMAX: {"seeds": seeds, "test": softmax}, lm1b_heads.ADAPTIVE: {"seeds": seeds, "test": adaptive}}
    decided = lm1b.closeness(summary, 7.0, ratio)
    assert decided["kind"] is kind
    geo = math.exp(sum(math.log(a / b) for a, b in zip(adaptive, softmax)) / len(seeds))
    assert decided["geo"] == pytest.approx(geo) and decided["margin"] == 1.1 and decided["seeds"] == seeds
    if kind is not VerdictKind.SINGLE_RUN:
        low, high = decided["one_sided"]
        assert low <= geo <= high
        assert (high < 1.1) == (kind is VerdictKind.SUPPORTED)
        assert (low > 1.1) == (kind is VerdictKind.CONTRADICTS)
    assert decided["verdict"].data.get("source", lm1b.CLOSE.margin_source) == lm1b.CLOSE.margin_source


def test_lm1b_heads_of_one_seed_share_the_body_initialisation():
    """What the lm1b page states of its pairing: under one seed the softmax and the adaptive model get the same embedding and LSTM."""
    heads = ({"_target_": "softmax_zoo.losses.SoftmaxHead"},
             {"_target_": "softmax_zoo.losses.AdaptiveSoftmaxHead", "cutoffs": [20, 50], "div_value": 4.0})
    bodies = []
    for loss in heads:
        torch.manual_seed(0)
        model = LSTMLanguageModel(100, head_factory(loss, 100), embedding_dim=8, hidden_size=8)
        bodies.append({k: v for k, v in model.state_dict().items() if not k.startswith("head.")})
    assert bodies[0].keys() == bodies[1].keys() and all(torch.equal(bodies[0][k], bodies[1][k]) for k in bodies[0])


def speed_measurement(hidden_size: int = 8) -> dict:
    """A lm1b_speed.json as softmax_zoo.studies.lm_speed writes it (the rows' fields the report reads)."""
    rows = [
        {"choices": {"loss": "softmax", "sampler": None}, "config": {"loss": {}}, "tokens_per_s": 1000.0},
        {"choices": {"loss": "adaptive_softmax", "sampler": None}, "config": {"loss": {}}, "tokens_per_s": 4000.0},
        {"choices": {"loss": "sampled_softmax", "sampler": "quadratic"}, "config": {"loss": {"num_samples": 8}}, "tokens_per_s": 500.0},
        {"choices": {"loss": "sampled_softmax", "sampler": "uniform"}, "config": {"loss": {"num_samples": 8}}, "tokens_per_s": 3000.0},
    ]
    settings = {"scale": "cpu", "embedding_dim": 8, "hidden_size": hidden_size, "min_count": 3, "optim": "adagrad", "batch_size": 4,
                "bptt": 5, "warmup": 3, "repeats": 40, "batches": 8}
    return {"rows": rows, "settings": settings, "command": "python -m softmax_zoo.studies.lm_speed", "date": "today",
            "machine": "a CPU", "load_average_start": "1.00 1.00 1.00", "load_average_end": "1.10 1.00 1.00"}


def test_lm1b_report_takes_the_speed_from_the_side_by_side_measurement(tmp_path):
    d = lm1b_page(tmp_path, speed=speed_measurement())
    rows = {r["head"].label: r for r in d["rows"]}
    assert (rows["adaptive"]["step_tps"], rows["adaptive"]["speed"], rows["adaptive"]["run_tps"]) == (4000.0, 4.0, 500.0)
    assert (rows["sampled (quadratic, m=8)"]["step_tps"], rows["sampled (quadratic, m=8)"]["speed"]) == (500.0, 0.5)
    assert d["source"]["found"] and d["measured"]["step_tps"][lm1b_heads.ADAPTIVE] == 4000.0
    assert (d["measured"]["load_average_start"], d["measured"]["load_average_end"]) == ("1.00 1.00 1.00", "1.10 1.00 1.00")
    assert d["decided"]["trade_off"]["speed"] == 4.0 and d["decided"]["target_setting"] is False


def test_the_speed_target_is_decided_at_its_own_min_count(tmp_path):
    runs = records.runs_dir(tmp_path)
    for r in lm1b_records():
        r["task_info"]["min_count"] = lm1b.TARGET_MIN_COUNT
        records.write_record(r, runs)
    lm1b.build(tmp_path)
    verdict = read_claims(tmp_path / "claims.md")["lm1b-cpu-speedup-3x"]["verdict"]
    assert verdict.startswith("met on a single measurement (the ratio of the runs' own mean")


def test_lm1b_verdicts_from_three_seeds(tmp_path):
    """From 3 seeds "close" is decided as non-inferiority (paired by seed) and the adaptive-vs-sampled row on log test
    perplexity; the speed-up is named as one measurement, without a verdict."""
    decided = lm1b_page(tmp_path, seeds=(0, 1, 2), speed=speed_measurement())["decided"]
    trade_off = decided["trade_off"]
    # adaptive / softmax 210/200, 212/202, 214/204: about 1.05 each, the one-sided bound well below 1.10
    assert trade_off["kind"] is VerdictKind.SUPPORTED and trade_off["seeds"] == [0, 1, 2] and trade_off["speed"] == 4.0
    assert trade_off["one_sided"][0] < trade_off["geo"] < trade_off["one_sided"][1] < 1.1
    assert trade_off["geo"] == pytest.approx(1.05, abs=0.002)
    # adaptive (4000 tokens/s) is faster than the quadratic head (500) and its test ppl 210-214 below 230-234
    approximations = decided["approximations"]
    assert approximations["kind"] is VerdictKind.SUPPORTED and approximations["seeds"] == [0, 1, 2]
    assert (approximations["faster"], approximations["lower"], approximations["n"]) == (1, 1, 1)
    assert {h.label: v.kind for h, v in approximations["verdicts"].items()} == {"sampled (quadratic, m=8)": VerdictKind.SUPPORTED}


def test_lm1b_report_ignores_a_measurement_of_another_model(tmp_path):
    for r in lm1b_records():
        records.write_record(r, records.runs_dir(tmp_path))
    files.write_text(tmp_path / lm1b_heads.SPEED_FILE, json.dumps(speed_measurement(hidden_size=16)))
    d = lm1b.summarise(tmp_path)
    assert d["measured"] is None  # the runs' own tokens/second instead
    assert d["source"] == {"file": lm1b_heads.SPEED_FILE, "found": True, "theirs": ("cpu", 8, 16, 3), "ours": [("cpu", 8, 8, 3)]}
    adaptive = next(r for r in d["rows"] if r["head"] == lm1b_heads.ADAPTIVE)
    assert (adaptive["val"], adaptive["test"], adaptive["run_tps"], adaptive["speed"]) == ([210.0, 211.0], [210.0, 212.0], 500.0, 5.0)


def test_kernel_cost_is_the_quadratic_and_uniform_heads_speed_ups(tmp_path):
    more = lm1b_records() + [record(lm1b.RECORDS, "su", "sampled_softmax", {"val/perplexity": 300.0, "test/perplexity": 300.0,
                                                                      "train/tokens_per_second": 600.0, "train/tokens": 1000.0},
                                    seed, (), "uniform", 8) for seed in (0, 1)]
    for r in more:
        records.write_record(r, records.runs_dir(tmp_path))
    decided = lm1b.summarise(tmp_path)["decided"]
    assert decided["kernel"] == pytest.approx((3.0, 6.0))  # quadratic 300, uniform 600 tokens/s over softmax's 100
    for r in lm1b_records():  # no uniform head: no kernel cost
        records.write_record(r, records.runs_dir(tmp_path / "two"))
    assert lm1b.summarise(tmp_path / "two")["decided"]["kernel"] is None


def kernel_records(quadratic_gaps: dict[int, float], seeds=(0,)):
    full = 5.0
    out = [record("kernel_bias", "full", "softmax", {"val/loss": full}, seed=s) for s in seeds]
    uniform_gaps = {8: 1.0, 16: 0.8, 64: 0.5, 256: 0.2}
    for name, gaps in (("uniform", uniform_gaps), ("quadratic", quadratic_gaps), ("softmax", {8: 0.01, 256: 0.0})):
        for m, gap in gaps.items():
            out += [record("kernel_bias", f"{name}_m{m}", "sampled_softmax", {"val/loss": full + gap}, seed=s, sampler=name, m=m)
                    for s in seeds]
    return out


def kernel_page(tmp_path, runs) -> dict:
    """kernel_bias's data (summarise) from ``runs``; the page and its claims rows built too (their words are checked by
    rebuilding the committed pages identically)."""
    for r in runs:
        records.write_record(r, records.runs_dir(tmp_path))
    kernel_bias.build(tmp_path)
    d = kernel_bias.summarise(tmp_path)
    assert (tmp_path / "kernel_bias.png").stat().st_size > 0 and set(read_claims(tmp_path / "claims.md")) == {c["id"] for c in d["claims"]}
    return d


def finding(d: dict, id_: str) -> dict:
    return next(c for c in d["claims"] if c["id"] == id_)


@pytest.mark.parametrize("quadratic_gaps, best, m_best, unreached", [
    # reaches uniform's m=256 gap at m=8, but one run per arm decides nothing
    ({8: 0.19, 16: 0.1, 64: 0.05, 256: 0.01}, 32.0, 256, []),
    ({8: 0.9, 16: 0.6, 64: 0.15, 256: 0.05}, 4.0, 256, []),
    ({8: 1.5, 16: 1.2, 64: 0.9, 256: 0.7}, 0.125, 8, [64, 256]),  # reached only at m=64: 8 / 64
])
def test_kernel_bias_report(tmp_path, quadratic_gaps, best, m_best, unreached):
    d = kernel_page(tmp_path, kernel_records(quadratic_gaps))
    (section,) = d["sections"]
    assert section["full"] == [5.0] and section["ms"] == [8, 16, 64, 256] and section["seeds"] == [0]
    assert dict(section["rows"])["uniform"] == [(6.0, 1), (5.8, 1), (5.5, 1), (5.2, 1)]
    assert section["oracle_gap"] == pytest.approx(0.01)  # the softmax sampler's largest gap over m
    row = finding(d, "kernel-bias-10-100x")
    assert (row["best"], row["m_best"], row["ratio"], row["seeds"]) == (pytest.approx(best), m_best, 10.0, [0])
    assert row["decided"] is None and no_interval_verdict(row["seeds"]).kind is VerdictKind.SINGLE_RUN  # one run per arm
    assert row["unreached"] == unreached  # uniform's gaps quadratic does not reach


@pytest.mark.parametrize("seeds, quadratic_gaps, kind, pairs", [
    ((0, 1), {8: 0.19, 16: 0.1, 64: 0.05, 256: 0.01}, VerdictKind.TOO_FEW_SEEDS, None),
    # from 3 seeds a kernel cell and the uniform cell with >= 10x its samples decide, over seeds
    ((0, 1, 2), {8: 0.19, 16: 0.1, 64: 0.05, 256: 0.01}, VerdictKind.SUPPORTED,
     {(8, 256): (VerdictKind.SUPPORTED, 0.01), (16, 256): (VerdictKind.SUPPORTED, 0.1)}),
    ((0, 1, 2), {8: 1.5, 16: 1.2, 64: 0.9, 256: 0.7}, VerdictKind.CONTRADICTS,
     {(8, 256): (VerdictKind.CONTRADICTS, -1.3), (16, 256): (VerdictKind.CONTRADICTS, -1.0)}),
])
def test_kernel_bias_verdict_names_its_seeds(tmp_path, seeds, quadratic_gaps, kind, pairs):
    row = finding(kernel_page(tmp_path, kernel_records(quadratic_gaps, seeds)), "kernel-bias-10-100x")
    assert row["seeds"] == list(seeds)
    if pairs is None:  # no m with 3 seeds: the rule without an interval, which decides nothing
        assert row["decided"] is None and no_interval_verdict(row["seeds"]).kind is kind
        return
    assert row["decided"]["kind"] is kind and row["decided"]["seeds"] == list(seeds)
    found = {(m_k, m_u): (v.kind, v.data["d"].delta) for m_k, m_u, v in row["decided"]["pairs"]}  # Δ = uniform − quadratic
    assert found == {key: (k, pytest.approx(delta)) for key, (k, delta) in pairs.items()}


def test_kernel_rows_name_the_dirty_records_behind_them(tmp_path):
    """A ledger row resting on a record made with uncommitted changes says so (and names the files); a row whose records
    are all clean does not: the dirty run is quadratic m=8, behind the 10-100x row but not the m ≈ 10–50 row (m=16)."""
    runs = kernel_records({8: 0.19, 16: 0.1, 64: 0.05, 256: 0.01}, seeds=(0, 1, 2))
    dirty, = [r for r in runs if r["run_name"] == "quadratic_m8_seed0"]
    dirty["git"] = {"commit": "abc1234", "dirty": True, "dirty_paths": ["src/softmax_zoo/losses/sampled.py"], "dirty_paths_more": 0}
    d = kernel_page(tmp_path, runs)
    # the full softmax (3), quadratic (4 m x 3 seeds) and uniform (4 m x 3 seeds) runs
    assert finding(d, "kernel-bias-10-100x")["dirty"] == dirty_note([dirty] + [RunRecord()] * 26)
    m10_50 = finding(d, "kernel-bias-m10-50")
    assert m10_50["dirty"] == "" and m10_50["ms"] == [16]
    assert m10_50["verdict"].kind is VerdictKind.CONTRADICTS and m10_50["verdict"].data["keys"] == [16]  # not equivalent
    del dirty["git"]
    records.write_record(dirty, records.runs_dir(tmp_path))
    assert not [c["id"] for c in kernel_bias.summarise(tmp_path)["claims"] if c.get("dirty")]


def test_reports_without_records_say_what_to_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="make reproduce-lm1b"):
        lm1b.build(tmp_path)
    with pytest.raises(FileNotFoundError, match="make reproduce-kernel-bias"):
        kernel_bias.build(tmp_path)


def test_kernel_bias_paper_setting_section(tmp_path):
    """The paper-like setting's records add a section and claim rows; an unfinished study shows as incomplete, not as an error."""
    runs = records.runs_dir(tmp_path)
    for r in kernel_records({8: 0.19, 16: 0.1, 64: 0.05, 256: 0.01}):
        records.write_record(r, runs)
    records.write_record(record("kernel_bias_paper", "full", "softmax", {"val/loss": 5.0}), runs)
    kernel_bias.build(tmp_path)
    assert f"Incomplete: 1 run record(s) in {runs.resolve().as_posix()}/kernel_bias_paper/" in (tmp_path / "kernel_bias.md").read_text()
    curve = [{"step": s, "val/curve_perplexity": 300.0 - s} for s in (0, 100, 200)]
    for name, m, gap in (("uniform", 8, 1.0), ("uniform", 2048, 0.1), ("quadratic", 8, 0.05), ("quadratic_centred", 8, 0.5)):
        records.write_record(record("kernel_bias_paper", f"{name}_m{m}", "sampled_softmax", {"val/loss": 5.0 + gap},
                                    history=curve, sampler=name, m=m), runs)
    paper_like = next(s for s in kernel_bias.summarise(tmp_path)["sections"] if s["paper_setting"])
    assert paper_like["complete"] and [name for name, _ in paper_like["rows"]] == ["uniform", "quadratic", "quadratic_centred"]
    kernel_bias.build(tmp_path)
    claims = read_claims(tmp_path / "claims.md")
    # m=8 reaches uniform m=2048's gap: 256x, from one run per arm
    assert claims["kernel-bias-10-100x-paper-like"]["verdict"].startswith("single run (seed 0): largest ratio 256.0x, at or above")
    assert "256.0x" in claims["kernel-bias-10-100x-paper-like"]["ours"]
    # 0.5 reaches only uniform m=8's gap
    assert claims["kernel-bias-centred-paper-like"]["verdict"].startswith("single run (seed 0): largest ratio 1.0x, below")
    assert (tmp_path / "kernel_bias_paper_curves.png").stat().st_size > 0


def test_lm1b_vocabulary_cost_row_reads_the_timing_against_c(tmp_path):
    """With the benchmark's time-vs-C groups the row gives each C's times and their growth, and decides nothing."""
    for r in lm1b_records():
        records.write_record(r, records.runs_dir(tmp_path))
    groups = [{"title": f"{lm1b.VOCAB_GROUP} (N=8, d=64, C={c:,}, 3 cutoffs by the cost model, Zipf 1)",
               "rows": [{"variant": "SoftmaxHead (full softmax)", "ms": full}, {"variant": "AdaptiveSoftmaxHead", "ms": ada}]}
              for c, full, ada in ((32_000, 40.0, 6.0), (8_000, 10.0, 3.0))]
    files.write_text(tmp_path / lm1b.VOCAB_BENCH, json.dumps({"groups": groups, "date": "today", "machine": "a CPU"}))
    lm1b.build(tmp_path)
    row = read_claims(tmp_path / "claims.md")["lm1b-vocabulary-cost"]
    assert "C=8,000: 10.0 / 3.0; C=32,000: 40.0 / 6.0; for 4x the classes" in row["ours"]
    assert "the full softmax's time grew 4.0x, the adaptive one's 2.0x" in row["ours"]
    assert row["verdict"].startswith("single measurement (one timing per C")


def test_kernel_comparable_to_full_softmax_is_non_inferiority():
    """"Comparable to full softmax" at m ≈ 10–50: per m the one-sided test that the paired Δ validation loss is below
    ln 1.10, and one verdict that every m is non-inferior (one m beyond the margin contradicts the claim)."""
    from softmax_zoo.reports.kernel_bias import cells, comparable

    full = [record("kernel_bias", "full", "softmax", {"val/loss": 5.0 + s / 10}, s) for s in range(3)]
    close = [record("kernel_bias", "q32", "sampled_softmax", {"val/loss": 5.01 + s / 10 + s / 1000}, s, sampler="quadratic", m=32)
             for s in range(3)]
    far = [record("kernel_bias", "q16", "sampled_softmax", {"val/loss": 5.5 + s / 10 + s / 1000}, s, sampler="quadratic", m=16)
           for s in range(3)]
    better = [record("kernel_bias", "q64", "sampled_softmax", {"val/loss": 4.5 + s / 10 + s / 1000}, s, sampler="quadratic", m=64)
              for s in range(3)]
    by = cells(typed(full + close + far + better))
    assert comparable(by, [32])["verdict"].kind is VerdictKind.SUPPORTED
    assert comparable(by, [64])["verdict"].kind is VerdictKind.SUPPORTED  # lower loss is no contradiction of "comparable"
    assert comparable(by, [16])["verdict"].kind is VerdictKind.CONTRADICTS
    both = comparable(by, [16, 32])
    assert both["verdict"].kind is VerdictKind.CONTRADICTS
    (far_test, n16), (close_test, n32) = both["tests"][16], both["tests"][32]
    assert n16 == n32 == 3 and far_test["d"].delta == pytest.approx(0.501) and close_test["d"].delta == pytest.approx(0.011)
    assert far_test["interval"][0] > far_test["margin"]  # beyond the margin
    assert close_test["interval"][1] < close_test["margin"]  # non-inferior
    assert far_test["margin"] == pytest.approx(math.log(1.10))
    assert comparable(cells(typed(full[:1] + close[:1])), [32])["verdict"].kind is VerdictKind.SINGLE_RUN


def test_lm1b_rows_say_how_many_of_their_records_are_dirty(tmp_path):
    """A decided row whose records include one made with uncommitted changes carries the note, naming its count and
    files; the rows resting on clean records or on no record do not."""
    runs = lm1b_records(seeds=(0, 1, 2))
    dirty = next(r for r in runs if r["run_name"] == "adaptive_seed1")
    dirty["git"] = {"commit": "0123456789", "dirty": True, "dirty_paths": ["src/softmax_zoo/losses/methods/adaptive.py"]}
    for r in runs:
        records.write_record(r, records.runs_dir(tmp_path))
    lm1b.build(tmp_path)
    claims = read_claims(tmp_path / "claims.md")
    note = "rests on 1 of 6 records made with uncommitted changes (src/softmax_zoo/losses/methods/adaptive.py)"
    assert claims["lm1b-adaptive-speed-ppl"]["verdict"].endswith(f"; {note}")
    assert claims["lm1b-cpu-speedup-3x"]["verdict"].endswith(f"; {note}")  # the speed-up from the runs' own tokens/s
    assert claims["lm1b-adaptive-vs-approximations"]["verdict"].endswith(f"; {note}")  # adaptive and the sampled head
    for clean in ("lm1b-adaptive-43.9", "lm1b-europarl", "lm1b-vocabulary-cost"):
        assert "uncommitted" not in claims[clean]["verdict"]
    dirty["git"] = {"commit": "0123456789", "dirty": False, "dirty_paths": []}
    records.write_record(dirty, records.runs_dir(tmp_path))
    lm1b.build(tmp_path)
    assert not any("uncommitted" in row["verdict"] for row in read_claims(tmp_path / "claims.md").values())


def sampled(name: str, sampler: str, ppl: float, seeds=(0, 1, 2), experiment: str = lm1b.RECORDS, model=None) -> list[dict]:
    return [record(experiment, name, "sampled_softmax", {"val/perplexity": ppl, "test/perplexity": ppl + seed,
                                                          "train/tokens_per_second": 600.0, "train/tokens": 1000.0},
                   seed, (), sampler, 8, model) for seed in seeds]


def test_a_head_at_or_above_a_uniform_guess_is_flagged_and_the_uniform_arm_is_an_ablation(tmp_path):
    """The rule, not a hand: test ppl >= V flags a row; the uniform sampler's arm is flagged as an ablation whatever
    its perplexity, and neither enters the "standard approximations" verdict as a baseline unflagged."""
    more = lm1b_records(seeds=(0, 1, 2)) + sampled("su", "uniform", 500.0) + sampled("sg", "unigram", float(V))
    for r in more:
        records.write_record(r, records.runs_dir(tmp_path))
    files.write_text(tmp_path / lm1b_heads.SPEED_FILE, json.dumps(speed_measurement()))
    data = lm1b.summarise(tmp_path)
    flags = {r["head"].label: (r["trivial"], r["ablation"]) for r in data["rows"]}
    assert flags["sampled (unigram, m=8)"] == (True, False)  # 1000-1002 >= V
    assert flags["sampled (uniform, m=8)"] == (False, True) and flags["sampled (quadratic, m=8)"] == (False, False)
    assert data["diagnostic"]["page"] == lm1b.DIAGNOSTIC  # what the flags link to
    approximations = data["decided"]["approximations"]
    heads = {h.label: found for h, found in approximations["heads"].items()}  # keyed by what each head is; its label words it
    assert sorted(heads) == ["sampled (quadratic, m=8)", "sampled (unigram, m=8)"]
    assert approximations["ablations"] == [lm1b_heads.Head("sampled_softmax", "uniform", 8)]
    assert heads["sampled (unigram, m=8)"]["trivial"] and not heads["sampled (quadratic, m=8)"]["trivial"]


@pytest.mark.parametrize("floor_vocab, flagged", [(V, True), (V + 1, False)])
def test_a_head_at_or_above_the_unigram_frequency_predictor_is_flagged(tmp_path, floor_vocab, flagged):
    """The unigram predictor's test perplexity (its diagnostic, at the runs' V only) flags every head at or above it."""
    for r in lm1b_records(seeds=(0, 1, 2)) + sampled("su", "uniform", 500.0):
        records.write_record(r, records.runs_dir(tmp_path))
    files.write_text(tmp_path / lm1b_heads.SPEED_FILE, json.dumps(speed_measurement()))
    floor = {"vocab_size": floor_vocab, "splits": {"test": {"tokens": 10, "perplexity": 230.0}},
             "command": "python -m softmax_zoo.studies.unigram_baseline", "git": {"commit": "abcdef0123", "dirty": False}}
    files.write_text(tmp_path / lm1b_heads.UNIGRAM, json.dumps(floor))
    data = lm1b.summarise(tmp_path)
    rows = {r["head"].label: r["below_floor"] for r in data["rows"]}
    assert rows["sampled (quadratic, m=8)"] is flagged and rows["sampled (uniform, m=8)"] is flagged  # 231 and 500 >= 230
    assert not rows["softmax"] and not rows["adaptive"]
    assert data["decided"]["approximations"]["heads"][lm1b_heads.Head("sampled_softmax", "quadratic", 8)]["below_floor"] is flagged
    lm1b.build(tmp_path)
    assert ("worse than the unigram frequency predictor" in (tmp_path / "lm1b.md").read_text()) is flagged


@pytest.mark.parametrize("ppl, flagged", [(999.9, False), (1000.0, True), (5000.0, True)])
def test_trivial_is_a_perplexity_at_or_above_the_vocabulary(ppl, flagged):
    assert lm1b_heads.trivial(ppl, V) is flagged


def test_output_parameters_are_the_parameters_of_the_head_of_a_real_model():
    heads = {lm1b_heads.SOFTMAX: {"_target_": "softmax_zoo.losses.SoftmaxHead", "bias": True},
             lm1b_heads.ADAPTIVE: {"_target_": "softmax_zoo.losses.AdaptiveSoftmaxHead", "cutoffs": [20, 50], "div_value": 4.0}}
    models = {h: LSTMLanguageModel(100, head_factory(loss, 100), embedding_dim=8, hidden_size=8) for h, loss in heads.items()}
    summary = {h: {"parameters": sum(p.numel() for p in m.parameters()), "vocab": 100, "width": 8, "bias": h == lm1b_heads.SOFTMAX}
               for h, m in models.items()}
    assert lm1b_heads.output_parameters(summary) == {h: sum(p.numel() for p in m.head.parameters()) for h, m in models.items()}


def test_output_parameters_are_the_model_less_the_shared_body():
    softmax, adaptive = lm1b_heads.SOFTMAX, lm1b_heads.ADAPTIVE
    summary = {softmax: {"parameters": 10_000, "vocab": V, "width": 8, "bias": True}, adaptive: {"parameters": 4_000}}
    assert lm1b_heads.output_parameters(summary) == {softmax: 9_000, adaptive: 3_000}
    assert lm1b_heads.output_parameters({adaptive: {"parameters": 4_000}}) == {adaptive: None}  # no softmax run: no body


def test_a_model_without_regularised_records_is_shown_from_the_earlier_settings(tmp_path):
    runs = records.runs_dir(tmp_path)
    for r in lm1b_records(seeds=(0, 1, 2)):
        records.write_record(r, runs)
    earlier = [record(lm1b.EARLIER, "sq", "softmax", {"val/perplexity": 400.0, "test/perplexity": 400.0, "train/tokens_per_second": 50.0,
                                                     "train/tokens": 1000.0}, 0),
               *sampled("su_t", "uniform", 2000.0, seeds=(0,), experiment=lm1b.EARLIER, model="transformer_lm"),
               *sampled("su", "uniform", 1500.0, seeds=(0,), experiment=lm1b.EARLIER)]
    for r in earlier:
        records.write_record(r, runs)
    data = lm1b.summarise(tmp_path)
    (section,) = data["sections"]
    assert section["earlier"] and section["model"] == "transformer_lm" and section["min_count"] == 1
    (row,) = section["rows"]
    assert row["trivial"] and row["lstm_test"] == 1500.0 and row["lstm_trivial"]  # 2000 and the earlier LSTM's 1500 >= V
    # the rows: the regularised records
    assert [r["head"].label for r in data["rows"]] == ["softmax", "adaptive", "sampled (quadratic, m=8)"]
