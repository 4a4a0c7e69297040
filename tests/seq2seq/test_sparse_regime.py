"""The regime study end to end at smoke scale on generated pairs: the chained runs, resumable, and the page."""

import json
import random

import pytest

from softmax_zoo import config, engine, trainer
from softmax_zoo.data.prepare.generated import summaries, write_pairs
from softmax_zoo.reports import sparse_regime as page
from softmax_zoo.reports._pages import read_claims, said
from softmax_zoo.reports._verdicts import VerdictKind
from softmax_zoo.run_record import RunRecord
from softmax_zoo.studies import _jobs
from softmax_zoo.studies import sparse_regime as study


def test_jobs_start_run_first_then_each_start_with_every_arm():
    jobs = study.jobs([2, 0], [20, 100], scale="cpu", start_seed=1)
    assert jobs[0] == ["experiment=sparse_regime_start", "scale=cpu", "seed=1", "regime.epochs=2"]
    assert [j[1] for j in jobs[1:]] == ["regime.start_epoch=0"] * 3 + ["regime.start_epoch=2"] * 3
    assert [j[-1] for j in jobs[1:4]] == ["loss=softmax", "loss.k=20", "loss.k=100"]
    assert all("seed=0" in j and "regime.start_seed=1" in j for j in jobs[1:])  # the arms' own seed, the start's seed
    assert study.jobs([0], [20], scale="cpu")[0][0] == "experiment=sparse_regime"  # no start run needed
    with pytest.raises(ValueError, match=r"ks must be >= 1, got \[0\]"):
        study.jobs([1], [0], scale="cpu")
    with pytest.raises(ValueError, match=r"seeds must be >= 0, got \[\]"):
        study.jobs([1], [20], scale="cpu", seeds=[])


def test_starts_past_the_schedule_continue_the_start_run_and_each_seed_starts_from_it():
    jobs = study.jobs([1, 8], [20], scale="cpu", seeds=[0, 2], epochs=4)
    start = ["experiment=sparse_regime_start", "scale=cpu", "seed=0", "regime.epochs=4"]
    assert jobs[:2] == [start, [*start, "train.epochs=8"]]  # its schedule of 4 epochs first, then continued to 8
    arms = jobs[2:]
    assert [(j[1], j[2], j[-1]) for j in arms[:4]] == [
        ("regime.start_epoch=1", "seed=0", "loss=softmax"), ("regime.start_epoch=1", "seed=0", "loss.k=20"),
        ("regime.start_epoch=1", "seed=2", "loss=softmax"), ("regime.start_epoch=1", "seed=2", "loss.k=20"),
    ]
    assert all("regime.epochs=4" in j and not any(o.startswith("regime.start_seed") for o in j) for j in arms)
    # the record and checkpoint names: the start run's by its schedule, an arm's by its own seed
    assert study.record_path(jobs[1]) == study.record_path(jobs[0])
    assert study.record_path(jobs[1]).name == "gigaword_unilm_minilm_softmax_start-e4_cpu_seed0.json"
    assert study.record_path(arms[2]).name == "gigaword_unilm_minilm_softmax_from-e1_cpu_seed2.json"


def test_every_arm_seed_starts_from_the_start_runs_checkpoints():
    arm = study.jobs([1], [20], scale="cpu", seeds=[2], epochs=4)[1]
    cfg = config.compose(arm)
    assert cfg.seed == 2
    assert cfg.regime.start_dir == "checkpoints/sparse_regime/gigaword_unilm_minilm_softmax_start-e4_cpu_seed0"
    other = config.compose(study.jobs([1], [20], scale="cpu", seeds=[2], start_seed=3, epochs=4)[1])
    assert other.regime.start_dir.endswith("_start-e4_cpu_seed3") and other.run_name.endswith("_seed2_regime.start_seed=3")


def test_a_missing_epoch_checkpoint_is_named(tmp_path):
    assert config.epoch_checkpoint(str(tmp_path), 0) is None
    (tmp_path / "checkpoint-4").mkdir()
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text(json.dumps({"epoch": 2.0}))
    assert config.epoch_checkpoint(str(tmp_path), 2) == str(tmp_path / "checkpoint-4")
    with pytest.raises(FileNotFoundError, match="end of epoch 1 in"):
        config.epoch_checkpoint(str(tmp_path), 1)


def test_page_without_records_says_how_to_make_them(tmp_path):
    page.build(tmp_path)
    assert "No records yet" in (tmp_path / "sparse_regime.md").read_text()


