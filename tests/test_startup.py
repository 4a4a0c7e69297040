"""Start-up: an entry point imports no more than it needs, and a bad input is reported before the training stack is.

Each check runs in a fresh interpreter and asserts which modules were imported (never how long it took):
importing an entry module loads none of the heavy libraries, and a bad command is refused before
transformers (whose ``Trainer`` is most of a run's start-up) is imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from softmax_zoo import preflight
from softmax_zoo.config import compose
from softmax_zoo.models.heads import check_loss_options

HEAVY = ("torch", "transformers", "datasets", "wandb", "matplotlib", "accelerate", "rouge_score", "sacrebleu")
TRAINING_STACK = tuple(m for m in HEAVY if m != "torch")  # torch is what the loss options' checks need
# Entry modules that need torch for what they do at once (their own training loops, timing).
NEEDS_TORCH = {"softmax_zoo.studies.stable", "softmax_zoo.studies.lm_speed", "softmax_zoo.studies.sparse_helps"}
ENTRY_MODULES = (
    "softmax_zoo.train",
    "softmax_zoo.reports.__main__",
    "softmax_zoo.data.prepare.cli",
    "softmax_zoo.studies.kernel_bias_paper",
    "softmax_zoo.studies.sparse_regime",
    "softmax_zoo.studies.seeds",
    "softmax_zoo.studies.stable",
    "softmax_zoo.studies.sparse_helps",
    "softmax_zoo.studies.lm_speed",
    "softmax_zoo.config",
    "softmax_zoo.preflight",
    "softmax_zoo.tracking",
)
# Run a module as ``python -m`` would, then print which heavy modules it had imported by the time it exited.
RUN_AND_REPORT = """
import json, runpy, sys
sys.argv = [sys.argv[1], *sys.argv[2:]]
try:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
except SystemExit as exit_:
    code = exit_.code
except Exception as error:  # a command that fails with a traceback
    code = type(error).__name__
else:
    code = 0
print(json.dumps({"code": code, "imported": [m for m in %r if m in sys.modules]}))
""" % (HEAVY,)


def python(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def heavy_after_import(module: str, cwd: Path) -> list[str]:
    out = python("-c", f"import sys, {module}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))", cwd=cwd)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def run_module(module: str, *args: str, cwd: Path) -> tuple[dict, str]:
    """Run ``python -m module args`` (in-process via runpy) and return ({code, imported}, stderr)."""
    out = python("-c", RUN_AND_REPORT, module, *args, cwd=cwd)
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_an_entry_module_imports_no_heavy_library(module, tmp_path):
    allowed = {"torch"} if module in NEEDS_TORCH else set()
    assert set(heavy_after_import(module, tmp_path)) <= allowed


@pytest.mark.parametrize("overrides, message", [
    (["loss=sparse_softmax", "loss.k=0"], "k must be >= 1, got 0"),
    (["seed=abc"], "seed must be an integer >= 0"),
    (["loss.label_smoothing=2"], "label_smoothing must be in [0, 1], got 2"),
    (["loss=sparse_softmax", "loss.kk=3"], "loss.kk: unknown option of SparseSoftmaxHead 'kk' (did you mean 'k'?)"),
    (["loss=sparse_softmax", "+loss.kk=3"], "loss.kk: unknown option of SparseSoftmaxHead 'kk' (did you mean 'k'?)"),
    (["train.lr=-1"], "train.lr must be a number > 0 (e.g. train.lr=1e-3), got train.lr=-1"),
    (["task=nonexistent"], "Could not find 'task/nonexistent'"),
])
def test_a_bad_training_command_is_refused_before_the_training_stack_is_imported(overrides, message, tmp_path):
    result, stderr = run_module("softmax_zoo.train", *overrides, f"hydra.run.dir={tmp_path / 'h'}", cwd=tmp_path)
    assert result["code"] == 1 and message in stderr, stderr
    assert not set(result["imported"]) & set(TRAINING_STACK), result


@pytest.mark.parametrize("override", ["loss.kk=3", "+loss.kk=3"])
def test_an_unknown_loss_option_is_one_line_the_heads(override, tmp_path):
    """Not Hydra's "Could not override ... Key 'kk' is not in struct" lines, nor a model that "does not fit"."""
    _, stderr = run_module("softmax_zoo.train", "loss=sparse_softmax", override, f"hydra.run.dir={tmp_path / 'h'}", cwd=tmp_path)
    lines = [line for line in stderr.splitlines() if line.strip()]
    ours = [i for i, line in enumerate(lines) if "unknown option of SparseSoftmaxHead 'kk' (did you mean 'k'?)" in line]
    assert len(ours) == 1 and "Could not override" not in stderr and "does not fit" not in stderr, stderr
    assert ours == [0] and "Error executing job" not in stderr, stderr  # first, and no line of Hydra's before it


