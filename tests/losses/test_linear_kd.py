"""linear_kd_loss: float64 gradcheck, the materialised references (values and gradients, every option), exact zeros,
streaming invariance, ignored rows, reductions, low precision, bad input."""

from __future__ import annotations

import itertools

import pytest
import torch

from softmax_zoo.losses import linear_kd_loss, stable_kd_loss
from softmax_zoo.losses.methods.stable_kd import far_apart
from softmax_zoo.losses.reference.distill import divergence_ref, teacher_log_probs

REDUCTIONS = ("mean", "sum", "none")
# (divergence, beta): the three divergences and the two ends of JSD's beta, which are the KLs
DIVERGENCES = [("forward_kl", 0.5), ("reverse_kl", 0.5), ("jsd", 0.3), ("jsd", 0.0), ("jsd", 1.0)]
FORWARD = [("forward_kl", 0.5), ("jsd", 0.0)]
TEACHERS = ("logits", "hidden", "topk")


def make(n, d, c, gen, *, k=4, dtype=torch.float64, scale=1.0, ignored=True):
    """Student hidden, weight, bias; the teacher in its three forms; targets with every third row ignored."""
    def randn(*shape, s=1.0):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * s).to(dtype)

    student = dict(hidden=randn(n, d, s=scale), weight=randn(c, d), bias=randn(c, s=0.5))
    t_hidden, t_weight, t_bias = randn(n, d + 1, s=scale), randn(c, d + 1), randn(c, s=0.5)
    t_logits = t_hidden @ t_weight.T + t_bias
    ids = torch.stack([torch.randperm(c, generator=gen)[:k] for _ in range(n)])
    teachers = {
        "logits": dict(teacher_logits=t_logits),
        "hidden": dict(teacher_hidden=t_hidden, teacher_weight=t_weight, teacher_bias=t_bias),
        "topk": dict(teacher_topk=(ids, t_logits.gather(1, ids))),
    }
    target = torch.randint(0, c, (n,), generator=gen)
    if ignored:
        target[::3] = -100
    return student, teachers, target


def reference(student, teacher, target, *, divergence, beta, temperature, reduction):
    """divergence_ref on the materialised logits (the loss as a function of hidden, weight, bias)."""
    c = student["weight"].shape[0]
    if "teacher_topk" in teacher:
        log_p = teacher_log_probs(topk=teacher["teacher_topk"], num_classes=c, temperature=temperature)
    else:
        t = teacher.get("teacher_logits")
        if t is None:
            t = teacher["teacher_hidden"] @ teacher["teacher_weight"].T + teacher["teacher_bias"]
        log_p = teacher_log_probs(t, temperature=temperature)

    def fn(hidden, weight, bias):
        z = hidden @ weight.T + bias
        return divergence_ref(z, log_p, divergence=divergence, beta=beta, temperature=temperature,
                              keep=target != -100, reduction=reduction)
    return fn


def ours(teacher, target, **kw):
    return lambda hidden, weight, bias: linear_kd_loss(hidden, weight, student_bias=bias, target=target, **teacher, **kw)


