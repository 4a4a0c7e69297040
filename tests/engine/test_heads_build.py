"""build_head: every loss config builds a working head; `auto` values are filled from the task."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from softmax_zoo import losses
from softmax_zoo.models import build_head

LOSS_DIR = Path(__file__).resolve().parents[2] / "configs" / "loss"
C, D = 50, 32
COUNTS = (1000.0 / torch.arange(1, C + 1)).round()  # Zipf, sorted by decreasing frequency


# Fixed matmul costs (a device fitting c_m = 10 us, 1e-11 s per multiply-add above 1e6) make auto
# cutoffs deterministic; measuring them on a busy CI machine is neither fast nor stable.
FIXED_COST = {"_target_": "softmax_zoo.losses.methods.adaptive_cutoffs.MatmulCost", "c_m": 1e-5, "lam": 1e-11, "w0": 1e6}


def loss_cfg(name: str, sampler: str | None = None):
    cfg = OmegaConf.load(LOSS_DIR / f"{name}.yaml")
    if "cutoffs_search" in cfg:
        cfg.cutoffs_search.cost = FIXED_COST
    if "defaults" in cfg:
        sampler = sampler or cfg.defaults[0]["sampler"]
        del cfg["defaults"]
        cfg.sampler = OmegaConf.load(LOSS_DIR / "sampler" / f"{sampler}.yaml")
    return cfg


HEADS = [p.stem for p in sorted(LOSS_DIR.glob("*.yaml"))]
SAMPLERS = [p.stem for p in sorted((LOSS_DIR / "sampler").glob("*.yaml"))]


@pytest.mark.parametrize("name", HEADS)
def test_every_loss_config_builds_a_head_that_trains(name, gen):
    head = build_head(loss_cfg(name), D, C, class_counts=COUNTS)
    assert isinstance(head, losses.OutputHead)
    hidden = torch.randn(8, D, generator=gen, requires_grad=True)
    target = torch.randint(0, C, (8,), generator=gen)
    loss = head(hidden, target)
    loss.backward()
    assert loss.ndim == 0 and torch.isfinite(loss)
    assert hidden.grad is not None and hidden.grad.abs().sum() > 0
    head.eval()
    assert head.log_probs(hidden).shape == (8, C)


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_every_sampler_config_builds(sampler, gen):
    head = build_head(loss_cfg("sampled_softmax", sampler), D, C, class_counts=COUNTS)
    loss = head(torch.randn(8, D, generator=gen), torch.randint(0, C, (8,), generator=gen))
    assert torch.isfinite(loss)


def test_auto_fills_num_classes_and_counts():
    head = build_head(loss_cfg("sampled_softmax", "unigram"), D, C, class_counts=COUNTS)
    assert head.num_classes == C
    uniform = build_head(loss_cfg("sampled_softmax", "uniform"), D, C)
    assert uniform.sampler.num_classes == C


def test_cutoffs_as_fractions_and_ints():
    cfg = loss_cfg("adaptive_softmax")
    cfg.cutoffs = [0.2, 0.6]
    assert build_head(cfg, D, C).cutoffs[:2] == [10, 30]
    cfg.cutoffs = [5, 25]
    assert build_head(cfg, D, C).cutoffs[:2] == [5, 25]


def test_auto_cutoffs_come_from_optimal_cutoffs():
    head = build_head(loss_cfg("adaptive_softmax"), D, C, class_counts=COUNTS)
    cutoffs = head.cutoffs[:-1] if head.cutoffs[-1] == C else head.cutoffs
    assert len(cutoffs) == 2 and 0 < cutoffs[0] < cutoffs[1] < C


def test_auto_without_counts_is_an_error():
    with pytest.raises(ValueError, match="class counts"):
        build_head(loss_cfg("adaptive_softmax"), D, C)
    with pytest.raises(ValueError, match="class counts"):
        build_head(loss_cfg("sampled_softmax", "unigram"), D, C)


def test_bad_fraction_and_bad_counts_shape():
    cfg = loss_cfg("adaptive_softmax")
    cfg.cutoffs = [1.5]
    with pytest.raises(ValueError, match="1.5"):
        build_head(cfg, D, C)
    with pytest.raises(ValueError, match=r"\(50,\)"):
        build_head(loss_cfg("softmax"), D, C, class_counts=COUNTS[:10])


def test_tied_weight_is_the_same_parameter():
    weight = torch.nn.Parameter(torch.randn(C, D))
    head = build_head(loss_cfg("sparse_softmax"), D, C, weight=weight)
    assert head.weight is weight


def test_tying_an_adaptive_head_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot tie"):
        build_head(loss_cfg("adaptive_softmax"), D, C, weight=torch.nn.Parameter(torch.randn(C, D)), class_counts=COUNTS)


def test_k_larger_than_num_classes_is_the_losses_error():
    cfg = loss_cfg("sparse_softmax")
    cfg.k = C + 1
    with pytest.raises(ValueError, match=str(C + 1)):
        build_head(cfg, D, C)
