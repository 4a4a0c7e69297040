"""Re-runs that would silently mix or lose runs fail early instead, naming the cause."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from pathlib import Path

import pytest

from softmax_zoo import engine, preflight
from softmax_zoo.config import compose, name_exclude_keys
from softmax_zoo.run_identity import EXTENDS_A_RUN

from .test_resume import CrashAfterSave

COMMON = ["scale=smoke", "train.max_steps=4", "train.save_steps=2"]


@pytest.fixture
def finished(make_cfg, tmp_path):
    """An uninterrupted 4-step run with checkpoints at steps 2 and 4, and its record."""
    cfg = make_cfg(*COMMON, f"output_dir={tmp_path / 'run'}", f"results_dir={tmp_path / 'r0'}")
    return cfg, engine.run(cfg)


def test_resume_refuses_a_checkpoint_of_another_config(make_cfg, tmp_path, finished):
    cfg = make_cfg(*COMMON, "train.lr=0.01", "resume=true", f"output_dir={tmp_path / 'run'}")
    expected = (f"resume=true: checkpoint-4 in {tmp_path / 'run'} was written with train.lr=0.001, this run asks "
                "train.lr=0.01; use a new run (drop resume=true) or set train.lr=0.001")
    with pytest.raises(ValueError, match=re.escape(expected)):
        engine.run(cfg)
    assert not (tmp_path / "results").exists()


def test_a_longer_budget_keeps_the_run_name_and_resume_continues(make_cfg, tmp_path, finished):
    assert compose(["train.max_steps=2000", "train.epochs=3"]).run_name == compose([]).run_name
    assert compose(["train.eval_batch_size=8", "train.eval_each_epoch=true"]).run_name == compose([]).run_name
    assert set(EXTENDS_A_RUN) <= set(name_exclude_keys())
    cfg = make_cfg("scale=smoke", "train.max_steps=6", "train.save_steps=2", "train.eval_batch_size=16",
                   "resume=true", f"output_dir={tmp_path / 'run'}", f"results_dir={tmp_path / 'r1'}")
    extended = engine.run(cfg)
    assert extended["timing"]["resumed_from_step"] == 4 and extended["timing"]["global_steps"] == 6
    assert extended["train_loss"]["step"] == [1, 2, 3, 4, 5, 6]
    assert extended["train_loss"]["loss"][:4] == finished[1]["train_loss"]["loss"]


def named_run(make_cfg, tmp_path, *overrides):
    """The config of ``overrides`` with its checkpoints in ckpt/<its run name>, as configs/train.yaml's output_dir."""
    name = make_cfg(*overrides).run_name
    return make_cfg(*overrides, f"output_dir='{tmp_path / 'ckpt' / name}'")  # quoted: the name holds '='


def interrupted(make_cfg, tmp_path, *overrides):
    """A run of ``overrides`` (:func:`named_run`) killed after its step-2 checkpoint."""
    cfg = named_run(make_cfg, tmp_path, *COMMON, *overrides)
    with pytest.raises(KeyboardInterrupt):
        engine.run(cfg, callbacks=[CrashAfterSave(2)])
    return cfg


def test_resume_with_a_changed_setting_names_it(make_cfg, tmp_path):
    first = interrupted(make_cfg, tmp_path, "loss=sparse_softmax", "loss.k=5")
    cfg = named_run(make_cfg, tmp_path, *COMMON, "loss=sparse_softmax", "loss.k=10", "resume=true")
    assert cfg.output_dir != first.output_dir
    expected = (f"resume=true: checkpoint-2 in {first.output_dir} was written with loss.k=5, this run asks loss.k=10; "
                "use a new run (drop resume=true) or set loss.k=5")
    with pytest.raises(ValueError, match=re.escape(expected)):
        engine.run(cfg)
    assert not Path(cfg.output_dir).exists()


def test_resume_of_a_new_job_beside_finished_or_other_seed_runs_starts_fresh_and_says_so(make_cfg, tmp_path, caplog):
    """A chain of jobs (softmax_zoo.studies) runs each new job with resume=true: finished runs beside it
    and runs of another seed are other jobs, not the run meant. The warning says a new run starts and
    names the nearest finished run of the same seed with the keys that differ."""
    interrupted(make_cfg, tmp_path, "loss=sparse_softmax", "loss.k=5", "seed=1")
    done = engine.run(named_run(make_cfg, tmp_path, *COMMON, "loss=sparse_softmax", "loss.k=20"))
    cfg = named_run(make_cfg, tmp_path, *COMMON, "loss=sparse_softmax", "loss.k=10", "resume=true")
    with caplog.at_level(logging.WARNING, logger="softmax_zoo.preflight"):
        fresh = engine.run(cfg)
    assert fresh["timing"]["resumed_from_step"] == 0 and fresh["config"]["loss"]["k"] == 10
    record = Path(done["config"]["results_dir"]) / "runs" / done["experiment"] / f"{done['run_name']}.json"
    expected = (f"resume=true found no checkpoint in {cfg.output_dir}: this is a NEW run, from step 0. The nearest run "
                f"beside it, {done['run_name']} (finished, record {record}), has checkpoint-4 written with loss.k=20, "
                "this run asks loss.k=10; to continue that run instead, set loss.k=20")
    assert expected in caplog.text


def test_resume_with_nothing_beside_it_warns_of_a_new_run(make_cfg, tmp_path, caplog):
    cfg = named_run(make_cfg, tmp_path, *COMMON, "resume=true")
    with caplog.at_level(logging.WARNING, logger="softmax_zoo.preflight"):
        assert preflight.resume_checkpoint(cfg, cfg.output_dir) is None
    assert f"resume=true found no checkpoint in {cfg.output_dir}: this is a NEW run, from step 0\n" in caplog.text + "\n"


