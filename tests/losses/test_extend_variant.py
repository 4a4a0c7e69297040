"""A variant defined outside the package: a module and a loss config, and nothing else.

A temperature-scaled softmax (the cross-entropy of softmax(z / T), which is also its distribution)
is written as README "Extend it" names it, my_variant.py and conf/loss/my_softmax.yaml, in a folder
outside the repository. README's commands, as written, run the shared head tests on its cases
alone, train it at smoke scale beside softmax and show its label on the sweep page. The in-process
tests check its math, that a row loss without a distribution is refused, and that the shared tests
fail a variant whose evaluation ignores its loss or whose loss ignores label smoothing.
"""

from __future__ import annotations

import re
import sys
import textwrap

import pytest
import torch

from softmax_zoo.losses import SoftmaxHead, variant_label, variant_title, variants
from softmax_zoo.losses.machinery import registry
from softmax_zoo.losses.machinery.row_loss import RowLoss
from softmax_zoo.reports._sweep import build_sweep

from . import test_head_common

MODULE, NAME = "my_variant", "my_softmax"

VARIANT_MODULE = '''
"""Temperature-scaled softmax CE: loss = −(1 − ε)·log p_t − ε·mean_j log p_j with p = softmax(z / T)."""
import torch

from softmax_zoo.losses import RowLoss, SoftmaxHead, compute_dtype, register_variant


class TemperatureRows(RowLoss):
    def __init__(self, temperature, label_smoothing=0.0):
        super().__init__(label_smoothing)
        self.temperature = temperature

    def log_probs(self, z):
        return torch.log_softmax(z.to(compute_dtype(z.dtype)) / self.temperature, dim=-1)

    def rows(self, z, target, keep):
        eps, logp = self.label_smoothing, self.log_probs(z)  # (N, C)
        loss = -(1 - eps) * logp.gather(1, target.unsqueeze(1)).squeeze(1) - eps * logp.mean(dim=1)
        return loss.masked_fill(~keep, 0.0), (logp,)

    def grad(self, state, target, row_weight, shape, dtype):
        (logp,) = state  # d loss / dz = (softmax(z/T) − (1 − ε)·onehot − ε/C) / T
        eps, w = self.label_smoothing, (row_weight / self.temperature).unsqueeze(1)
        g = (logp.exp() - eps / shape[1]) * w
        return g.scatter_add(1, target.unsqueeze(1), -(1 - eps) * w)


@register_variant("my_softmax", label="temperature", title="temperature-scaled softmax")
class TemperatureSoftmaxHead(SoftmaxHead):
    def __init__(self, in_features, num_classes, *, temperature=2.0, **kwargs):
        super().__init__(in_features, num_classes, **kwargs)
        self.temperature = temperature

    def row_loss(self):
        return TemperatureRows(self.temperature, self.label_smoothing)
'''

