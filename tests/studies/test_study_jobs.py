"""The resumable job chains of softmax_zoo.studies: options, overrides and clear errors."""

import logging

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
