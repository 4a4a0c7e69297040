"""The resumable job chains of softmax_zoo.studies: options, overrides, clear errors, and a stop that lets the run save."""

import logging
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from softmax_zoo.studies import _jobs, kernel_bias_paper, seeds, sparse_regime


def test_a_study_parser_splits_its_options_from_the_train_overrides():
    args = sparse_regime.PARSER.parse(["starts=1,2", "model=unilm_tiny", "seeds=3,4"])
    assert args.options == {"scale": "cpu", "starts": [1, 2], "ks": [20, 100], "seeds": [3, 4], "start_seed": 0, "epochs": None}
    assert args.rest == ["model=unilm_tiny"]
    with pytest.raises(ValueError, match=r"arguments must be key=value, got \['oops'\]"):
        sparse_regime.PARSER.parse(["oops"])


def test_a_bad_study_option_is_named(capsys):
    assert kernel_bias_paper.main(["kernel_m=8,x"]) == 2
    assert "kernel_m='x': must be an integer >= 1" in capsys.readouterr().err
    assert sparse_regime.main(["starts=-1"]) == 2
    assert "starts='-1': must be >= 0" in capsys.readouterr().err


def test_kernel_bias_paper_jobs_from_the_command_line(monkeypatch):
    chains = []
    monkeypatch.setattr(kernel_bias_paper, "run_chain", lambda job_list, **_: chains.append(job_list))
    kernel_bias_paper.main(["uniform=8", "kernels=quadratic", "kernel_m=32", "model.hidden_size=8"])
    assert chains == [[
        ["experiment=kernel_bias_paper_full", "scale=cpu", "seed=0", "model.hidden_size=8"],
        ["experiment=kernel_bias_paper_sampled", "scale=cpu", "seed=0", "model.hidden_size=8",
         "loss/sampler=quadratic", "loss.num_samples=32"],
        ["experiment=kernel_bias_paper_sampled", "scale=cpu", "seed=0", "model.hidden_size=8",
         "loss/sampler=uniform", "loss.num_samples=8"],
    ]]


def test_a_job_that_writes_no_record_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(_jobs, "record_path", lambda overrides: tmp_path / "never.json")
    with pytest.raises(RuntimeError, match="finished without writing"):
        _jobs.run_all([["experiment=x"]], runner=lambda overrides: None)


def test_seed_study_runs_every_arm_seed_by_seed_with_the_train_overrides(monkeypatch):
    chains, anew = [], []
    monkeypatch.setattr(seeds, "run_chain", lambda job_list, **kw: (chains.append(job_list), anew.append(kw["anew"])))
    seeds.main(["arms=table5_softmax,table5_sparse_softmax", "seeds=1,2", "start=softmax_run"])
    assert chains == [[
        [f"experiment={arm}", "scale=cpu", f"seed={seed}", "start=softmax_run"]
        for seed in (1, 2) for arm in ("table5_softmax", "table5_sparse_softmax")
    ]]
    assert anew == ["give new seeds, seeds=3,4 (make: SEEDS=3,4); their records join these on the page"]


def test_seed_study_record_paths_are_the_committed_run_names():
    """The chain skips a job by its record's path: the committed seed-0 Table 5 records, fresh and init."""
    names = [_jobs.record_path(job).name for job in seeds.jobs(["table5_softmax", "table5_sparse_softmax"], [0], scale="cpu")]
    assert names == ["gigaword_unilm_minilm_softmax_cpu_seed0.json", "gigaword_unilm_minilm_sparse_softmax_cpu_seed0.json"]
    init = _jobs.record_path(seeds.jobs(["table5_sparse_softmax"], [0], scale="cpu", extra=["start=softmax_run"])[0])
    assert init.name == "gigaword_unilm_minilm_sparse_softmax_init-softmax_cpu_seed0.json"


def test_seed_study_refuses_an_empty_or_negative_seed_list(capsys):
    assert seeds.main(["seeds=-1"]) == 2
    assert "seeds='-1': must be >= 0" in capsys.readouterr().err
    assert seeds.main(["arms="]) == 2
    assert "need at least one arm and one seed, got arms=[]" in capsys.readouterr().err


def test_a_study_whose_every_run_is_done_says_so_and_how_to_run_it_anew(tmp_path, monkeypatch, caplog):
    paths = {"a": tmp_path / "runs" / "arm_a" / "a.json", "b": tmp_path / "runs" / "arm_b" / "b.json"}
    monkeypatch.setattr(_jobs, "to_do", lambda overrides: (paths[overrides[0]], None))  # both recorded

    def never(overrides):
        raise AssertionError(f"{overrides} has its record: it must not run")

    with caplog.at_level(logging.INFO, logger=_jobs.__name__):
        assert _jobs.run_all([["a"], ["b"]], runner=never, anew="give new seeds, seeds=3") == list(paths.values())
    done = [r.getMessage() for r in caplog.records if r.getMessage().startswith("done already: all")]
    assert done == [f"done already: all 2 runs of this study have their records ({tmp_path / 'runs' / 'arm_a'}, "
                    f"{tmp_path / 'runs' / 'arm_b'}); nothing was trained; to run it anew, give new seeds, seeds=3"]
    assert _jobs.new_seeds([0, 1, 2]) == "3,4,5" and _jobs.new_seeds([0]) == "1"


# A stand-in for `python -m softmax_zoo.train`: on SIGINT or SIGTERM it takes a second to "save its checkpoint",
# writes saved.<signal>, and exits with 128 + the signal, as a run does.
RUN = """#!{python}
import signal, sys, time
from pathlib import Path
folder = Path({folder!r})
def stop(signum, frame):
    time.sleep(1.0)
    (folder / f"saved.{{signum}}").touch()
    sys.exit(128 + signum)
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, stop)
(folder / "ready").touch()
time.sleep(60)
"""


@pytest.mark.parametrize("to_both", [True, False], ids=["ctrl-c-to-the-group", "sigterm-to-the-chain"])
def test_a_stopped_chain_waits_for_its_run_to_save(tmp_path, monkeypatch, to_both):
    """Ctrl-C reaches the chain and its run (one process group); SIGTERM to the chain alone is passed on. Either way the
    chain waits while the run saves, then ends with the run's code."""
    run = tmp_path / "run"
    run.write_text(RUN.format(python=sys.executable, folder=str(tmp_path)))
    run.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(run))
    children, popen = [], subprocess.Popen
    monkeypatch.setattr(subprocess, "Popen", lambda *args, **kwargs: children.append(popen(*args, **kwargs)) or children[-1])
    signum = signal.SIGINT if to_both else signal.SIGTERM

    def stop_when_ready():
        while not (tmp_path / "ready").exists():
            time.sleep(0.05)
        if to_both:
            children[0].send_signal(signum)
        os.kill(os.getpid(), signum)

    def not_passed_on(signum, frame):
        raise RuntimeError("SIGTERM was not passed on to the run")

    before = signal.signal(signal.SIGTERM, not_passed_on)
    try:
        threading.Thread(target=stop_when_ready, daemon=True).start()
        with pytest.raises((SystemExit, KeyboardInterrupt)) as ended:  # the chain's own Ctrl-C, had it not waited
            _jobs.train_in_subprocess(["experiment=x"])
    finally:
        signal.signal(signal.SIGTERM, before)
    assert isinstance(ended.value, SystemExit) and ended.value.code == 128 + signum
    assert (tmp_path / f"saved.{int(signum)}").exists()
