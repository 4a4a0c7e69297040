"""No lost work: SIGTERM or SIGINT saves a checkpoint at the next optimiser step and ends the run with a line saying how
to resume; the same command then resumes it to the uninterrupted run's record (synthetic and seq2seq tasks, one
process and two gloo ranks of which one gets the signal); a checkpoint every ``train.save_minutes``; no checkpoint
folder before the first checkpoint, and several processes removing one empty folder."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from transformers import TrainerCallback

from softmax_zoo import engine, trainer, vocab_parallel_training
from softmax_zoo.data.prepare.generated import questions, write_pairs
from tests.engine.held_run import wait_for
from tests.engine.test_resume import CrashAfterSave

ROOT = Path(__file__).resolve().parents[2]
HELD_RUN = Path(__file__).with_name("held_run.py")
HOLD, STOP = 2, 3  # the run is signalled while it holds step 2, so it saves and stops after step 3
TIMEOUT_S = 600  # a child's whole run, imports included, on a busy machine


def child_env() -> dict[str, str]:
    return {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")])}


def start_held(launcher: list[str], folder: Path, overrides: list[str], cwd: Path) -> subprocess.Popen:
    """``held_run.py`` holding step HOLD (tests/engine/held_run.py), its output (stdout and stderr together) piped."""
    folder.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([*launcher, str(HELD_RUN), str(folder), str(HOLD), *overrides], cwd=cwd, env=child_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(child: subprocess.Popen) -> str:
    try:
        out, _ = child.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        out, _ = child.communicate()
        raise AssertionError(f"the run did not end within {TIMEOUT_S} s:\n{out[-8000:]}") from None
    return out


def signalled_then_resumed(launcher: list[str], overrides: list[str], tmp_path: Path, signum: int, ranks: int = 1,
                           signalled: int = 0) -> tuple[str, dict]:
    """Run ``overrides`` (with resume=true) held at step HOLD, send ``signum`` to rank ``signalled`` only, let it go on;
    then run the same command again. Returns the first run's output and the second one's record."""
    command = [*overrides, "resume=true"]
    held = tmp_path / "held"
    child = start_held(launcher, held, command, tmp_path)
    wait_for([held / f"rank{r}.pid" for r in range(ranks)], child, TIMEOUT_S)
    os.kill(int((held / f"rank{signalled}.pid").read_text()), signum)
    time.sleep(0.2)  # the signal reaches its handler before the hold ends
    (held / "go").touch()
    first = finish(child)
    assert child.returncode != 0, first[-8000:]
    if ranks == 1:
        assert child.returncode == 128 + signum, first[-8000:]
    name = signal.Signals(signum).name
    assert first.count(f"{name}: saving a checkpoint and stopping after step {STOP}") == 1, first[-8000:]  # rank 0 says it
    checkpoints = tmp_path / "ckpt"
    assert [p.name for p in checkpoints.iterdir()] == [f"checkpoint-{STOP}"]
    saved = {p.name for p in (checkpoints / f"checkpoint-{STOP}").iterdir()}
    assert {trainer.RESUME_STATE.format(process=r) for r in range(ranks)} <= saved  # every rank saved at the same step
    assert f"interrupted by {name}: checkpoint saved at step {STOP} ({checkpoints / f'checkpoint-{STOP}'}); " \
           "rerun the same command to resume" in first
    assert not (tmp_path / "results").exists()  # no record of an unfinished run

    again = start_held(launcher, held, command, tmp_path)  # the same command
    second = finish(again)
    assert again.returncode == 0, second[-8000:]
    [path] = (tmp_path / "results").rglob("*.json")
    return first, json.loads(path.read_text())


def seq2seq_data(folder: Path) -> Path:
    rng = random.Random(0)
    write_pairs(folder, {"train": questions(rng, 48), "test": questions(rng, 4)})
    return folder


TASKS = {
    "synthetic": lambda tmp: ["scale=smoke", "train.max_steps=5"],
    "seq2seq": lambda tmp: ["experiment=table3_softmax", "model=unilm_tiny", "scale=smoke", f"task.data_dir={seq2seq_data(tmp / 'data')}",
                            "train.max_steps=5", "train.batch_size=8", "train.precision=fp32"],
}


def same_record(resumed: dict, straight: dict) -> None:
    """Steps, losses and metrics as the uninterrupted run's (not timings); the whole run counted."""
    assert resumed["train_loss"] == straight["train_loss"] and straight["train_loss"]["step"] == [1, 2, 3, 4, 5]
    untimed = [{k: v for k, v in r["metrics"].items() if "_per_s" not in k} for r in (resumed, straight)]  # examples_per_s_beam1
    assert untimed[0] == untimed[1] and len(untimed[0]) > 1
    assert resumed["timing"]["global_steps"] == straight["timing"]["global_steps"] == 5
    assert resumed["timing"]["resumed_from_step"] == STOP
    assert [(s["from_step"], s["to_step"]) for s in resumed["timing"]["segments"]] == [(0, STOP), (STOP, 5)]


