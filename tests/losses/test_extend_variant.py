"""A variant defined outside the package: a module and a loss config, and nothing else.

A temperature-scaled softmax head (CE of z / T) is written to a throwaway module and its
configs/loss/<name>.yaml to an extra config dir. With no edit to softmax_zoo or the tests it
(a) passes the shared head tests (``pytest -p <module>`` registers it before collection),
(b) trains at smoke scale through the real entry point (``hydra.searchpath`` finds its config,
``build_head`` imports its ``_target_``), and (c) its registered label reaches the pages.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from softmax_zoo.losses import registry, variant_label, variant_title, variants
from softmax_zoo.reports._sweep import build_sweep

REPO = Path(__file__).resolve().parents[2]
MODULE, NAME = "toy_temperature_softmax", "temperature_softmax"

TOY_MODULE = '''
"""Temperature-scaled softmax CE: loss = logsumexp(z/T) − (1 − ε)·z_t/T − ε·mean_j z_j/T."""
import torch

from softmax_zoo.losses import SoftmaxHead, register_variant
from softmax_zoo.losses._core import compute_dtype
from softmax_zoo.losses.row_loss import RowLoss


class TemperatureRows(RowLoss):
    def __init__(self, temperature, label_smoothing=0.0):
        super().__init__(label_smoothing)
        self.temperature = temperature

    def rows(self, z, target, keep):
        s = z.to(compute_dtype(z.dtype)) / self.temperature  # (N, C)
        eps, logp = self.label_smoothing, torch.log_softmax(s, dim=1)
        loss = -(1 - eps) * logp.gather(1, target.unsqueeze(1)).squeeze(1) - eps * logp.mean(dim=1)
        return loss.masked_fill(~keep, 0.0), (logp,)

    def grad(self, state, target, row_weight, shape, dtype):
        (logp,) = state  # d loss / dz = (softmax(z/T) − (1 − ε)·onehot − ε/C) / T
        eps, w = self.label_smoothing, (row_weight / self.temperature).unsqueeze(1)
        g = (logp.exp() - eps / shape[1]) * w
        return g.scatter_add(1, target.unsqueeze(1), -(1 - eps) * w)


@register_variant("temperature_softmax", label="temperature", title="temperature-scaled softmax")
class TemperatureSoftmaxHead(SoftmaxHead):
    def __init__(self, in_features, num_classes, *, temperature=2.0, **kwargs):
        super().__init__(in_features, num_classes, **kwargs)
        self.temperature = temperature

    def row_loss(self):
        return TemperatureRows(self.temperature, self.label_smoothing)
'''

TOY_CONFIG = f"""
_target_: {MODULE}.TemperatureSoftmaxHead
temperature: 2.0
bias: true
ignore_index: -100
reduction: mean
label_smoothing: 0.0
chunk_size: null
"""

SHARED_HEAD_TESTS = ["test_chunked.py", "test_lean_inference.py", "test_edge_inputs.py", "test_head_common.py"]


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The module (importable here and in subprocesses) and a config dir with loss/<NAME>.yaml.

    What the test registers here is forgotten afterwards (the registry and sys.modules are restored).
    """
    monkeypatch.setattr(registry, "_VARIANTS", dict(registry._VARIANTS))
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / f"{MODULE}.py").write_text(textwrap.dedent(TOY_MODULE))
    (tmp_path / "conf" / "loss").mkdir(parents=True)
    (tmp_path / "conf" / "loss" / f"{NAME}.yaml").write_text(TOY_CONFIG)
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    path = os.pathsep.join([str(tmp_path / "code"), str(REPO / "src"), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "CUDA_VISIBLE_DEVICES": ""}
    yield {"env": env, "conf": tmp_path / "conf", "cwd": tmp_path}
    sys.modules.pop(MODULE, None)


def test_registered_on_import_with_a_label_and_chunk_size_auto(toy):
    assert NAME not in variants()
    module = __import__(MODULE)
    v = variants()[NAME]
    assert v.head is module.TemperatureSoftmaxHead and v.auto == ("chunk_size",)  # inherited from SoftmaxHead
    assert variant_label(NAME) == "temperature" and variant_title(NAME) == "temperature-scaled softmax"
    # Its math against a textbook reference: F.cross_entropy of z / T, values and gradients.
    head = module.TemperatureSoftmaxHead(5, 9, temperature=3.0, label_smoothing=0.1).double()
    hidden = torch.randn(7, 5, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 3, -100, 8, 1, 1, 4])
    loss = head(hidden, target)
    (grad,) = torch.autograd.grad(loss, hidden)
    h = hidden.detach().clone().requires_grad_(True)
    ref = torch.nn.functional.cross_entropy((h @ head.weight.T + head.bias) / 3.0, target, label_smoothing=0.1)
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, h.grad, rtol=1e-12, atol=1e-12)


def test_passes_the_shared_head_tests(toy):
    """The shared head tests, collected with the module loaded as a plugin: only its cases run."""
    cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-p", MODULE, "-k", NAME,
           *(str(REPO / "tests" / "losses" / f) for f in SHARED_HEAD_TESTS)]  # fmt: skip
    done = subprocess.run(cmd, env=toy["env"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ran = re.findall(rf"tests/losses/(test_\w+\.py)::(\w+)\[[^\]]*{NAME}[^\]]*\] PASSED", done.stdout)
    assert {file for file, _ in ran} == set(SHARED_HEAD_TESTS)  # every file ran the variant's cases
    for test in ("test_gradcheck_float64", "test_equals_plain_head_float64", "test_all_ignored_head", "test_nan_hidden_row"):
        assert test in {name for _, name in ran}
    assert len(ran) >= 100 and "FAILED" not in done.stdout


def test_trains_at_smoke_scale_and_the_sweep_page_shows_its_label(toy):
    """loss=softmax,<toy> as a Hydra multirun through the real entry point, then the sweep page."""
    cmd = [sys.executable, "-m", "softmax_zoo.train", "-m", "task=synthetic", "scale=smoke", f"loss=softmax,{NAME}",
           f"hydra.searchpath=[file://{toy['conf']}]", "hydra.sweep.dir=sweep"]  # fmt: skip
    done = subprocess.run(cmd, env=toy["env"], cwd=toy["cwd"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    folder = toy["cwd"] / "scratch" / "runs" / "default"
    records = {r["choices"]["loss"]: r for r in (json.loads(p.read_text()) for p in folder.glob("*.json"))}
    assert set(records) == {"softmax", NAME}
    toy_record = records[NAME]
    assert toy_record["config"]["loss"]["_target_"] == f"{MODULE}.TemperatureSoftmaxHead"
    assert 0.0 <= toy_record["metrics"]["test/micro_f1"] <= 1.0
    page = build_sweep(str(folder), out=toy["cwd"] / "pages")
    assert f"| {NAME} |" in page and f"`{NAME}`: temperature" in page
