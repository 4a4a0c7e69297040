"""The stable study's arms and regimes (softmax_zoo.studies._stable_runs): the cast arm, the generalising regime,
the float64 control, and that every study writes its records through the shared record writer."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

from softmax_zoo.losses.methods.distill import kd_loss
from softmax_zoo.records import RECORD_SCHEMA
from softmax_zoo.studies import stable as study
from softmax_zoo.studies._stable_runs import Setting, collapse_run, collapse_stats, cross_entropy, distill_loss

TINY = Setting(modulus=11, embed=8, hidden=16, collapse_steps=10, teacher_steps=10, distill_steps=5, generalise_steps=5,
               saturate_steps=5, log_every=5, eval_every=5)


def test_cast_arm_is_the_standard_formula_on_float32_logits(gen):
    z = (torch.randn(32, 7, generator=gen) * 4).bfloat16().requires_grad_()
    y = torch.randint(0, 7, (32,), generator=gen)
    cast = cross_entropy(z, y, "cast")
    (g_cast,) = torch.autograd.grad(cast, z)
    z32 = z.detach().float().requires_grad_()
    reference = F.cross_entropy(z32, y)
    (g_ref,) = torch.autograd.grad(reference, z32)
    assert cast.dtype == torch.float32 and g_cast.dtype == torch.bfloat16
    torch.testing.assert_close(cast, reference, rtol=0, atol=0)
    torch.testing.assert_close(g_cast, g_ref.bfloat16(), rtol=0, atol=0)


def test_cast_arm_keeps_the_target_gradient_that_bfloat16_rounds_away():
    z = torch.tensor([[8.0, 0.0]], dtype=torch.bfloat16, requires_grad=True)  # q_t − 1 = −3.4e-4 < bfloat16's half-ulp of 1
    y = torch.tensor([0])
    grads = {form: torch.autograd.grad(cross_entropy(z, y, form), z)[0] for form in ("standard", "cast", "stable")}
    assert grads["standard"][0, 0] == 0
    assert grads["cast"][0, 0] < 0 and grads["stable"][0, 0] < 0
    assert collapse_stats(z, grads["standard"], y)["zero_target_grad_share"] == 1.0


def test_cast_kd_arm_is_the_standard_kl_on_float32_logits(gen):
    zs = (torch.randn(16, 9, generator=gen) * 3).bfloat16().requires_grad_()
    zt = (torch.randn(16, 9, generator=gen) * 3).bfloat16()
    cast = distill_loss(zs, zt, "cast")
    (g_cast,) = torch.autograd.grad(cast, zs)
    zs32 = zs.detach().float().requires_grad_()
    reference = kd_loss(zs32, zt.float(), temperature=1.0, form="standard")
    (g_ref,) = torch.autograd.grad(reference, zs32)
    torch.testing.assert_close(cast, reference, rtol=0, atol=0)
    torch.testing.assert_close(g_cast, g_ref.bfloat16(), rtol=0, atol=0)
    with pytest.raises(ValueError, match="'exact'"):
        distill_loss(zs, zt, "exact")


def test_float64_control_trains_a_float64_model():
    run = collapse_run("standard", "float64", 0, TINY, regime="saturate")
    assert run["final"]["zero_sum_violation"] < 1e-14  # float32 logits leave ~1e-8
    assert {"target_prob_one_share", "param_grad_norm", "test_accuracy"} <= set(run["final"])


def test_generalising_regime_reaches_test_accuracy_in_a_short_run():
    smoke = Setting(modulus=23, train_fraction=0.8, embed=32, hidden=128, generalise_steps=400, generalise_lr=1e-2,
                    log_every=50, eval_every=50)
    run = collapse_run("standard", "float32", 0, smoke, regime="generalise")
    assert run["final"]["train_accuracy"] == 1.0
    assert run["final"]["test_accuracy"] > 0.5  # chance is 1/23; the memorise regime stays near 0


@pytest.mark.parametrize("only", ["generalise", "saturate"])
def test_every_study_writes_through_the_shared_record_writer(tmp_path, monkeypatch, only):
    written = []
    real = study.write_record
    monkeypatch.setattr(study, "write_record", lambda record, runs: written.append(record) or real(record, runs))
    paths = study.run_all(tmp_path / "runs" / "stable", seeds=1, only=only, setting=TINY)
    assert len(paths) == len(written) == len([s for s in study.plan(1) if s["study"] == only])
    for path, record in zip(paths, written):
        assert json.loads(path.read_text())["run_name"] == record.run_name == path.stem
        assert record.schema == RECORD_SCHEMA and record.choice("study") == only
        assert ("loss" in record.choices) == (only == "generalise")
