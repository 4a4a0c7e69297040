"""Every config in configs/ composes (and the ones that need no prepared data instantiate).

Parametrised from the files on disk, so configs added later (tasks, models, experiments,
families) are covered without editing this test.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import hydra
import pytest
from omegaconf import OmegaConf

from softmax_zoo import config, losses
from softmax_zoo.models import build_head

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
FIXED_COST = "{_target_:softmax_zoo.losses.methods.adaptive_cutoffs.MatmulCost,c_m:1e-5,lam:1e-11,w0:1e6}"


def names(group: str) -> list[str]:
    """The group's selectable configs; a leading "_" marks a shared block that other configs include."""
    return sorted(p.stem for p in (CONFIGS / group).glob("*.yaml") if not p.stem.startswith("_"))


def resolved(cfg) -> dict:
    """The whole config resolved (fails on a broken interpolation)."""
    return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)


def test_every_config_file_starts_with_a_comment():
    bad = [str(p.relative_to(CONFIGS)) for p in sorted(CONFIGS.rglob("*.yaml")) if not p.read_text().startswith("#")]
    assert not bad, f"config files must start with a comment (the command that uses them): {bad}"


@pytest.mark.parametrize("task", names("task"))
def test_task_composes_with_its_default_model(make_cfg, task):
    cfg = make_cfg(f"task={task}")
    out = resolved(cfg)
    assert out["task"]["name"] == task
    assert callable(hydra.utils.get_method(out["task"]["builder"]))
    assert "name" in out["model"] and out["scale"]["name"] == "cpu"


@pytest.mark.parametrize("task", names("task"))
@pytest.mark.parametrize("scale", names("scale"))
def test_every_task_composes_at_every_scale(make_cfg, task, scale):
    """Each pair reads its family's `scales.<scale>` block, which reads the task's ``scales.<scale>`` block."""
    cfg = make_cfg(f"task={task}", f"scale={scale}")
    assert resolved(cfg)["scale"]["name"] == scale


def test_every_family_file_is_used():
    """No orphan: each family file is some task's choice, and its `scales:` block names only scales."""
    families = {OmegaConf.load(CONFIGS / "task" / f"{t}.yaml").defaults[-1]["override /family@_global_.family"] for t in names("task")}
    files = config.family_files(CONFIGS)
    assert families == set(files)
    assert all(set(file.get("scales") or {}) <= set(names("scale")) for file in files.values())


@pytest.mark.parametrize("model", names("model"))
def test_model_composes_and_resolves_with_some_task(make_cfg, model):
    """A model may read its task's keys (``${task.max_length}``): some task must resolve it."""
    errors = []
    for task in names("task"):
        try:
            assert resolved(make_cfg(f"task={task}", f"model={model}"))["model"]
            return
        except Exception as e:  # noqa: BLE001 - collected and reported below
            errors.append(f"{task}: {e}")
    pytest.fail(f"model={model} resolves with no task:\n" + "\n".join(errors))


@pytest.mark.parametrize("scale", names("scale"))
def test_scale_composes(make_cfg, scale):
    assert resolved(make_cfg(f"scale={scale}"))["scale"]["name"] == scale


FIG2_TASKS = ("clinc_oos", "iflytek", "wos")


def experiment_overrides(experiment: str) -> list[list[str]]:
    """Command lines of an experiment: the fig2 pair takes its task from the command line."""
    if experiment.startswith("fig2"):
        return [[f"experiment={experiment}", f"task={t}"] for t in FIG2_TASKS]
    return [[f"experiment={experiment}"]]


@pytest.mark.parametrize("experiment", names("experiment"))
def test_experiment_composes(make_cfg, experiment):
    for overrides in experiment_overrides(experiment):
        out = resolved(make_cfg(*overrides))
        assert callable(hydra.utils.get_method(out["task"]["builder"]))


@pytest.mark.parametrize("task", FIG2_TASKS)
def test_fig2_records_land_in_the_per_task_experiment(make_cfg, task):
    out = resolved(make_cfg("experiment=fig2", f"task={task}", "loss.k=20", "scale=cpu"))
    assert out["experiment_name"] == f"fig2_{task}" and out["run_name"] == f"{task}_cpu_sparse_k20_seed0"


def test_start_softmax_run_names_the_init_run(make_cfg):
    out = resolved(make_cfg("experiment=table3_sparse_softmax", "start=softmax_run", "scale=cpu"))
    assert out["run_name"] == "squad_qg_unilm_minilm_sparse_softmax_init-softmax_cpu_seed0"
    assert out["init_from"] == "checkpoints/table3/squad_qg_unilm_minilm_softmax_cpu_seed0"
    assert out["train"]["epochs"] == 1


@pytest.mark.parametrize("model", names("model"))
def test_model_config_has_a_target(model):
    node = OmegaConf.load(CONFIGS / "model" / f"{model}.yaml")
    assert callable(hydra.utils.get_object(node._target_))


@pytest.mark.parametrize("loss", names("loss"))
def test_loss_instantiates(make_cfg, loss):
    cfg = make_cfg(f"loss={loss}", f"loss.cutoffs_search.cost={FIXED_COST}" if loss == "adaptive_softmax" else "seed=0")
    head = build_head(cfg.loss, 64, 50, class_counts=list(range(100, 50, -1)))
    assert isinstance(head, losses.OutputHead) and head.num_classes == 50


@pytest.mark.parametrize("sampler", names("loss/sampler"))
def test_sampler_instantiates(make_cfg, sampler):
    cfg = make_cfg("loss=sampled_softmax", f"loss/sampler={sampler}")
    head = build_head(cfg.loss, 8, 50, class_counts=list(range(100, 50, -1)))
    assert isinstance(head, losses.SampledSoftmaxHead)