@pytest.mark.slow  # two runs of the entry point, each importing the training stack: ~1 minute
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("task", TASKS)
def test_a_signal_saves_at_the_next_step_and_the_same_command_resumes(make_cfg, tmp_path, task, signum):
    overrides = [*TASKS[task](tmp_path), f"results_dir={tmp_path / 'results'}", f"output_dir={tmp_path / 'ckpt'}"]
    _, resumed = signalled_then_resumed([sys.executable], overrides, tmp_path, signum)
    straight = engine.run(make_cfg(*overrides[:-2], f"results_dir={tmp_path / 'straight'}", f"output_dir={tmp_path / 'c2'}"))
    same_record(resumed, straight)


@pytest.mark.slow  # three runs of two processes each: ~3 minutes
def test_a_signal_to_one_of_two_gloo_ranks_stops_both_at_one_step(tmp_path):
    """DDP on 2 gloo processes: SIGTERM to rank 1 alone; both save their share of checkpoint-3, stop and resume."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    overrides = ["scale=smoke", "train.max_steps=5", f"results_dir={tmp_path / 'results'}", f"output_dir={tmp_path / 'ckpt'}"]
    first, resumed = signalled_then_resumed(launcher, overrides, tmp_path, signal.SIGTERM, ranks=2, signalled=1)
    assert first.count(f"interrupted by SIGTERM: checkpoint saved at step {STOP}") == 2  # each rank's own line
    straight_dir = tmp_path / "straight"
    straight_dir.mkdir()
    command = [*launcher, "-m", "softmax_zoo.train", *overrides[:-2], f"results_dir={straight_dir / 'results'}",
               f"output_dir={straight_dir / 'ckpt'}"]
    done = subprocess.run(command, cwd=straight_dir, env=child_env(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-8000:]
    [path] = (straight_dir / "results").rglob("*.json")
    straight = json.loads(path.read_text())
    assert resumed["device"]["world_size"] == straight["device"]["world_size"] == 2
    same_record(resumed, straight)


def test_the_line_says_how_to_resume():
    line = trainer.interrupted_message(signal.SIGINT, 7, "ckpt/checkpoint-7", resume=False)
    assert line == ("interrupted by SIGINT: checkpoint saved at step 7 (ckpt/checkpoint-7); "
                    "rerun the same command with resume=true to resume")
    assert trainer.interrupted_message(signal.SIGTERM, 7, "ckpt/checkpoint-7", resume=True).endswith("rerun the same command to resume")
    assert "no checkpoint saved (train.vocab_parallel=true writes none)" in trainer.interrupted_message(signal.SIGTERM, 7, None, True)


class Signal(TrainerCallback):
    """Send ``signum`` to this process after optimiser step ``step`` (any number of times)."""

    def __init__(self, step: int, signum: int, times: int = 1) -> None:
        self.step, self.signum, self.times = step, signum, times

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            for _ in range(self.times):
                os.kill(os.getpid(), self.signum)
        return control


def test_in_process_a_signal_raises_training_interrupted_and_restores_the_handlers(make_cfg, tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    cfg = make_cfg("scale=smoke", "train.max_steps=5")
    with pytest.raises(trainer.TrainingInterrupted) as stop:
        engine.run(cfg, callbacks=[Signal(HOLD, signal.SIGTERM, times=2)])  # a second SIGTERM changes nothing
    assert (stop.value.signum, stop.value.step, stop.value.exit_code) == (signal.SIGTERM, STOP, 143)
    assert stop.value.checkpoint == str(Path(cfg.output_dir) / f"checkpoint-{STOP}")
    assert "rerun the same command with resume=true to resume" in str(stop.value)
    assert signal.getsignal(signal.SIGTERM) is before
    resumed = engine.run(make_cfg("scale=smoke", "train.max_steps=5", "resume=true"))
    assert resumed["timing"]["resumed_from_step"] == STOP and resumed["train_loss"]["step"] == [1, 2, 3, 4, 5]


def test_a_second_sigint_stops_at_once(make_cfg, tmp_path):
    cfg = make_cfg("scale=smoke", "train.max_steps=5")
    with pytest.raises(KeyboardInterrupt, match="a second SIGINT: stopped at once") as stop:
        engine.run(cfg, callbacks=[Signal(HOLD, signal.SIGINT, times=2)])
    assert not isinstance(stop.value, trainer.TrainingInterrupted)
    assert not Path(cfg.output_dir).exists()  # stopped before any checkpoint


class FakeClock(TrainerCallback):
    """The time :class:`~softmax_zoo.trainer.SaveOnRequest` reads, advanced by ``seconds`` at each optimiser step."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.now = seconds, 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self.now += self.seconds


