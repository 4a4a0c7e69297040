"""The variant registry and what reads it: labels, build_head's auto options, linear_cross_entropy."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import (
    SoftmaxHead,
    StableSoftmaxHead,
    linear_cross_entropy,
    register_variant,
    variant,
    variant_label,
    variant_title,
    variants,
)
from softmax_zoo.losses.machinery import registry
from softmax_zoo.models import build_head

from .conftest import logit_cases

D, C = 6, 19


@pytest.fixture
def scratch_registry(monkeypatch):
    """Registrations made in a test are forgotten after it."""
    monkeypatch.setattr(registry, "_VARIANTS", dict(registry._VARIANTS))


def test_every_loss_config_is_registered_under_its_name():
    from softmax_zoo.config import CONFIG_DIR

    configs = sorted(p.stem for p in (CONFIG_DIR / "loss").glob("*.yaml"))
    assert configs == sorted(variants())
    for name in configs:
        text = (CONFIG_DIR / "loss" / f"{name}.yaml").read_text()
        head = variant(name).head
        assert f"_target_: softmax_zoo.losses.{head.__name__}" in text


def test_labels_and_titles():
    assert [variant_label(n) for n in ("softmax", "stable_softmax", "sparse_softmax", "adaptive_softmax")] == [
        "softmax", "stable", "sparse", "adaptive"]  # fmt: skip
    assert variant_title("sparse_softmax") == "sparse-softmax"
    options = {"_target_": "softmax_zoo.losses.SampledSoftmaxHead", "num_samples": 64, "sampler": {"_target_": "..."}}
    assert variant_label("sampled_softmax", options, {"loss": "sampled_softmax", "sampler": "quadratic"}) == "sampled (quadratic, m=64)"
    assert variant_label("not_a_variant") == variant_title("not_a_variant") == "not_a_variant"
    with pytest.warns(UserWarning,
                      match=r"cannot import module 'no_such_module' \(ModuleNotFoundError: No module named 'no_such_module'\)"):
        assert variant_label("not_a_variant", {"_target_": "no_such_module.Head"}) == "not_a_variant"
    with pytest.raises(KeyError, match="no loss variant 'nope' is registered"):
        variant("nope")


def test_auto_options_are_inherited_and_read_by_build_head(scratch_registry):
    assert variant("softmax").auto == variant("sparse_softmax").auto == ("chunk_size",)
    assert variant("adaptive_softmax").auto == ("cutoffs",)

    @register_variant("scaled_softmax_test")
    class ScaledHead(StableSoftmaxHead):
        pass

    assert variant("scaled_softmax_test").auto == ("chunk_size",) and variant_label("scaled_softmax_test") == "scaled_softmax_test"
    cfg = {"_target_": "softmax_zoo.losses.AdaptiveSoftmaxHead", "cutoffs": [5], "chunk_size": "auto"}
    with pytest.raises(ValueError, match=r"loss.chunk_size: auto is only understood for num_classes, counts, cutoffs"):
        build_head(cfg, D, C)
    assert build_head({"_target_": "softmax_zoo.losses.SparseSoftmaxHead", "k": 3, "chunk_size": "auto"}, D, C).chunk_size == "auto"


def test_a_name_is_registered_once(scratch_registry):
    with pytest.raises(ValueError, match="'softmax' is already registered for softmax_zoo.losses.methods.softmax.SoftmaxHead"):
        register_variant("softmax")(type("OtherHead", (SoftmaxHead,), {}))
    register_variant("softmax")(SoftmaxHead)  # the same class again (a module imported twice): fine
    assert variant("softmax").head is SoftmaxHead


@pytest.mark.parametrize("case", logit_cases(C))
@pytest.mark.parametrize("chunk_size", ["auto", 4, None])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_cross_entropy_equals_the_head(case, chunk_size, with_bias, gen):
    cls, extra = logit_cases(C)[case]
    name = registry.variant_of(cls).name
    torch.manual_seed(0)
    head = cls(D, C, bias=with_bias, chunk_size=chunk_size, label_smoothing=0.1, reduction="sum", **extra).double()
    hidden = torch.randn(3, 5, D, generator=gen, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, C, (3, 5), generator=gen)
    target[0, 1] = -100
    loss = head(hidden, target)
    expected = torch.autograd.grad(loss, [hidden, *head.parameters()])
    weight = head.weight.detach().clone().requires_grad_(True)
    bias = head.bias.detach().clone().requires_grad_(True) if with_bias else None
    h = hidden.detach().clone().requires_grad_(True)
    got = linear_cross_entropy(h, weight, target, bias=bias, loss=name, chunk_size=chunk_size, reduction="sum",
                               label_smoothing=0.1, **extra)  # fmt: skip
    assert torch.equal(got, loss)
    grads = torch.autograd.grad(got, [h, weight, *([bias] if with_bias else [])])
    for g, ref in zip(grads, expected):
        assert torch.equal(g, ref)


def test_linear_cross_entropy_default_is_chunked_softmax(gen):
    hidden = torch.randn(8, D, generator=gen)
    weight = torch.randn(C, D, generator=gen)
    target = torch.randint(0, C, (8,), generator=gen)
    expected = torch.nn.functional.cross_entropy(hidden @ weight.T, target)
    torch.testing.assert_close(linear_cross_entropy(hidden, weight, target), expected)
    k = linear_cross_entropy(hidden, weight, target, loss="sparse_softmax", k=3, reduction="none")
    assert k.shape == (8,)
    with pytest.raises(ValueError, match="'adaptive_softmax' is not a logit-level variant"):
        linear_cross_entropy(hidden, weight, target, loss="adaptive_softmax")
    with pytest.raises(ValueError, match=r"bias must be \(19,\)"):
        linear_cross_entropy(hidden, weight, target, bias=torch.zeros(3))
