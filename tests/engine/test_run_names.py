"""Run names come from one function (softmax_zoo.config.run_id) and stay the join keys of the committed records.

Every committed training record in results/runs/ keeps the overrides it was run with (``job.overrides``,
or for older records its command) and its Hydra choices; composing those overrides must give back its
``run_name`` byte for byte and the same choices, so renaming a template (or the suffix rule) that would
orphan a record fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softmax_zoo.config import CONFIG_DIR, compose, hydra_choices, run_id, run_name, with_changes

RUNS = CONFIG_DIR.parent / "results" / "runs"


def _training_records() -> list[Path]:
    paths = []
    for path in sorted(RUNS.glob("*/*.json")):
        command = (json.loads(path.read_text()).get("command") or "").split()
        if "softmax_zoo.train" in command[:3]:
            paths.append(path)
    return paths


def _overrides(record: dict) -> list[str]:
    return list((record.get("job") or {}).get("overrides") or record["command"].split()[3:])


def test_there_are_committed_training_records():
    assert len(_training_records()) > 100


@pytest.mark.parametrize("path", _training_records(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_committed_record_is_named_by_its_overrides(path):
    record = json.loads(path.read_text())
    overrides = _overrides(record)
    assert run_name(overrides) == record["run_name"] == path.stem
    compose(overrides)
    assert {k: v for k, v in hydra_choices().items()} == record["choices"]


def test_run_id_joins_parts_and_the_overrides_the_parts_do_not_name():
    overrides = ["experiment=fig2", "loss.k=5", "seed=0", "task.lr=1", "loss/sampler=uniform"]
    exclude = ["experiment", "seed"]
    expected = "wos_cpu_sparse_k5_seed0_loss-sampler=uniform,task.lr=1"
    assert run_id(["wos", "cpu", "sparse_k5", "seed0"], overrides, ["loss.k"], exclude) == expected
    assert run_id(["a"], ["seed=1"], (), exclude) == "a"
    long = run_id(["a"], [f"x{i}=1" for i in range(40)], (), [])
    assert len(long) == len("a_") + 120 and long.startswith("a_x0=1,x10=1")  # sorted as strings; a hash at the end


def test_a_run_names_the_run_it_starts_from_by_the_same_function():
    cfg = compose(["experiment=table5_sparse_softmax", "start=softmax_run", "scale=cpu", "seed=1", "train.max_steps=3"])
    softmax = run_name(["experiment=table5_softmax", "scale=cpu", "seed=1"])
    assert cfg.init_from == f"checkpoints/table5/{softmax}"
    assert cfg.run_name == "gigaword_unilm_minilm_sparse_softmax_init-softmax_cpu_seed1"


def test_with_changes_sets_and_drops_overrides():
    assert with_changes(["loss=sparse_softmax", "loss.k=5", "seed=0", "start=x"], ["loss=softmax", "~start", "~loss.*"]) == [
        "seed=0", "loss=softmax"]