def values_and_grads(fn, student):
    """fn(hidden, weight, bias) and the gradients of Σ loss·r (r unequal row weights for "none") w.r.t. each."""
    params = [student[k].detach().clone().requires_grad_(True) for k in ("hidden", "weight", "bias")]
    loss = fn(*params)
    r = torch.rand(loss.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(loss)
    torch.autograd.backward((loss * r).sum() if loss.dim() else loss)
    return [loss.detach(), *(p.grad for p in params)]


def cases():
    for (div, beta), teacher in itertools.product(DIVERGENCES, TEACHERS):
        if teacher == "topk" and (div, beta) not in FORWARD:
            continue
        yield div, beta, teacher


@pytest.mark.parametrize("divergence, beta, teacher", list(cases()))
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("class_chunk_size", [None, 3])
def test_gradcheck_float64(divergence, beta, teacher, reduction, class_chunk_size, gen):
    student, teachers, target = make(5, 3, 7, gen, scale=2.0)
    fn = ours(teachers[teacher], target, divergence=divergence, beta=beta, temperature=1.5, reduction=reduction,
              chunk_size=2, class_chunk_size=class_chunk_size)
    params = tuple(student[k].requires_grad_(True) for k in ("hidden", "weight", "bias"))
    assert torch.autograd.gradcheck(fn, params)


@pytest.mark.parametrize("divergence, beta, teacher", list(cases()))
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("temperature", [1.0, 2.5])
@pytest.mark.parametrize("class_chunk_size", [None, 4])
def test_matches_materialised_reference_float64(divergence, beta, teacher, reduction, temperature, class_chunk_size, gen):
    """Values and the three gradients of an odd shape (13 rows in chunks of 5, C = 11 in blocks of 4) to 1e-12."""
    student, teachers, target = make(13, 6, 11, gen, scale=2.0)
    kw = dict(divergence=divergence, beta=beta, temperature=temperature, reduction=reduction)
    got = values_and_grads(ours(teachers[teacher], target, chunk_size=5, class_chunk_size=class_chunk_size, **kw), student)
    want = values_and_grads(reference(student, teachers[teacher], target, **kw), student)
    for x, ref in zip(got, want):
        torch.testing.assert_close(x, ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("divergence, beta, teacher", list(cases()))
def test_float32_odd_shape_near_float64(divergence, beta, teacher, device, gen):
    """float32 on a flattened 3 × 37 batch, d = 24, C = 1001 in blocks of 300: within 1e-5 of float64 (relative)."""
    student, teachers, target = make(3 * 37, 24, 1001, gen, k=20)
    kw = dict(divergence=divergence, beta=beta, temperature=2.0, reduction="sum")
    want = values_and_grads(reference(student, teachers[teacher], target, **kw), student)
    f32 = {k: v.float().to(device) for k, v in student.items()}
    t32 = {k: (v[0].to(device), v[1].float().to(device)) if k == "teacher_topk" else v.float().to(device)
           for k, v in teachers[teacher].items()}
    got = values_and_grads(ours(t32, target.to(device), chunk_size=50, class_chunk_size=300, **kw), f32)
    for x, ref in zip(got, want):
        assert x.dtype == torch.float32
        assert ((x.cpu().double() - ref).norm() / ref.norm()).item() < 1e-5


def test_forward_kl_equals_stable_kd_loss(gen):
    """The linear form of forward KL is stable_kd_loss of the materialised logits (its student gradient)."""
    student, teachers, _ = make(9, 4, 10, gen, scale=3.0)
    t = teachers["logits"]["teacher_logits"]
    got = values_and_grads(ours(teachers["logits"], None, temperature=3.0, class_chunk_size=3), student)
    want = values_and_grads(lambda h, w, b: stable_kd_loss(h @ w.T + b, t, temperature=3.0), student)
    for x, ref in zip(got, want):
        torch.testing.assert_close(x, ref, rtol=1e-12, atol=1e-14)


def test_topk_with_every_class_equals_the_full_teacher(gen):
    student, teachers, target = make(6, 4, 8, gen, k=8)
    full = values_and_grads(ours(teachers["logits"], target, class_chunk_size=3), student)
    topk = values_and_grads(ours(teachers["topk"], target, class_chunk_size=3), student)
    for x, ref in zip(topk, full):
        torch.testing.assert_close(x, ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("divergence", ["forward_kl", "reverse_kl"])
@pytest.mark.parametrize("class_chunk_size", [None, 7])
@pytest.mark.parametrize("temperature", [0.5, 1.0, 3.0])
def test_identical_student_and_teacher_give_exactly_zero(divergence, class_chunk_size, temperature, gen):
    """δ = 0: zero loss and exactly zero gradients in float32, where the materialised forward KL leaves rounding noise."""
    student, _, _ = make(40, 16, 50, gen, dtype=torch.float32, scale=3.0, ignored=False)
    teacher = dict(teacher_hidden=student["hidden"], teacher_weight=student["weight"], teacher_bias=student["bias"])
    loss, *grads = values_and_grads(ours(teacher, None, divergence=divergence, temperature=temperature,
                                         chunk_size=16, class_chunk_size=class_chunk_size), student)
    assert loss.item() == 0 and all(torch.all(g == 0) for g in grads)
    if divergence == "forward_kl":  # the materialised form's −p + q·Σp is rounding noise: this test can fail
        ref = values_and_grads(reference(student, teacher, torch.zeros(40, dtype=torch.long), divergence=divergence,
                                         beta=0.5, temperature=temperature, reduction="mean"), student)
        assert ref[1].abs().max() > 0


@pytest.mark.parametrize("chunk_size, class_chunk_size", [(1, 1), (4, 5), (64, None), ("auto", None), ("auto", 16)])
@pytest.mark.parametrize("divergence, beta", DIVERGENCES[:3])
def test_streaming_does_not_change_the_result(chunk_size, class_chunk_size, divergence, beta, gen):
    student, teachers, target = make(17, 5, 33, gen, scale=2.0)
    kw = dict(divergence=divergence, beta=beta, temperature=2.0)
    once = values_and_grads(ours(teachers["hidden"], target, chunk_size=17, **kw), student)
    streamed = values_and_grads(ours(teachers["hidden"], target, chunk_size=chunk_size,
                                     class_chunk_size=class_chunk_size, **kw), student)
    for x, ref in zip(streamed, once):
        torch.testing.assert_close(x, ref, rtol=1e-12, atol=1e-14)


def test_ignored_rows_count_for_nothing(gen):
    """"mean" divides by the kept rows; an ignored row's hidden gradient is 0 and changing it changes nothing."""
    student, teachers, target = make(9, 4, 6, gen)
    loss, gh, gw, _ = values_and_grads(ours(teachers["logits"], target), student)
    assert torch.all(gh[target == -100] == 0) and torch.any(gh[target != -100] != 0)
    rows = ours(teachers["logits"], target, reduction="none")(student["hidden"], student["weight"], student["bias"])
    assert torch.all(rows[target == -100] == 0)
    torch.testing.assert_close(loss, rows.sum() / (target != -100).sum())
    moved = dict(student, hidden=student["hidden"].clone())
    moved["hidden"][target == -100] += 5.0
    again, _, gw2, _ = values_and_grads(ours(teachers["logits"], target), moved)
    assert again == loss and torch.equal(gw2, gw)


def test_every_row_ignored(gen):
    """"mean" is nan (0/0, as F.cross_entropy), "sum" 0, and every gradient is a finite 0."""
    student, teachers, target = make(4, 3, 5, gen)
    target[:] = -100
    loss, *grads = values_and_grads(ours(teachers["logits"], target), student)
    assert loss.isnan() and all(torch.all(g == 0) for g in grads)
    assert ours(teachers["logits"], target, reduction="sum")(*(student[k] for k in ("hidden", "weight", "bias"))) == 0


def test_leading_dims_and_none_shape(gen):
    student, teachers, target = make(12, 4, 6, gen)
    h = student["hidden"].reshape(3, 4, 4)
    t = teachers["logits"]["teacher_logits"].reshape(3, 4, 6)
    rows = linear_kd_loss(h, student["weight"], teacher_logits=t, target=target.reshape(3, 4), reduction="none")
    flat = linear_kd_loss(student["hidden"], student["weight"], teacher_logits=t.reshape(12, 6), target=target,
                          reduction="none")
    assert rows.shape == (3, 4)
    torch.testing.assert_close(rows.reshape(-1), flat)


def test_teacher_gets_no_gradient(gen):
    student, teachers, _ = make(4, 3, 5, gen)
    h = student["hidden"].requires_grad_(True)
    t = teachers["hidden"]["teacher_hidden"].requires_grad_(True)
    tw = teachers["hidden"]["teacher_weight"].requires_grad_(True)
    linear_kd_loss(h, student["weight"], teacher_hidden=t, teacher_weight=tw).backward()
    assert h.grad is not None and t.grad is None and tw.grad is None


def test_far_apart_logits_match_the_reference(gen):
    """Centred differences beyond far_apart (354 in float64): the log-space rows, still the reference's values."""
    student, teachers, target = make(6, 4, 9, gen, scale=400.0)
    z = student["hidden"] @ student["weight"].T + student["bias"]
    t = teachers["logits"]["teacher_logits"]
    p, delta = torch.softmax(t, dim=1), z - t
    centred = delta - (p * delta).sum(dim=1, keepdim=True)
    assert (centred.amax(dim=1) > far_apart(torch.float64)).sum() >= 2  # the far-apart rows are there
    for teacher in ("logits", "topk"):
        kw = dict(temperature=1.0, reduction="none")
        got = values_and_grads(ours(teachers[teacher], target, class_chunk_size=4, **kw), student)
        want = values_and_grads(reference(student, teachers[teacher], target, divergence="forward_kl", beta=0.5, **kw),
                                student)
        assert all(torch.isfinite(x).all() for x in got)
        for x, ref in zip(got, want):
            torch.testing.assert_close(x, ref, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_low_precision_weights(dtype, gen):
    """Matmuls in the weight's dtype, the divergence in float32: a float32 loss, gradients in the inputs' dtype."""
    student, teachers, target = make(16, 8, 40, gen)
    low = {k: v.to(dtype) for k, v in student.items()}
    loss, gh, gw, gb = values_and_grads(ours(teachers["logits"], target, class_chunk_size=16), low)
    assert loss.dtype == torch.float32 and gh.dtype == gw.dtype == gb.dtype == dtype
    want = reference({k: v.double() for k, v in low.items()}, teachers["logits"], target, divergence="forward_kl",
                     beta=0.5, temperature=1.0, reduction="mean")(*(low[k].double() for k in ("hidden", "weight", "bias")))
    torch.testing.assert_close(loss.double(), want, rtol=2e-2, atol=1e-3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(), r"give exactly one teacher: .*; got none"),
        (dict(teacher_logits=torch.zeros(4, 5), teacher_topk=(torch.zeros(4, 2, dtype=torch.long), torch.zeros(4, 2))),
         "got \\['teacher_logits', 'teacher_topk'\\]"),
        (dict(teacher_logits=torch.zeros(4, 6)), r"teacher_logits must be floating point of shape \(4, 5\)"),
        (dict(teacher_logits=torch.zeros(4, 5), divergence="kl"), "divergence must be one of .*got 'kl'"),
        (dict(teacher_logits=torch.zeros(4, 5), divergence="jsd", beta=1.5), r"beta must be in \[0, 1\], got 1.5"),
        (dict(teacher_logits=torch.zeros(4, 5), temperature=0.0), "temperature must be > 0, got 0.0"),
        (dict(teacher_logits=torch.zeros(4, 5), reduction="batchmean"), "'batchmean'"),
        (dict(teacher_logits=torch.zeros(4, 5), chunk_size=0), "chunk_size must be >= 1"),
        (dict(teacher_logits=torch.zeros(4, 5), class_chunk_size=0), "class_chunk_size must be an int >= 1 or None, got 0"),
        (dict(teacher_logits=torch.zeros(4, 5), target=torch.tensor([0, 1, 7, 2])), "target 7 is outside"),
        (dict(teacher_topk=(torch.tensor([[0, 9]] * 4), torch.zeros(4, 2))), r"ids in \[0, 5\), got K=2 and id 9"),
        (dict(teacher_topk=(torch.tensor([[1, 1]] * 4), torch.zeros(4, 2))), "distinct"),
        (dict(teacher_topk=(torch.tensor([[0, 1]] * 4), torch.zeros(4, 2)), divergence="reverse_kl"),
         "forward_kl' only, got 'reverse_kl'"),
        (dict(teacher_topk=(torch.tensor([[0, 1]] * 4), torch.zeros(4, 2)), divergence="jsd"), "with beta=0.5"),
        (dict(teacher_hidden=torch.zeros(4, 3), teacher_weight=torch.zeros(6, 3)), r"teacher_weight \(5, d_T\)"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        linear_kd_loss(torch.zeros(4, 3), torch.zeros(5, 3), **kwargs)


def test_autocast_runs_both_matmuls_in_its_dtype(gen):
    """Under bfloat16 autocast the student's and the teacher's logits are bfloat16 matmuls (as F.linear gives them)."""
    student, teachers, target = make(12, 8, 30, gen, dtype=torch.float32)
    th, tw, tb = (teachers["hidden"][k].float() for k in ("teacher_hidden", "teacher_weight", "teacher_bias"))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = values_and_grads(ours(dict(teacher_hidden=th, teacher_weight=tw, teacher_bias=tb), target,
                                    class_chunk_size=7), student)
        t_logits = torch.nn.functional.linear(th, tw, tb).float()  # autocast's bfloat16 logits
        want = values_and_grads(ours(dict(teacher_logits=t_logits), target, class_chunk_size=7), student)
    assert t_logits.dtype == torch.float32 and not torch.equal(t_logits, th @ tw.T + tb)
    for x, ref in zip(got, want):
        torch.testing.assert_close(x, ref, rtol=0, atol=0)