def test_regime_chain_at_smoke_scale_builds_the_page(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # checkpoints/ and scratch/ (smoke records) land here
    monkeypatch.setenv("WANDB_MODE", "disabled")
    rng = random.Random(0)
    write_pairs(tmp_path / "data", {"train": summaries(rng, 24), "test": summaries(rng, 12)})
    # 16 training pairs in batches of 8: 2 steps an epoch; the start run's schedule is 1 epoch, continued to 2.
    extra = ["model=unilm_tiny", f"task.data_dir={tmp_path / 'data'}", "train.max_steps=-1", "task.eval_size=8"]
    jobs = study.jobs([0, 2], [20, 50], scale="smoke", seeds=[0, 1], epochs=1, extra=extra)
    ran = []

    def in_process(overrides):
        ran.append(overrides)
        engine.run(config.compose(overrides))

    first = study.run_all(jobs[:1], in_process)[0]
    start_dir = tmp_path / "checkpoints" / "sparse_regime" / first.stem
    epoch1 = (start_dir / "checkpoint-2" / "model.safetensors").read_bytes()
    paths = study.run_all(jobs, in_process)
    assert len(ran) == 2 + 12 and all(o[-1] == "resume=true" for o in ran) and all(p.is_file() for p in paths)
    assert sorted(p.name for p in start_dir.glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]  # one per epoch, both kept
    assert (start_dir / "checkpoint-2" / "model.safetensors").read_bytes() == epoch1  # the continuation left epoch 1 as it was
    start = json.loads(first.read_text())
    assert start["config"]["train"]["epochs"] == 2 and start["timing"]["global_steps"] == 4
    from_e2 = json.loads(paths[-1].read_text())
    assert from_e2["config"]["init_from"].endswith("checkpoint-4") and from_e2["timing"]["global_steps"] == 2
    assert from_e2["seed"] == 1 and from_e2["config"]["regime"]["start_dir"] == str(start_dir.relative_to(tmp_path))
    assert study.run_all(jobs, in_process) == paths and len(ran) == 14  # finished records are skipped

    page.build(tmp_path / "scratch")
    arms = [r for p in dict.fromkeys(paths) if page.START(r := RunRecord.load(p)) is not None]
    assert len(arms) == 12  # the start run's record is no arm
    pts = page.points(tmp_path / "scratch" / "runs", arms)
    assert [(p["start"], p["seed"], p["k"]) for p in pts] == [(s, seed, k) for s in (0, 2) for seed in (0, 1) for k in (20, 50)]
    assert all(p["rouge1"]["low"] <= p["rouge1"]["delta"] <= p["rouge1"]["high"] and p["n"] == 8 for p in pts)
    data = page.summarise(tmp_path / "scratch")
    assert {key: data["grid"][key] for key in ("starts", "ks", "seeds", "runs")} == {"starts": [0, 2], "ks": [20, 50], "seeds": [0, 1],
                                                                                    "runs": 13}
    assert (data["schedule"], data["start_epochs"], data["start_seeds"]) == ("1", "2", [0])  # one start run, resumed to 2 epochs
    shares = [[p["share"] for p in t["points"]] for t in data["per_k"]]  # each k's points, in order of the start's share
    assert [t["k"] for t in data["per_k"]] == [20, 50] and [len(s) for s in shares] == [4, 4] and all(s == sorted(s) for s in shares)
    row = read_claims(tmp_path / "scratch" / "claims.md")["sparse-regime-gigaword-beam1"]
    assert "a weaker regime than the paper's (needs scale=paper)" in row["verdict"] and row["ours"].startswith("k=20: Δ R-1")
    assert "degenerate outputs at beam 1 softmax" in row["ours"]
    assert (tmp_path / "scratch" / "sparse_regime.png").stat().st_size > 0
    rows = page.per_start(pts)
    assert [(r["start"], r["k"], r["delta"].seeds) for r in rows] == [(0, 20, (0, 1)), (0, 50, (0, 1)), (2, 20, (0, 1)), (2, 50, (0, 1))]
    assert all(0 <= r["degenerate"]["softmax"] <= 1 for r in rows)
    trend = read_claims(tmp_path / "scratch" / "claims.md")["sparse-regime-trend-k20"]
    assert trend["verdict"].startswith("too few points (2; a verdict needs 3)")


def test_a_longer_job_continues_its_record_and_needs_its_checkpoints(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    job = ["experiment=sparse_regime_start", "scale=cpu", "seed=0", "regime.epochs=4", f"results_dir={tmp_path}"]
    path = study.record_path(job)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"config": {"train": {"epochs": 4, "max_steps": -1}}}))
    assert _jobs.to_do(job) == (path, None)
    with pytest.raises(FileNotFoundError, match=r"asks a longer run than .* \(train.epochs: 4 -> 16\), and .* keeps no checkpoint"):
        _jobs.to_do([*job, "train.epochs=16"])
    (tmp_path / config.compose(job).output_dir / "checkpoint-1252").mkdir(parents=True)
    assert _jobs.to_do([*job, "train.epochs=16"]) == (path, ["train.epochs: 4 -> 16"])


