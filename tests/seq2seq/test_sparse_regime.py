"""The regime study end to end at smoke scale on generated pairs: the chained runs, resumable, and the page."""

import json
import random

import pytest

from softmax_zoo import config, engine, trainer
from softmax_zoo.data.prepare.generated import summaries, write_pairs
from softmax_zoo.reports import sparse_regime as page
from softmax_zoo.reports._pages import read_claims
from softmax_zoo.studies import sparse_regime as study


def test_jobs_start_run_first_then_each_start_with_every_arm():
    jobs = study.jobs([2, 0], [20, 100], scale="cpu", seed=1)
    assert jobs[0] == ["experiment=sparse_regime_start", "scale=cpu", "seed=1", "regime.epochs=2"]
    assert [j[1] for j in jobs[1:]] == ["regime.start_epoch=0"] * 3 + ["regime.start_epoch=2"] * 3
    assert [j[-1] for j in jobs[1:4]] == ["loss=softmax", "loss.k=20", "loss.k=100"]
    assert study.jobs([0], [20], scale="cpu", seed=0)[0][0] == "experiment=sparse_regime"  # no start run needed
    with pytest.raises(ValueError, match=r"ks must be >= 1, got \[0\]"):
        study.jobs([1], [0], scale="cpu", seed=0)


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
    # 16 training pairs in batches of 8: 2 steps an epoch; the start run lasts 2 epochs.
    extra = ["model=unilm_tiny", f"task.data_dir={tmp_path / 'data'}", "train.max_steps=-1", "task.eval_size=8"]
    jobs = study.jobs([0, 2], [20, 50], scale="smoke", seed=0, extra=extra)
    ran = []

    def in_process(overrides):
        ran.append(overrides)
        engine.run(config.compose(overrides))

    paths = study.run_all(jobs, in_process)
    assert len(ran) == 7 and all(o[-1] == "resume=true" for o in ran) and all(p.is_file() for p in paths)
    ckpts = sorted(p.name for p in (tmp_path / "checkpoints" / "sparse_regime").glob("*start-e2*/checkpoint-*"))
    assert ckpts == ["checkpoint-2", "checkpoint-4"]  # one per epoch, both kept
    from_e2 = json.loads(paths[-1].read_text())
    assert from_e2["config"]["init_from"].endswith("checkpoint-4") and from_e2["timing"]["global_steps"] == 2
    assert study.run_all(jobs, in_process) == paths and len(ran) == 7  # finished records are skipped

    page.build(tmp_path / "scratch")
    text = (tmp_path / "scratch" / "sparse_regime.md").read_text()
    pts = page.points(tmp_path / "scratch" / "runs", [json.loads(p.read_text()) for p in paths])
    assert [(p["start"], p["k"]) for p in pts] == [(0, 20), (0, 50), (2, 20), (2, 50)]
    assert all(p["rouge1"]["low"] <= p["rouge1"]["delta"] <= p["rouge1"]["high"] and p["n"] == 8 for p in pts)
    assert "Where the paper's regime lies" in text and "Δ R-1 [95% over test items]" in text
    assert "Grid: start epochs [0, 2], softmax and sparse k in [20, 50], seeds [0]: 7 runs" in text
    assert "- k=20: Δ R-1 " in text and "of 2 start(s)" in text and "What the curve says" in text
    row = read_claims(tmp_path / "scratch" / "claims.md")["sparse-regime-gigaword-beam1"]
    assert row["verdict"].endswith("the paper's regime not tested here (needs scale=paper)") and row["ours"].startswith("k=20: Δ R-1")
    assert (tmp_path / "scratch" / "sparse_regime.png").stat().st_size > 0


def test_save_steps_takes_epoch_or_a_count():
    assert trainer.save_flags("epoch") == {"save_strategy": "epoch"}
    assert trainer.save_flags(0) == {"save_strategy": "no", "save_steps": 500}
    assert trainer.save_flags(250) == {"save_strategy": "steps", "save_steps": 250}
    with pytest.raises(ValueError, match="train.save_steps must be an integer >= 0 or 'epoch', got 'daily'"):
        trainer.save_flags("daily")


def regime_point(start: int, seed: int, delta: float, share: float) -> dict:
    return {"scale": "cpu", "start": start, "seed": seed, "k": 20, "share": share, "share_k": 20, "n": 500,
            "rouge1": {"delta": delta, "low": delta - 0.5, "high": delta + 0.5}}


@pytest.mark.parametrize("deltas, verdict", [
    ({0: 0.4}, "single run (seed 0): Δ +0.40 [-0.10, +0.90] over test items"),
    ({0: 0.4, 1: 0.5, 2: 0.45}, "supported (seeds 0, 1, 2)"),  # the item intervals include 0; the seeds agree
    ({0: -0.4, 1: 0.5, 2: 0.1}, "inconclusive (seeds 0, 1, 2)"),
])
def test_claim_takes_the_seeds_of_the_strongest_start_together(deltas, verdict):
    pts = [regime_point(1, seed, -1.0, 0.40 + seed / 100) for seed in deltas]  # a weaker start
    pts += [regime_point(4, seed, d, 0.50 + seed / 100) for seed, d in deltas.items()]
    row = page.claim(pts)
    assert row["verdict"].startswith(verdict) and row["verdict"].endswith("not tested here (needs scale=paper)")
    label = "seed 0" if len(deltas) == 1 else "seeds 0, 1, 2"
    assert row["ours"].startswith(f"k=20: Δ R-1 at the strongest start ({100 * (0.50 + (len(deltas) - 1) / 200):.1f}%")
    assert f"-1.00 ({label})" in row["ours"]  # the weakest start, named by its seeds