def test_seed_and_logger_are_checked_before_torch_is_imported(tmp_path):
    result, stderr = run_module("softmax_zoo.train", "seed=abc", f"hydra.run.dir={tmp_path / 'h'}", cwd=tmp_path)
    assert "seed must be an integer" in stderr and result["imported"] == [], result


@pytest.mark.parametrize("command", [
    ["softmax_zoo.reports", "nonexistent_page"],
    ["softmax_zoo.data.prepare", "nonexistent_task"],
    ["softmax_zoo.studies.kernel_bias_paper", "uniform=0"],
    ["softmax_zoo.studies.sparse_regime", "bogus=1"],
])
def test_a_bad_report_study_or_prepare_command_imports_no_heavy_library(command, tmp_path):
    result, _ = run_module(*command, cwd=tmp_path)
    assert result["code"] not in (0, None) and result["imported"] == [], result


@pytest.mark.parametrize("override, message", [
    ("loss=sparse_softmax loss.k=0", "k must be >= 1, got 0"),
    ("loss=sparse_softmax loss.full_softmax_steps=-1", "full_softmax_steps must be >= 0, got -1"),
    ("loss=sparse_softmax loss.smoothing_over=none", "smoothing_over must be one of"),
    ("loss=softmax loss.chunk_size=0", "chunk_size must be >= 1"),
    ("loss=softmax loss.reduction=avg", "reduction must be one of"),
    ("loss=sampled_softmax loss.num_samples=0", "num_samples must be >= 1, got 0"),
    ("logger=wandb logger.mode=loud", "logger.mode must be one of"),
    ("train.lr=-1", "train.lr must be a number > 0 (e.g. train.lr=1e-3), got train.lr=-1"),
    ("train.lr=abc", "train.lr must be a number > 0 (e.g. train.lr=1e-3), got train.lr='abc'"),
    ("train.max_steps=0", "train.max_steps must be -1 (run train.epochs epochs) or an integer >= 1, got train.max_steps=0"),
    ("train.epochs=0", "train.epochs must be a number > 0, got train.epochs=0"),
    ("train.batch_size=0", "train.batch_size must be an integer >= 1, got train.batch_size=0"),
    ("train.eval_batch_size=2.5", "train.eval_batch_size must be an integer >= 1, got train.eval_batch_size=2.5"),
    ("train.grad_accum=0", "train.grad_accum must be an integer >= 1, got train.grad_accum=0"),
    ("train.warmup_ratio=1.5", "train.warmup_ratio must be a fraction of the total steps in [0, 1), got train.warmup_ratio=1.5"),
    ("train.save_steps=-5", "train.save_steps must be an integer >= 0 (0: no checkpoints) or 'epoch', got train.save_steps=-5"),
    ("train.logging_steps=0", "train.logging_steps must be an integer >= 1, got train.logging_steps=0"),
    ("train.eval_each_epoch=sometimes", "train.eval_each_epoch must be true or false, got train.eval_each_epoch='sometimes'"),
    ("+train.eval_subset=0", "train.eval_subset must be an integer >= 1 or null (every example), got train.eval_subset=0"),
    ("train.precision=fp8", "train.precision must be auto, fp32, bf16 or fp16, got train.precision='fp8'"),
])
def test_check_config_names_a_bad_value_before_anything_is_built(override, message):
    cfg = compose(override.split())
    with pytest.raises(ValueError) as error:
        preflight.check_config(cfg)
    assert message in str(error.value)


@pytest.mark.parametrize("loss", ["softmax", "stable_softmax", "sparse_softmax", "adaptive_softmax", "sampled_softmax"])
def test_check_config_passes_every_loss_as_configured(loss):
    preflight.check_config(compose([f"loss={loss}"]))


def test_the_size_checks_are_left_to_the_constructor():
    check_loss_options({"_target_": "softmax_zoo.losses.SparseSoftmaxHead", "k": 10**9})  # k <= C: known once built
    check_loss_options({"_target_": "collections.OrderedDict", "k": 0})  # not a head: left to build_head


def test_importing_every_page_module_renders_no_template():
    """Nothing at import but definitions: a page module's words (``_pages.template_words``) render on first use."""
    code = ("import jinja2, json; calls = []; real = jinja2.Environment.get_template\n"
            "jinja2.Environment.get_template = lambda self, *a, **k: calls.append(a[0]) or real(self, *a, **k)\n"
            "import importlib, pkgutil, softmax_zoo.reports as r\n"
            "for m in pkgutil.iter_modules(r.__path__): importlib.import_module(f'softmax_zoo.reports.{m.name}')\n"
            "print(json.dumps(calls))")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
