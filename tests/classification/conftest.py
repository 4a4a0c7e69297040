"""Generated classification folders (:func:`softmax_zoo.data.prepare.generated.classification_task`) and the smoke-scale config on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from softmax_zoo import config
from softmax_zoo.data.prepare.generated import classification_task, classification_tasks


@pytest.fixture(scope="session")
def data_root(tmp_path_factory) -> Path:
    """A folder holding all three generated tasks."""
    root = tmp_path_factory.mktemp("clsdata")
    for task in classification_tasks():
        classification_task(root, task)
    return root


def compose(data_root: Path, tmp_path: Path, task: str, *overrides: str):
    """The composed training config of ``task`` at smoke scale on generated data, writing into tmp_path."""
    return config.compose([
        f"task={task}", "model=tiny_bert", "scale=smoke", f"task.data_dir={data_root / task}",
        f"results_dir={tmp_path}", f"output_dir={tmp_path}/ckpt", *overrides,
    ])