@pytest.mark.parametrize("logger", names("logger"))
def test_logger_composes(make_cfg, logger):
    out = resolved(make_cfg(f"logger={logger}"))
    assert out["logger"]["name"] == logger


def test_synthetic_task_instantiates(make_cfg):
    from softmax_zoo.engine import build_task

    task = build_task(make_cfg("task=synthetic", "scale=smoke"))
    assert len(task.train_dataset) == 64 and set(task.eval_datasets) == {"validation", "test"}
    assert len(task.data_meta["sha256"]["generated"]) == 64


def test_slurm_launcher_config():
    """Plain YAML check; composed with Hydra only where hydra-submitit-launcher is installed."""
    node = OmegaConf.load(CONFIGS / "hydra" / "launcher" / "submitit_slurm.yaml")
    assert node._target_.endswith("SlurmLauncher") and node.gpus_per_node == 1
    try:
        installed = importlib.util.find_spec("hydra_plugins.hydra_submitit_launcher") is not None
    except ModuleNotFoundError:  # no hydra_plugins namespace at all
        installed = False
    if not installed:
        pytest.skip("hydra-submitit-launcher (the `slurm` extra) is not installed: YAML checked, not composed")
    from hydra import compose, initialize_config_dir

    config.register(CONFIGS)  # as train.py does before @hydra.main composes
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        cfg = compose("train", overrides=["hydra/launcher=submitit_slurm"], return_hydra_config=True)
    assert cfg.hydra.launcher.timeout_min == node.timeout_min


def test_importing_config_registers_nothing_until_register_is_called():
    script = (
        "from hydra.core.config_store import ConfigStore\n"
        "from omegaconf import OmegaConf\n"
        "from softmax_zoo import config\n"
        "def state():\n"
        "    return OmegaConf.has_resolver('zoo.run_id'), 'family' in ConfigStore.instance().repo\n"
        "print(state())\n"
        "config.register()\n"
        "print(state())\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["(False, False)", "(True, True)"]


def test_unknown_group_choice_lists_the_valid_ones(make_cfg):
    from hydra.errors import MissingConfigException

    with pytest.raises(MissingConfigException) as err:
        make_cfg("loss=no_such_loss")
    for valid in names("loss"):
        assert valid in str(err.value)


def test_unknown_key_hint_lists_the_valid_keys():
    from softmax_zoo.config import unknown_key_hint

    hint = unknown_key_hint(["loss=sparse_softmax", "loss.kk=3", "train.lr=0.1", "seed=1"], CONFIGS)
    assert hint == (  # a head's key: the head's options, as +loss.kk=3 gives them (models.heads.check_loss_options)
        "loss.kk: unknown option of SparseSoftmaxHead 'kk' (did you mean 'k'?); valid: bias, chunk_size, class_weight, "
        "full_softmax_steps, ignore_index, k, label_smoothing, reduction, return_entropy, return_lse, return_target_log_prob, "
        "return_token_accuracy, shift, smoothing_over, softcap, target_in_support, temperature, z_loss"
    )
    assert unknown_key_hint(["train.lrr=0.1"], CONFIGS).startswith("unknown key 'train.lrr'; valid keys under train: batch_size,")
    assert unknown_key_hint(["loss=sparse_softmax", "loss.k=3", "-m"], CONFIGS) is None


@pytest.mark.parametrize("option", names("loss/sampler"))
def test_compose_option_composes_one_option_of_a_group(option):
    assert config.compose_option("loss/sampler", option, CONFIGS) == OmegaConf.to_container(
        OmegaConf.load(CONFIGS / "loss" / "sampler" / f"{option}.yaml"))


def test_compose_option_composes_a_defaults_list_and_keeps_the_callers_hydra_state():
    from hydra.core.hydra_config import HydraConfig

    config.compose(["loss=sparse_softmax"], CONFIGS)
    before = HydraConfig.get().runtime.choices.loss
    node = {"defaults": [{"sampler": "quadratic"}], "_target_": "softmax_zoo.losses.SampledSoftmaxHead", "num_samples": 4}
    composed = config.compose_option("loss", node, CONFIGS)
    assert composed["sampler"]["_target_"] == "softmax_zoo.losses.QuadraticKernelSampler" and "defaults" not in composed
    assert HydraConfig.get().runtime.choices.loss == before == "sparse_softmax"
    with pytest.raises(ValueError, match=r"unknown loss/sampler option 'quadratik' \(did you mean 'quadratic'\?\); valid: "):
        config.compose_option("loss", {**node, "defaults": [{"sampler": "quadratik"}]}, CONFIGS)


def test_a_long_override_suffix_stays_a_valid_file_name():
    overrides = [f"task.{k}={v}" for k, v in (("n_train", 640), ("n_validation", 320), ("n_test", 320), ("dim", 24),
                                               ("separation", 2.5), ("noise", 1.5), ("zipf", 1.1), ("data_seed", 7))]
    overrides += ["model.hidden=48", "model.layers=2", "model.dropout=0.2", "train.lr=0.003", "train.batch_size=16"]
    first = config.compose(["scale=smoke", *overrides]).run_name
    again = config.compose(["scale=smoke", *reversed(overrides)]).run_name
    assert first == again  # stable: the overrides are sorted before hashing
    assert len(first.encode()) < 200 and "task.data_seed=7" in first  # a readable head, then a hash
    assert config.compose(["scale=smoke", *overrides[:-1]]).run_name != first
