"""A dataset of an existing family (classification) added from outside the package: a preparer module
and a task file, and nothing else.

my_topics.py (a preparer of a JSON Lines release, ``{"text", "topic"}`` per line) and
conf/task/my_topics.yaml are written as README "Extend it" names them, in a folder outside the
repository; ``$SOFTMAX_ZOO_PREPARERS`` names the module, so that :func:`registry.preparers` imports it
beside the package's own. README's commands, as written, prepare it and train it at smoke scale.
"""

from __future__ import annotations

import json
import logging
import sys
import textwrap

import pytest

from softmax_zoo.data.prepare import cli, registry
from softmax_zoo.data.prepare.generated import generated_data

MODULE = TASK = "my_topics"

PREPARER = '''
"""Topics of short texts: raw/my_topics/{train,validation,test}.jsonl, one {"text", "topic"} a line."""
import json
import sys

from softmax_zoo.data.prepare import Prepared, register

RAW_NAME = "my_topics"
KIND = "classification"
OPTIONS = {}
SPLITS = ("train", "validation", "test")


def load_local(raw, opts):
    splits = {}
    for split in SPLITS:
        lines = raw.require(f"{split}.jsonl", what=f"the {split} split").read_text().splitlines()
        splits[split] = [{"text": row["text"], "label": row["topic"]} for row in map(json.loads, lines)]
    return Prepared(KIND, splits, labels=sorted({row["label"] for row in splits["train"]}))


def hub_spec(opts):
    raise ValueError("my_topics is not on the hub")


def from_hub(ds, opts, raw=None):
    raise ValueError("my_topics is not on the hub")


def generate(root, seed=0):
    from softmax_zoo.data.prepare.generated import classification_folder, english

    return classification_folder(root, "my_topics", english(4, 10), seed=seed)


register("my_topics", sys.modules[__name__])
'''

TASK_CONFIG = """
defaults:
  - override /model@_global_.model: tiny_bert
  - override /family@_global_.family: classification
name: my_topics
data_dir: ${oc.env:SOFTMAX_ZOO_DATA,data}/my_topics
primary_metric: test/micro_f1
metric_higher_is_better: true
oos_label: null
caveat: generated topics
scales:
  cpu: {max_length: 32, cache_features: false, mlp_layers: 1, epochs: 1, batch_size: 16, eval_batch_size: 64, lr: 1.0e-3, weight_decay: 0.0}
  paper: {max_length: 32, epochs: 1, batch_size: 16, eval_batch_size: 64}
"""

TOPICS = ("sport", "music", "weather")


def write_release(folder):
    """raw/my_topics/: 8 train, 4 validation and 4 test texts per topic."""
    (folder / "raw" / TASK).mkdir(parents=True)
    for split, n in (("train", 8), ("validation", 4), ("test", 4)):
        rows = [{"text": f"a {topic} text number {i}", "topic": topic} for topic in TOPICS for i in range(n)]
        (folder / "raw" / TASK / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The user's folder (my_topics.py, its release, conf/task/my_topics.yaml), the module importable and named
    in $SOFTMAX_ZOO_PREPARERS here; the registry is restored afterwards."""
    (tmp_path / f"{MODULE}.py").write_text(textwrap.dedent(PREPARER))
    (tmp_path / "conf" / "task").mkdir(parents=True)
    (tmp_path / "conf" / "task" / f"{TASK}.yaml").write_text(TASK_CONFIG)
    write_release(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(registry.PREPARER_MODULES, MODULE)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_FAILED", {})
    yield tmp_path
    sys.modules.pop(MODULE, None)


def test_a_preparer_named_in_the_env_var_registers_and_generates(folder):
    found = registry.preparers()
    assert found[TASK] is sys.modules[MODULE] and "clinc_oos" in found
    meta = json.loads((generated_data(folder / "generated")[TASK] / "meta.json").read_text())
    assert meta["kind"] == "classification"  # its own generate, collected with every other preparer's


def test_a_preparer_without_kind_is_left_out_naming_its_module(folder, caplog):
    """The other tasks still prepare; the broken one is named, with its error, when asked for."""
    source = textwrap.dedent(PREPARER).replace('KIND = "classification"\n', "").replace("Prepared(KIND,", 'Prepared("classification",')
    (folder / f"{MODULE}.py").write_text(source)
    with caplog.at_level(logging.WARNING):
        found = registry.preparers()
    assert TASK not in found and "clinc_oos" in found
    assert f"preparer module {MODULE} left out: TypeError: the preparer of 'my_topics' ({MODULE}) lacks ['KIND']" in caplog.text
    with pytest.raises(ValueError, match=rf"got 'my_topics'; preparer module {MODULE} failed to import: TypeError: .* lacks \['KIND'\]"):
        cli.prepare_task(TASK, raw_root_dir=folder / "raw", out_dir=folder / "data")


def test_a_preparer_of_an_unknown_kind_is_refused(folder):
    (folder / f"{MODULE}.py").write_text(textwrap.dedent(PREPARER).replace('KIND = "classification"', 'KIND = "classify"'))
    registry.preparers()
    assert "KIND must be one of ('classification', 'seq2seq', 'lm'), got 'classify'" in registry.failed_modules()[MODULE]


def test_an_unknown_task_points_to_the_env_var(monkeypatch):
    monkeypatch.setattr(registry, "_FAILED", {})
    with pytest.raises(ValueError, match=r"got 'nope' \(a preparer outside softmax_zoo: name its module in \$SOFTMAX_ZOO_PREPARERS\)"):
        cli.prepare_task("nope")


def test_readme_recipe_prepares_and_trains(folder, run_readme_recipe):
    """README's dataset recipe from a folder outside the repository: prepared from its release, trained at smoke scale."""
    run_readme_recipe("# a dataset of an existing family", folder)
    meta = json.loads((folder / "data" / TASK / "meta.json").read_text())
    assert meta["labels"] == sorted(TOPICS) and meta["splits"] == {"train": 24, "validation": 12, "test": 12}
    [path] = (folder / "scratch" / "runs" / "default").glob("*.json")
    record = json.loads(path.read_text())
    assert record["choices"]["task"] == TASK and 0.0 <= record["metrics"]["test/micro_f1"] <= 1.0