VARIANT_CONFIG = f"""
_target_: {MODULE}.TemperatureSoftmaxHead
temperature: 2.0
bias: true
ignore_index: -100
reduction: mean
label_smoothing: 0.0
chunk_size: null
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """The user's folder: my_variant.py and conf/loss/my_softmax.yaml, the module importable here too.

    What a test registers is forgotten afterwards (the registry and sys.modules are restored).
    """
    monkeypatch.setattr(registry, "_VARIANTS", dict(registry._VARIANTS))
    (tmp_path / f"{MODULE}.py").write_text(textwrap.dedent(VARIANT_MODULE))
    (tmp_path / "conf" / "loss").mkdir(parents=True)
    (tmp_path / "conf" / "loss" / f"{NAME}.yaml").write_text(VARIANT_CONFIG)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop(MODULE, None)


def test_registered_on_import_with_a_label_and_its_own_distribution(folder):
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
    logits = h @ head.weight.T + head.bias
    ref = torch.nn.functional.cross_entropy(logits / 3.0, target, label_smoothing=0.1)
    ref.backward()
    torch.testing.assert_close(loss, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad, h.grad, rtol=1e-12, atol=1e-12)
    # Evaluation follows the loss: log_probs is softmax(z / T), also chunked (no lean path for it).
    expected = torch.log_softmax(logits.detach() / 3.0, dim=-1)
    torch.testing.assert_close(head.log_probs(hidden.detach()), expected, rtol=1e-12, atol=1e-12)
    head.chunk_size = 2
    assert not head.streams_inference()
    ids = torch.arange(9)
    torch.testing.assert_close(head.class_log_probs(hidden.detach(), ids), expected, rtol=1e-12, atol=1e-12)


def test_a_row_loss_without_its_distribution_is_refused():
    """A RowLoss must say which distribution its loss is the cross-entropy of: one without log_probs
    cannot be built, so a head using it fails at its first forward, naming the class and the method."""

    class NoDistributionRows(RowLoss):
        def rows(self, z, target, keep):
            raise AssertionError("never reached")

        def grad(self, state, target, row_weight, shape, dtype):
            raise AssertionError("never reached")

    class Head(SoftmaxHead):
        def row_loss(self):
            return NoDistributionRows(self.label_smoothing)

    with pytest.raises(TypeError, match="NoDistributionRows.*log_probs"):
        Head(4, 6)(torch.randn(3, 4), torch.tensor([0, 1, 2]))


def _rows_class(module, mistake):
    """TemperatureRows with one mistake: "plain softmax distribution" (its loss the temperature one, its
    log_probs softmax(z)) or "label smoothing ignored"."""

    class Wrong(module.TemperatureRows):
        def __init__(self, temperature, label_smoothing=0.0):
            super().__init__(temperature, 0.0 if mistake == "label smoothing ignored" else label_smoothing)
            self.right = module.TemperatureRows(temperature, self.label_smoothing)

        def rows(self, z, target, keep):
            return self.right.rows(z, target, keep)

        def log_probs(self, z):
            return torch.log_softmax(z.double(), dim=-1) if mistake == "plain softmax distribution" else self.right.log_probs(z)

    return Wrong


@pytest.mark.parametrize("mistake, shared_test", [
    ("plain softmax distribution", test_head_common.test_loss_is_the_cross_entropy_of_log_probs),
    ("label smoothing ignored", test_head_common.test_label_smoothing_spreads_over_the_support),
])  # fmt: skip
def test_the_shared_tests_fail_a_wrong_variant(folder, mistake, shared_test, gen):
    module = __import__(MODULE)
    rows = _rows_class(module, mistake)

    class WrongHead(module.TemperatureSoftmaxHead):
        def row_loss(self):
            return rows(self.temperature, self.label_smoothing)

    shared_test(module.TemperatureSoftmaxHead, {}, gen)  # the right one passes
    with pytest.raises(AssertionError):
        shared_test(WrongHead, {}, gen)


def test_readme_recipe_runs_the_shared_tests_trains_and_labels_the_page(folder, run_readme_recipe):
    """README's variant recipe from a folder outside the repository: the shared head tests run its
    cases alone (every shared file), it trains beside softmax, and the sweep page shows its label."""
    done = run_readme_recipe("# a softmax variant", folder)
    summary = re.search(r"(\d+) passed, (\d+) deselected", done.stdout)
    assert summary and "failed" not in done.stdout, done.stdout[-2000:]
    assert 100 <= int(summary.group(1)) < int(summary.group(2))  # its cases alone, of every shared file
    records = folder / "scratch" / "runs" / "default"
    page = build_sweep(str(records), out=folder / "pages")
    assert f"| {NAME} |" in page and f"`{NAME}`: temperature" in page  # both arms trained; its label


def test_the_names_an_extension_imports_are_public():
    """README's recipes import them from softmax_zoo.losses and softmax_zoo.data.prepare; the internal paths still work."""
    from softmax_zoo import losses
    from softmax_zoo.data import prepare
    from softmax_zoo.data.prepare import raw, writer
    from softmax_zoo.data.prepare import registry as preparers
    from softmax_zoo.losses.machinery import _core, row_loss

    assert losses.RowLoss is row_loss.RowLoss and losses.compute_dtype is _core.compute_dtype
    assert prepare.Prepared is writer.Prepared and prepare.RawDir is raw.RawDir and prepare.register is preparers.register
    assert {"RowLoss", "compute_dtype"} <= set(losses.__all__) and {"Prepared", "RawDir", "register"} <= set(prepare.__all__)


class Float32Rows(RowLoss):
    """The first try README warns of: the loss computed in float32 whatever the logits' dtype."""

    def log_probs(self, z):
        return torch.log_softmax(z.float(), dim=-1)

    def rows(self, z, target, keep):
        logp = self.log_probs(z)
        return (-logp.gather(1, target.unsqueeze(1)).squeeze(1)).masked_fill(~keep, 0.0), (logp,)

    def grad(self, state, target, row_weight, shape, dtype):
        (logp,) = state
        return (logp.exp() * row_weight.unsqueeze(1)).scatter_add(1, target.unsqueeze(1), -row_weight.unsqueeze(1))


def test_rows_in_another_dtype_than_compute_dtype_are_refused_saying_why():
    z, target = torch.randn(4, 6, dtype=torch.float64), torch.tensor([0, 1, 2, 3])
    why = re.escape("Float32Rows.rows returned a torch.float32 loss for torch.float64 logits; a RowLoss computes in "
                    "compute_dtype(z.dtype) = torch.float64")
    with pytest.raises(TypeError, match=why) as error:
        Float32Rows().on_logits(z, target)  # the whole-matrix path
    assert "z.to(softmax_zoo.losses.compute_dtype(z.dtype)), not z.float()" in str(error.value)
    with pytest.raises(TypeError, match=why):
        Float32Rows().loss_and_grad(z.clone(), target, torch.ones(4, dtype=torch.bool), torch.ones(4, dtype=torch.float64))
    Float32Rows().on_logits(z.float(), target)  # float32 logits: float32 is their compute dtype
