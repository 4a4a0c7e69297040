"""Provenance: a reproduction starts only from committed code (or with allow_dirty=true, which its
record keeps), and a page names the commits its records come from."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from softmax_zoo import engine, preflight, records
from softmax_zoo import provenance as code_provenance
from softmax_zoo.config import run_name
from softmax_zoo.reports._pages import commits, provenance

REAL_GIT_STATE = code_provenance.git_state


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A git checkout shaped like the project's, one commit: src/, configs/, pyproject.toml and a page in results/."""
    repo = tmp_path / "repo"
    for name in ("src/softmax_zoo/engine.py", "configs/train.yaml", "pyproject.toml", "results/table5.md", "README.md"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("committed\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    return repo


@pytest.fixture
def code_at(checkout, monkeypatch) -> Path:
    """Runs read their code's git state from ``checkout`` (not from this repository's own working tree)."""
    monkeypatch.setattr(code_provenance, "git_state", lambda repo=None, cap=code_provenance.DIRTY_PATHS_KEPT: REAL_GIT_STATE(checkout, cap))
    return checkout


def head(repo: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------- what counts as changed code


def test_only_changes_to_code_configs_and_pyproject_count(checkout):
    (checkout / "results" / "table5.md").write_text("rebuilt by another run\n")  # tracked, not a run input
    (checkout / "README.md").write_text("edited\n")
    (checkout / "notes.txt").write_text("untracked, not a run input\n")
    (checkout / ".gitignore").write_text("*.pyc\n")
    (checkout / "src" / "engine.pyc").write_text("ignored\n")
    assert REAL_GIT_STATE(checkout) == {"commit": head(checkout), "dirty": False, "dirty_paths": [], "dirty_paths_more": 0}

    (checkout / "configs" / "train.yaml").write_text("changed\n")
    (checkout / "src" / "softmax_zoo" / "engine.py").write_text("changed\n")
    git(checkout, "add", "src/softmax_zoo/engine.py")  # staged but not committed counts too
    assert REAL_GIT_STATE(checkout)["dirty_paths"] == ["configs/train.yaml", "src/softmax_zoo/engine.py"]


def test_untracked_code_makes_the_record_dirty_and_is_listed_with_a_count_of_the_rest(checkout):
    (checkout / "src" / "softmax_zoo" / "helper.py").write_text("imported by engine.py, never committed\n")
    state = REAL_GIT_STATE(checkout)
    assert state == {"commit": head(checkout), "dirty": True, "dirty_paths": ["src/softmax_zoo/helper.py"], "dirty_paths_more": 0}
    (checkout / "configs" / "new.yaml").write_text("untracked\n")
    (checkout / "configs" / "train.yaml").write_text("changed\n")
    capped = REAL_GIT_STATE(checkout, cap=2)
    assert capped["dirty_paths"] == ["configs/new.yaml", "configs/train.yaml"] and capped["dirty_paths_more"] == 1


def test_outside_a_git_checkout_there_is_no_commit(tmp_path):
    assert REAL_GIT_STATE(tmp_path) == {"commit": None, "dirty": None, "dirty_paths": [], "dirty_paths_more": 0}
    inside = tmp_path / "repo" / "site-packages"  # an installed package inside somebody else's checkout
    inside.mkdir(parents=True)
    git(tmp_path / "repo", "init", "-q")
    assert REAL_GIT_STATE(inside)["commit"] is None


# ---------------------------------------------------------------- the refusal


def test_a_reproduction_from_changed_code_is_refused_naming_the_files(code_at, make_cfg):
    for i in range(7):
        (code_at / "src" / "softmax_zoo" / f"m{i}.py").write_text("")
    git(code_at, "add", "src")
    cfg = make_cfg("experiment=table5_softmax", "scale=cpu")
    with pytest.raises(ValueError) as refused:
        preflight.check_provenance(cfg)
    message = str(refused.value)
    assert f"7 file(s) under src, configs, pyproject.toml are not as in commit {head(code_at)[:7]} (changed or untracked)" in message
    assert ", ".join(f"src/softmax_zoo/m{i}.py" for i in range(5)) + " and 2 more" in message
    assert "commit them (or remove the untracked ones), or add allow_dirty=true" in message


@pytest.mark.parametrize("untracked", ["src/softmax_zoo/helper.py", "configs/loss/new.yaml"])
def test_a_reproduction_from_untracked_code_or_configs_is_refused(code_at, make_cfg, untracked):
    (code_at / untracked).parent.mkdir(parents=True, exist_ok=True)
    (code_at / untracked).write_text("not committed\n")
    with pytest.raises(ValueError, match=rf"1 file\(s\) under .* \(changed or untracked\): {untracked}; nothing was trained"):
        preflight.check_provenance(make_cfg("experiment=table5_softmax", "scale=cpu"))


def test_more_changed_files_than_a_record_keeps_are_counted_and_all_refused(code_at, make_cfg, monkeypatch):
    monkeypatch.setattr(code_provenance, "DIRTY_PATHS_KEPT", 3)
    monkeypatch.setattr(code_provenance, "git_state", lambda repo=None, cap=None: REAL_GIT_STATE(code_at, 3))
    for i in range(7):
        (code_at / "src" / "softmax_zoo" / f"m{i}.py").write_text("")
    state = preflight.check_provenance(make_cfg("experiment=table5_softmax", "scale=cpu", "allow_dirty=true"))
    assert state["dirty_paths"] == ["src/softmax_zoo/m0.py", "src/softmax_zoo/m1.py", "src/softmax_zoo/m2.py"]
    assert state["dirty_paths_more"] == 4
    with pytest.raises(ValueError, match=r"7 file\(s\) under .* and 2 more"):
        preflight.check_provenance(make_cfg("experiment=table5_softmax", "scale=cpu"))


def test_allow_dirty_starts_it_and_the_git_fields_say_so(code_at, make_cfg):
    (code_at / "pyproject.toml").write_text("changed\n")
    state = preflight.check_provenance(make_cfg("experiment=table5_softmax", "scale=paper", "allow_dirty=true"))
    assert state == {"commit": head(code_at), "dirty": True, "dirty_paths": ["pyproject.toml"], "dirty_paths_more": 0, "allow_dirty": True}


def test_committed_code_and_runs_that_are_not_reproductions_never_refuse(code_at, make_cfg):
    clean = preflight.check_provenance(make_cfg("experiment=table5_softmax", "scale=cpu"))
    assert clean == {"commit": head(code_at), "dirty": False, "dirty_paths": [], "dirty_paths_more": 0, "allow_dirty": False}
    (code_at / "configs" / "train.yaml").write_text("changed\n")
    for overrides in (["experiment=table5_softmax", "scale=smoke"], ["task=synthetic", "scale=cpu"]):
        assert preflight.check_provenance(make_cfg(*overrides))["dirty_paths"] == ["configs/train.yaml"]


def test_the_engine_refuses_before_anything_is_written(code_at, make_cfg):
    (code_at / "src" / "softmax_zoo" / "engine.py").write_text("changed\n")
    cfg = make_cfg("task=synthetic", "scale=cpu", "reproduction=true", "train.max_steps=2", "train.save_steps=0")
    with pytest.raises(ValueError, match="allow_dirty=true"):
        engine.run(cfg)
    assert not Path(cfg.results_dir).exists() and not Path(cfg.output_dir).exists()


def test_a_run_with_allow_dirty_keeps_it_in_its_record(code_at, make_cfg):
    (code_at / "src" / "softmax_zoo" / "engine.py").write_text("changed\n")
    (code_at / "src" / "softmax_zoo" / "helper.py").write_text("untracked\n")
    cfg = make_cfg("task=synthetic", "scale=cpu", "reproduction=true", "allow_dirty=true", "train.max_steps=2", "train.save_steps=0")
    record = engine.run(cfg)
    on_disk = json.loads(records.record_path(Path(cfg.results_dir) / "runs", cfg.experiment_name, cfg.run_name).read_text())
    expected = {"commit": head(code_at), "dirty": True, "dirty_paths": ["src/softmax_zoo/engine.py", "src/softmax_zoo/helper.py"],
                "dirty_paths_more": 0, "allow_dirty": True}
    assert record["git"] == on_disk["git"] == expected


def test_allow_dirty_is_in_no_run_name_and_no_resume_refusal():
    overrides = ["experiment=table5_softmax", "scale=cpu", "seed=1"]
    assert run_name([*overrides, "allow_dirty=true"]) == run_name(overrides)
    assert preflight.differing_keys({"allow_dirty": True}, {"allow_dirty": False}) == []
    assert preflight.differing_keys({}, {"allow_dirty": False}) == []  # a checkpoint written before the key existed


# ---------------------------------------------------------------- pages


def record(commit: str | None, created: str, dirty: bool, dirty_paths: list[str] | None = None) -> dict:
    git_fields = {"commit": commit, "dirty": dirty, **({} if dirty_paths is None else {"dirty_paths": dirty_paths})}
    return {"created": created, "git": git_fields}


def test_a_page_names_the_commits_of_its_records_oldest_first():
    runs = [
        record("def5678" + "0" * 33, "2025-02-01T00:00:00+00:00", False),
        record("abc1234" + "0" * 33, "2025-01-01T00:00:00+00:00", True),  # an older record: dirty is all it has
        record("abc1234" + "0" * 33, "2025-01-02T00:00:00+00:00", False),
        record("abc1234" + "0" * 33, "2025-01-03T00:00:00+00:00", True, dirty_paths=[]),  # only results/ changed
        record("def5678" + "0" * 33, "2025-02-02T00:00:00+00:00", True, dirty_paths=["src/softmax_zoo/engine.py"]),
    ]
    dirty = ("abc1234 (3 runs, 1 with uncommitted changes: changed files not recorded), def5678 (2 runs, 1 with "
             "uncommitted changes: src/softmax_zoo/engine.py); 2 of 5 records made with uncommitted changes")
    assert commits(runs) == f"commits {dirty}"
    assert provenance("sweep x", runs, "results") == (
        f"Made by `python -m softmax_zoo.reports sweep x` from 5 run records; records from commits {dirty}.\n"
    )
    assert commits(runs[:1]) == "commit def5678 (1 run); none of 1 record made with uncommitted changes"
    assert commits([record(None, "2025-01-01", False)]) == "commit unknown (1 run); none of 1 record made with uncommitted changes"
    assert provenance("sweep x", [], "results") == "Made by `python -m softmax_zoo.reports sweep x` from 0 run records.\n"
