"""The gradient precision study (studies/grad_precision.py): its logits, its float64 reference, its measurement."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import torch

from softmax_zoo.studies import grad_precision as study

TINY = {"classes": 64, "rows": 3, "seeds": 2, "k": 5, "chunk_size": 2, "target_probs": [0.9, 0.9999], "tail_scale": 1.0}


def tiny_logits(p: float = 0.999, k: int = 5) -> tuple[torch.Tensor, torch.Tensor]:
    return study.logits(p, 4, 200, k=k, tail_scale=1.0, generator=torch.Generator().manual_seed(0))


def test_logits_give_the_target_its_probability_and_are_exact_in_half_precision():
    z, target = tiny_logits(0.99)
    for dtype in (torch.bfloat16, torch.float16):
        assert torch.equal(z.to(dtype).to(torch.float64), z)
    p_t = torch.softmax(z, dim=1).gather(1, target[:, None])[:, 0]
    assert torch.allclose(p_t, torch.full_like(p_t, 0.99), atol=2e-3)  # the target logit rounded to bfloat16


def test_no_logit_outside_the_support_ties_its_smallest():
    z, target = tiny_logits(0.99, k=20)
    top = z.topk(21, dim=1).values
    assert (top[:, 19] > top[:, 20]).all()


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5])
def test_a_target_probability_outside_0_1_is_refused_by_value(bad):
    with pytest.raises(ValueError, match=f"target_probs must be in \\(0, 1\\), got {bad}"):
        study.logits(bad, 2, 10, k=2, tail_scale=1.0, generator=torch.Generator())


def test_reference_is_softmax_minus_onehot_and_its_target_entry_keeps_its_digits():
    z, target = tiny_logits(0.9999)
    g, g_t = study.reference_grad(z, target)
    expected = torch.softmax(z, dim=1) - torch.nn.functional.one_hot(target, z.shape[1])
    assert torch.allclose(g, expected, rtol=0, atol=1e-15)
    tail = z.scatter(1, target[:, None], -math.inf).exp().sum(1)
    assert torch.allclose(g_t, -tail / z.exp().sum(1), rtol=1e-14, atol=0)


def test_sparse_reference_is_softmax_over_the_support_minus_onehot():
    z, target = tiny_logits(0.99)
    g, _ = study.reference_grad(z, target, k=5)
    top = z.topk(5, dim=1).indices
    inside = torch.zeros_like(z, dtype=torch.bool).scatter_(1, top, True)
    expected = torch.softmax(z.masked_fill(~inside, -math.inf), dim=1) - torch.nn.functional.one_hot(target, z.shape[1])
    assert torch.allclose(g, expected, rtol=0, atol=1e-15)
    assert ((g != 0).sum(1) == 5).all()


@pytest.mark.parametrize("name", list(study.paths()))
def test_every_path_in_float64_gives_the_reference_gradient(name):
    z, target = tiny_logits(0.999)
    fn, ref = study.paths()[name]
    g = study.logit_grad(fn, z, target, "float64", k=5, chunk_size=2)
    expected, _ = study.reference_grad(z, target, 5 if ref else None)
    assert torch.allclose(g, expected, rtol=0, atol=1e-13)


def test_a_bfloat16_gradient_is_read_rounded_to_bfloat16():
    z, target = tiny_logits(0.9)
    fn, _ = study.paths()["torch F.cross_entropy"]
    g = study.logit_grad(fn, z, target, "bfloat16", k=5, chunk_size=2)
    assert torch.equal(g.to(torch.bfloat16).to(torch.float64), g)
    with pytest.raises(ValueError, match="precision must be one of"):
        study.logit_grad(fn, z, target, "float8", k=5, chunk_size=2)


def test_measure_on_a_tiny_size_gives_each_cell_its_rows():
    m = study.measure(**TINY)
    assert {r["path"] for r in m["rows"]} == set(m["paths"]) and "stable_softmax chunked" in m["paths"]
    assert len(m["rows"]) == len(m["paths"]) * 3 * 2
    assert all(len(r["target_rel"]) == len(r["row_rel"]) == TINY["rows"] * TINY["seeds"] for r in m["rows"])
    assert m["sparse_backward"] == "sparse"
    cell = {(r["path"], r["precision"], r["target_prob"]): r for r in m["rows"]}
    # the softplus form keeps the target gradient in float32; the standard q_t - 1 loses digits at p_t = 0.9999
    assert max(cell["stable_softmax", "float32", 0.9999]["target_rel"]) < 1e-5
    assert max(cell["torch F.cross_entropy", "float32", 0.9999]["target_rel"]) > 1e-5


def test_the_command_writes_its_measurement_with_provenance(tmp_path):
    out = tmp_path / "gp.json"
    assert study.main([f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in TINY.items()] + [f"out={out}"]) == 0
    m = json.loads(out.read_text(encoding="utf-8"))
    assert m["command"].startswith(study.COMMAND + " classes=64")
    assert {"commit", "dirty"} <= set(m["git"]) and m["cpu"]["capability"] and m["versions"]["torch"]


def test_the_command_refuses_a_bad_value_by_name(capsys):
    assert study.main(["target_probs=0.5,2"]) == 2
    assert "target_probs must be in (0, 1), got 2.0" in capsys.readouterr().err


def test_the_command_runs_on_a_cpu_without_native_bfloat16(tmp_path):
    """ATEN_CPU_CAPABILITY=avx2 (no AVX512-BF16 kernels): CPU autocast emulates bfloat16 and float16, the study still runs."""
    out = tmp_path / "gp.json"
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2", "OMP_NUM_THREADS": "1"}
    args = ["classes=64", "rows=2", "seeds=1", "k=5", "target_probs=0.9,0.9999", f"out={out}"]
    done = subprocess.run([sys.executable, "-m", "softmax_zoo.studies.grad_precision", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    m = json.loads(out.read_text(encoding="utf-8"))
    assert m["cpu"]["capability"] == "AVX2"
    assert {r["precision"] for r in m["rows"]} == {"float32", "bfloat16", "float16"}
    assert all(math.isfinite(e) for r in m["rows"] for e in r["target_rel"] + r["row_rel"])