def test_save_steps_takes_epoch_or_a_count():
    assert trainer.save_flags("epoch") == {"save_strategy": "epoch"}
    assert trainer.save_flags(0) == {"save_strategy": "no", "save_steps": 500}
    assert trainer.save_flags(250) == {"save_strategy": "steps", "save_steps": 250}
    with pytest.raises(ValueError, match="train.save_steps must be an integer >= 0 or 'epoch', got 'daily'"):
        trainer.save_flags("daily")


def regime_point(start: int, seed: int, delta: float, share: float, dirty: bool = False, degenerate: float = 0.4) -> dict:
    """One (start, seed) point; the sparse arm's degenerate share at start 4 is ``degenerate`` (the gate fails above 0.5)."""
    def record(arm: str) -> RunRecord:
        return RunRecord.of({"run_name": f"{arm}_e{start}_seed{seed}", "git": {"commit": "abc1234", "dirty": dirty}})

    return {"scale": "cpu", "start": start, "seed": seed, "k": 20, "share": share, "share_k": 20, "n": 500, "rank": 30,
            "softmax": {"rouge1": 20.0},
            "rouge1": {"delta": delta, "low": delta - 0.5, "high": delta + 0.5},
            "degenerate": {"softmax": 0.2, "sparse_softmax": degenerate if start == 4 else 0.1},
            "records": [record("softmax"), record("sparse")]}


def test_a_sparse_arm_over_half_degenerate_makes_the_claim_not_comparable():
    """The degenerate gate: the strongest start's sparse arm over 50% degenerate decides nothing; the test stays beside it."""
    deltas = {0: 0.4, 1: 0.5, 2: 0.45}
    pts = [regime_point(1, seed, -1.0, 0.40) for seed in deltas]
    pts += [regime_point(4, seed, d, 0.50, degenerate=0.6) for seed, d in deltas.items()]
    top = page.per_k(page.per_start(pts))[0]["top"]
    assert top["verdict"].kind is VerdictKind.NOT_COMPARABLE and top["verdict"].data["test"].kind is VerdictKind.SUPPORTED
    assert said(top["verdict"]).startswith("not comparable (regime): the sparse arm fails the degenerate gate: 60.0% of its outputs")


def test_the_claim_carries_the_strongest_starts_degenerate_shares_and_its_records_made_with_changes():
    pts = [regime_point(1, seed, -1.0, 0.40) for seed in (0, 1, 2)]
    pts += [regime_point(4, seed, 0.4, 0.50, dirty=seed == 0) for seed in (0, 1, 2)]
    top = page.per_k(page.per_start(pts))[0]["top"]
    assert top["degenerate"] == pytest.approx({"softmax": 0.2, "sparse_softmax": 0.4})  # the strongest start's, not the weakest's
    assert top["dirty"] == "rests on 2 of 6 records made with uncommitted changes (changed files not recorded)"
    clean = page.per_k(page.per_start([regime_point(4, seed, 0.4, 0.50) for seed in (0, 1, 2)]))[0]
    assert clean["top"]["dirty"] == ""


def test_the_settings_table_says_every_arm_decodes_with_the_full_distribution():
    from softmax_zoo.reports._seq2seq import seq2seq_settings

    record = RunRecord.of({"choices": {"loss": "sparse_softmax"}, "config": {"task": {"decode": {"beams": [1], "topk": None}}}})
    (row,) = [r for r in seq2seq_settings("gigaword", {"arms": [record]}, "sparse_regime")["rows"] if r[0] == "decoding mask"]
    assert row[2] == "the full distribution for every arm" and row[-1].startswith("every arm decodes with the full distribution")


@pytest.mark.parametrize("deltas, verdict", [
    ({0: 0.4}, "single run (seed 0): Δ +0.40 [-0.10, +0.90] over test items"),
    ({0: 0.4, 1: 0.5, 2: 0.45}, "supported (seeds 0, 1, 2)"),  # the item intervals include 0; the seeds agree
    ({0: -0.4, 1: 0.5, 2: 0.1}, "inconclusive (seeds 0, 1, 2)"),
])
def test_claim_takes_the_seeds_of_the_strongest_start_together(deltas, verdict):
    pts = [regime_point(1, seed, -1.0, 0.40 + seed / 100) for seed in deltas]  # a weaker start
    pts += [regime_point(4, seed, d, 0.50 + seed / 100) for seed, d in deltas.items()]
    row = page.per_k(page.per_start(pts))[0]
    top, first = row["top"], row["first"]
    assert said(top["verdict"]).startswith(verdict) and row["k"] == 20
    label = "seed 0" if len(deltas) == 1 else "seeds 0, 1, 2"
    assert top["share"] == pytest.approx(0.50 + (len(deltas) - 1) / 200)  # the strongest start: its seeds' mean share
    assert top["delta"].deltas == pytest.approx(tuple(deltas.values()))
    assert first["delta"].delta == pytest.approx(-1.0) and first["delta"].label == label  # the weakest start, named by its seeds
