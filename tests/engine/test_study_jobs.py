"""The resumable job chains of softmax_zoo.studies: options, overrides and clear errors."""

import pytest

from softmax_zoo.studies import _jobs


def test_parse_splits_study_options_from_train_overrides():
    options, extra = _jobs.parse(["starts=1,2", "model=unilm_tiny", "seed=3"], {"starts": "1,2,4", "seed": "0", "ks": "20"})
    assert options == {"starts": "1,2", "seed": "3", "ks": "20"} and extra == ["model=unilm_tiny"]
    with pytest.raises(ValueError, match=r"arguments must be key=value, got \['oops'\]"):
        _jobs.parse(["oops"], {})


def test_int_list_names_the_option():
    assert _jobs.int_list("8,32", "uniform") == [8, 32]
    with pytest.raises(ValueError, match="kernel_m must be comma-separated integers, got '8,x'"):
        _jobs.int_list("8,x", "kernel_m")


def test_a_job_that_writes_no_record_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(_jobs, "record_path", lambda overrides: tmp_path / "never.json")
    with pytest.raises(RuntimeError, match="finished without writing"):
        _jobs.run_all([["experiment=x"]], runner=lambda overrides: None)