def test_resume_skips_a_truncated_newest_checkpoint(make_cfg, tmp_path, finished, caplog):
    _, straight = finished
    weights = tmp_path / "run" / "checkpoint-4" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    cfg = make_cfg(*COMMON, "resume=true", f"output_dir={tmp_path / 'run'}")
    with caplog.at_level(logging.WARNING, logger="softmax_zoo.preflight"):
        resumed = engine.run(cfg)
    assert "skipping" in caplog.text and str(weights.parent) in caplog.text and "model.safetensors" in caplog.text
    assert resumed["timing"]["resumed_from_step"] == 2
    assert resumed["train_loss"] == straight["train_loss"] and resumed["metrics"] == straight["metrics"]


def test_checkpoints_keep_their_config(finished):
    cfg, _ = finished
    saved = json.loads((Path(cfg.output_dir) / "checkpoint-2" / preflight.CONFIG_FILE).read_text())
    assert saved["train"]["lr"] == cfg.train.lr and saved["run_name"] == cfg.run_name


def test_unwritable_results_dir_fails_before_training(make_cfg, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    cfg = make_cfg("scale=smoke", f"results_dir={blocker / 'results'}")
    t0 = time.perf_counter()
    with pytest.raises(OSError, match=r"results_dir=.*a_file/results/runs/default is not writable.*nothing was trained"):
        engine.run(cfg)
    assert time.perf_counter() - t0 < 5
    assert not Path(cfg.output_dir).exists()


def write_prepared(folder: Path, lines: list[str]) -> None:
    """A prepared-looking folder: train.jsonl and a meta.json holding its sha256, as make data writes them."""
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text("".join(lines))
    sha = hashlib.sha256((folder / "train.jsonl").read_bytes()).hexdigest()
    (folder / "meta.json").write_text(json.dumps({"kind": "classification", "outputs_sha256": {"train.jsonl": sha}}))


def test_truncated_prepared_split_is_refused(make_cfg, tmp_path):
    data = tmp_path / "clinc_oos"
    lines = [json.dumps({"text": f"utterance {i}", "label": "a"}) + "\n" for i in range(100)]
    write_prepared(data, lines)
    assert preflight.verify_prepared(data, "clinc_oos")["files"]["train.jsonl"]["bytes"] == len("".join(lines))
    (data / "train.jsonl").write_text("".join(lines[:10]))
    cfg = make_cfg("task=clinc_oos", f"task.data_dir={data}", "scale=smoke")
    with pytest.raises(ValueError, match=r"prepared data changed since make data: rerun make data TASK=clinc_oos .*train\.jsonl"):
        engine.run(cfg)
    (data / "train.jsonl").unlink()
    with pytest.raises(ValueError, match=r"train\.jsonl is missing"):
        preflight.verify_prepared(data, "clinc_oos")


def test_record_write_failure_logs_the_record(make_cfg, tmp_path, monkeypatch, caplog):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine.records, "write_record", full_disk)
    with caplog.at_level(logging.INFO, logger="softmax_zoo.engine"), pytest.raises(OSError, match="No space"):
        engine.run(make_cfg("scale=smoke"))
    assert "test/micro_f1=" in caplog.text  # the metrics were logged as soon as they were known
    logged = caplog.text.split("here it is whole:\n", 1)[1]
    assert '"test/micro_f1"' in logged and '"train_loss"' in logged


def test_progress_bars_follow_the_switch(make_cfg, capfd):
    engine.run(make_cfg("scale=smoke", "train.progress=true", "run_name=bars"))
    drawn = capfd.readouterr().err
    assert "evaluate test" in drawn and "2/2" in drawn  # evaluation and training bars
    engine.run(make_cfg("scale=smoke", "train.progress=false", "run_name=quiet"))
    assert "evaluate test" not in capfd.readouterr().err
    with pytest.raises(ValueError, match="train.progress must be auto, true or false, got 'yes'"):
        engine.run(make_cfg("scale=smoke", "train.progress=yes"))


def test_a_run_whose_record_exists_is_done_already_or_refused(make_cfg, tmp_path, caplog):
    """The same run with another logger is done already (the record kept); the same name under another computed
    value is refused naming the record; overwrite=true replaces it."""
    first = make_cfg("scale=smoke")
    record = engine.run(first)
    path = tmp_path / "results" / "runs" / first.experiment_name / f"{first.run_name}.json"
    written = path.stat().st_mtime_ns
    with caplog.at_level(logging.INFO, logger=engine.__name__):
        again = engine.run(make_cfg("scale=smoke", "logger=wandb", "logger.mode=disabled"))
    assert again == record and path.stat().st_mtime_ns == written
    assert f"done already: {path}" in caplog.text and "overwrite=true runs it again" in caplog.text

    saved = json.loads(path.read_text())
    saved["config"]["train"]["lr"] = 0.5  # as if an experiment file had changed the learning rate since
    path.write_text(json.dumps(saved))
    expected = (f"this run's record exists: {path} (written with train.lr=0.5, this run asks train.lr=0.001); "
                "nothing was trained: overwrite=true replaces it")
    with pytest.raises(ValueError, match=re.escape(expected)):
        engine.run(make_cfg("scale=smoke"))
    replaced = engine.run(make_cfg("scale=smoke", "overwrite=true"))
    assert json.loads(path.read_text())["config"]["train"]["lr"] == 0.001 == replaced["config"]["train"]["lr"]
