"""One home per value: every literal in configs/ decides some composed value.

The rule. For a config file F that writes a literal v at key path P (a number, bool, string or
null, lists as one value; not an interpolation, not ``???``), take every composition that
includes F, and in each the files that write P in Hydra's merge order. F's literal is *idle* when
removing it would change no composed value, that is in every such composition either
- a later file writes P (F is shadowed: e.g. a task's top-level ``max_source_len`` that every
  scale's block of its family sets), or
- the file before F that writes P wrote the same literal v (F restates it: e.g. a family's scale
  block repeating train.yaml's ``batch_size: 32``, or the LM family repeating ``max_grad_norm: 1.0``).
An idle literal is a second home of a value (or a value no run ever gets): the test fails on one.

Why compositions and not equal values across files: 0, 1, true, null, 32 recur at one key in
files that are never composed together (classification_cpu.yaml's ``save_steps: 0`` and the smoke
scale's) and are separate decisions; only files composed together can hold one value twice, and
only the merge order says which one wins. So every literal is checked, 0/1/true/null included,
and a failure is never a coincidence of numbers.

Compositions: every experiment at every scale (the fig2 arms with each text task), and every task
at every scale with its default model, loss and distillation, with each model, each loss and each
distillation: what a command line may choose, so that a model, loss or distill file's default that
the experiments override is not taken for idle. The files and their packages come from Hydra's defaults list
(``ConfigLoader.compute_defaults_list``); a model, loss or distill choice swaps only that group's entries,
so those compositions splice each one's entries into the task's list. A family file
(configs/families/) is two entries, as softmax_zoo.config registers it: its shared keys
(``family/<family>``) and each scale's block (``family_scale/<family>_<scale>``). Command-line
values and Hydra's own configs (hydra/) are not files of ours and are not checked; neither is the
fallback of an ``${oc.select:key,fallback}`` interpolation.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

from softmax_zoo import config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
FIG2_TASKS = ("clinc_oos", "iflytek", "wos")
Entry = tuple[str, str]  # (config path without .yaml, package; "" for _global_)


def names(configs: Path, group: str) -> list[str]:
    return sorted(p.stem for p in (configs / group).glob("*.yaml") if not p.stem.startswith("_"))


def experiment_command_lines(experiments: list[str]) -> Iterator[list[str]]:
    for experiment in experiments:
        if experiment in ("fig2", "fig2_softmax"):  # the task comes from the command line
            yield from ([f"experiment={experiment}", f"task={t}"] for t in FIG2_TASKS)
        else:
            yield [f"experiment={experiment}"]


def compositions(configs: Path, tasks: list[str] | None = None, experiments: list[str] | None = None) -> Iterator[list[Entry]]:
    """Each composition's files in merge order (``tasks``, ``experiments``: only those; default all)."""
    GlobalHydra.instance().clear()
    config.register_families(configs)
    with initialize_config_dir(config_dir=str(configs.resolve()), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()

        def entries(overrides: list[str]) -> list[Entry]:
            found = loader.compute_defaults_list("train", overrides, RunMode.RUN).defaults
            return [(d.config_path, d.package or "") for d in found if not d.config_path.startswith("hydra")]

        def group(group_name: str, listed: list[Entry]) -> list[Entry]:
            return [e for e in listed if e[0].startswith(f"{group_name}/")]

        models = {m: group("model", entries([f"model={m}"])) for m in names(configs, "model")}
        losses = {loss: group("loss", entries([f"loss={loss}"])) for loss in names(configs, "loss")}
        distills = {d: group("distill", entries([f"distill={d}"])) for d in names(configs, "distill")}
        for scale in names(configs, "scale"):
            for line in experiment_command_lines(names(configs, "experiment") if experiments is None else experiments):
                yield entries([*line, f"scale={scale}"])
            for task in tasks or names(configs, "task"):
                listed = entries([f"task={task}", f"scale={scale}"])
                yield listed
                swaps = (*(("model", m) for m in models.values()), *(("loss", loss) for loss in losses.values()),
                         *(("distill", d) for d in distills.values()))
                for name, swapped in swaps:
                    yield splice(listed, name, swapped)


def splice(listed: list[Entry], group_name: str, swapped: list[Entry]) -> list[Entry]:
    """``listed`` with its ``group_name`` entries replaced by ``swapped``, at the same place."""
    at = next(i for i, e in enumerate(listed) if e[0].startswith(f"{group_name}/"))
    rest = [e for e in listed if not e[0].startswith(f"{group_name}/")]
    return rest[:at] + swapped + rest[at:]


def literal_leaves(node, prefix: str) -> Iterator[tuple[str, object]]:
    """(key path, value) of every leaf below ``node`` (a list is one leaf)."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from literal_leaves(value, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, node


def where(path: str) -> str:
    """The file (and block) an entry's keys are written in: ``family_scale/lm_cpu`` -> ``configs/families/lm.yaml (scales.cpu)``."""
    group, _, name = path.partition("/")
    if group == config.FAMILY_GROUPS["shared"]:
        return f"configs/{config.FAMILY_DIR}/{name}.yaml"
    if group == config.FAMILY_GROUPS["scales"]:
        family, _, scale = name.rpartition("_")
        return f"configs/{config.FAMILY_DIR}/{family}.yaml (scales.{scale})"
    return f"configs/{path}.yaml"


def is_literal(value) -> bool:
    return not (isinstance(value, str) and ("${" in value or value == "???"))


def idle_literals(configs: Path, tasks: list[str] | None = None, experiments: list[str] | None = None) -> set[tuple[str, str]]:
    """(file, key path) of every literal that decides no composed value (the module's rule)."""
    files: dict[str, dict] = {}
    families = config.family_configs(configs)
    seen, deciding = set(), set()
    for listed in compositions(configs, tasks, experiments):
        writers: dict[str, list[tuple[str, object]]] = defaultdict(list)
        for path, package in listed:
            if path not in files:
                node = families[path] if path in families else OmegaConf.load(configs / f"{path}.yaml")
                raw = OmegaConf.to_container(node, resolve=False)
                files[path] = {k: v for k, v in raw.items() if k != "defaults"}
            for key, value in literal_leaves(files[path], package):
                writers[key].append((path, value))
        for key, wrote in writers.items():
            for i, (path, value) in enumerate(wrote):
                if not is_literal(value):
                    continue
                seen.add((path, key))
                if i == len(wrote) - 1 and (i == 0 or wrote[i - 1][1] != value):
                    deciding.add((path, key))
    return seen - deciding


@pytest.fixture(scope="module")
def repo_idle() -> set[tuple[str, str]]:
    return idle_literals(CONFIGS)


@pytest.fixture(autouse=True)
def repo_families():
    """The repository's families registered again after a test that composed a copy of configs/."""
    yield
    config.register_families(CONFIGS)


def test_every_literal_decides_a_composed_value(repo_idle):
    extra = sorted(repo_idle)
    assert not extra, "literals restated or shadowed in every composition (remove them; see the module docstring):\n" + "\n".join(
        f"  {where(path)}: {key}" for path, key in extra
    )


@pytest.mark.parametrize(
    "edit, found",
    [
        # restated: the LM family repeats train.yaml's max_grad_norm
        (("families/lm", "  lr_scheduler: constant\n", "  lr_scheduler: constant\n  max_grad_norm: 1.0\n"),
         {("family/lm", "train.max_grad_norm")}),
        # shadowed: a top-level length that each seq2seq scale file sets
        (("task/gigaword", "name: gigaword\n", "name: gigaword\nmax_source_len: 224\n"), {("task/gigaword", "task.max_source_len")}),
        # nested: a decoding batch in the seq2seq family that every scale sets, the cpu scale to the same 64
        (("families/seq2seq", "    min_len: 0\n", "    min_len: 0\n    batch_size: 64\n"),
         {("family/seq2seq", "task.decode.batch_size"), ("family_scale/seq2seq_cpu", "task.decode.batch_size")}),
        # a base value every family's cpu and paper blocks override, and the two blocks that equal it
        (("train", "  batch_size: ???", "  batch_size: 32 "),
         {("train", "train.batch_size"), ("family_scale/seq2seq_cpu", "train.batch_size"), ("family_scale/lm_cpu", "train.batch_size")}),
    ],
    ids=["restated", "shadowed", "nested", "base"],
)
def test_rule_finds_a_value_given_two_homes(tmp_path, edit, found):
    """A copy of configs/ with one duplicate written in: exactly that literal (and what it makes idle) is found."""
    # a few compositions suffice, the same ones before and after the edit
    tasks, experiments = ["gigaword", "ptb"], ["table5_sparse_softmax", "kernel_bias_full"]
    configs = tmp_path / "configs"
    shutil.copytree(CONFIGS, configs)
    before = idle_literals(configs, tasks, experiments)
    path, old, new = edit
    file = configs / f"{path}.yaml"
    assert file.read_text().count(old) == 1
    file.write_text(file.read_text().replace(old, new))
    assert idle_literals(configs, tasks, experiments) - before == found