def test_a_checkpoint_every_save_minutes_and_a_killed_run_resumes_from_it(make_cfg, tmp_path, monkeypatch):
    """25 s a step, train.save_minutes=1: checkpoints after steps 3 and 6 (75 s, then 150 s >= 75 + 60), none of
    train.save_steps; a run killed after the second one resumes from it to the uninterrupted run's record."""
    clock = FakeClock(25.0)
    monkeypatch.setattr(trainer.SaveOnRequest, "clock", staticmethod(lambda: clock.now))
    common = ["scale=smoke", "train.max_steps=7", "train.save_minutes=1", "train.save_total_limit=null"]
    straight = engine.run(make_cfg(*common, f"output_dir={tmp_path / 'a'}", f"results_dir={tmp_path / 'ra'}"), callbacks=[clock])
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["checkpoint-3", "checkpoint-6"]

    clock.now = 0.0
    with pytest.raises(KeyboardInterrupt, match="simulated interruption after step 6"):
        engine.run(make_cfg(*common, f"output_dir={tmp_path / 'b'}"), callbacks=[clock, CrashAfterSave(6)])
    clock.now = 0.0
    resumed = engine.run(make_cfg(*common, f"output_dir={tmp_path / 'b'}", "resume=true"), callbacks=[clock])
    assert resumed["timing"]["resumed_from_step"] == 6
    assert resumed["train_loss"] == straight["train_loss"] and resumed["metrics"] == straight["metrics"]
    assert len(straight["train_loss"]["step"]) == 7


@pytest.mark.parametrize(("scale", "minutes"), [("smoke", 0), ("cpu", 10), ("paper", 30)])
def test_save_minutes_is_on_at_cpu_and_paper_scale(make_cfg, scale, minutes):
    assert make_cfg(f"scale={scale}").train.save_minutes == minutes
    assert make_cfg(f"scale={scale}").run_name == make_cfg(f"scale={scale}", "train.save_minutes=3").run_name  # not in run names


@pytest.mark.parametrize("bad", ["-1", "abc", "true", "inf"])
def test_a_bad_save_minutes_is_refused_before_the_model_is_built(make_cfg, monkeypatch, bad):
    monkeypatch.setattr(engine, "build_task", lambda cfg: pytest.fail("the model was built"))
    with pytest.raises(ValueError, match=r"train.save_minutes must be a number >= 0 \(0: no time-based checkpoints\), got"):
        engine.run(make_cfg("scale=smoke", f"train.save_minutes={bad}"))


def test_a_vocabulary_parallel_run_refuses_save_minutes(make_cfg, monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="set train.save_steps=0 train.save_minutes=0, got train.save_minutes=10"):
        vocab_parallel_training.start(make_cfg("scale=cpu", "train.save_steps=0", "train.vocab_parallel=true"))


class FolderSeen(TrainerCallback):
    """Whether ``folder`` exists at the end of each optimiser step (before that step's checkpoint is saved)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.seen = folder, {}

    def on_step_end(self, args, state, control, **kwargs):
        self.seen[state.global_step] = self.folder.exists()


def test_the_checkpoint_folder_is_made_by_the_first_checkpoint(make_cfg, tmp_path):
    """A run killed (kill -9) before its first checkpoint leaves no empty checkpoint folder: there is none until then."""
    folder = tmp_path / "checkpoints" / "exp" / "run"
    seen = FolderSeen(folder)
    engine.run(make_cfg("scale=smoke", "train.max_steps=3", "train.save_steps=2", f"output_dir={folder}"), callbacks=[seen])
    assert seen.seen == {1: False, 2: False, 3: True}


def test_processes_removing_one_empty_folder_tolerate_each_other(tmp_path, monkeypatch):
    """Two ranks remove the same empty folders: the one that finds a folder already gone stops there, without an error."""
    folder = tmp_path / "checkpoints" / "exp" / "run"
    folder.mkdir(parents=True)
    rmdir = Path.rmdir

    def the_other_rank_first(path: Path) -> None:  # the other process removes the folder between our check and rmdir
        rmdir(path)
        rmdir(path)

    monkeypatch.setattr(Path, "rmdir", the_other_rank_first)
    engine.remove_if_empty(folder, tmp_path / "checkpoints")
    monkeypatch.undo()
    assert not folder.exists() and (tmp_path / "checkpoints" / "exp").is_dir()  # this process stopped where it lost the race
    engine.remove_if_empty(tmp_path / "checkpoints" / "exp", tmp_path / "checkpoints")
    assert not (tmp_path / "checkpoints").exists() and tmp_path.is_dir()
