"""The loss options (``losses/machinery/options.py``) on every registered head that takes them.

Logit-level heads (softmax, stable, sparse and any registered SoftmaxHead subclass), plain and
chunked paths: values and gradients (hidden, weight, bias) in float64 against the formulas by
autograd (``reference.logits.options_ref``) for every reduction, "none" with unequal upstream
weights; gradcheck; class weights against ``F.cross_entropy(weight=)``; shift, return_lse and
token accuracy; the memory bound. Sampled and adaptive: the options they take, and a clear
refusal of the others.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from softmax_zoo.losses import (
    AdaptiveSoftmaxHead,
    SampledSoftmaxHead,
    SoftmaxHead,
    SoftmaxSampler,
    SparseSoftmaxHead,
    StableSoftmaxHead,
    UniformSampler,
    linear_cross_entropy,
)
from softmax_zoo.losses.machinery import chunked
from softmax_zoo.losses.machinery.options import OPTIONS, HeadOutput
from softmax_zoo.losses.reference.adaptive import make_pair, reference_loss
from softmax_zoo.losses.reference.logits import (
    REDUCTIONS,
    cross_entropy_ref,
    entropy_and_target_ref,
    options_ref,
    sparse_cross_entropy_ref,
)

from .conftest import logit_cases

D, C, N = 6, 11, 13
VARIANTS = logit_cases(C)
PATHS = {"plain": None, "chunked": 4}
WEIGHTS = torch.linspace(0.2, 2.0, C, dtype=torch.float64)  # class weights, unequal
OPTION_SETS = {
    "z_loss": {"z_loss": 0.05, "label_smoothing": 0.1},
    "softcap": {"softcap": 2.0, "label_smoothing": 0.1},
    "class_weight": {"class_weight": WEIGHTS},
    "temperature": {"temperature": 0.7, "z_loss": 0.05, "label_smoothing": 0.1},
    "all": {"z_loss": 0.05, "softcap": 2.0, "class_weight": WEIGHTS, "temperature": 1.5},
}
# Textbook per-row losses of the package's variants (case id -> (z, target, ε) -> (N,)); any other
# registered variant is checked against its own plain row loss without options.
TEXTBOOK = {
    "softmax": lambda z, t, eps: cross_entropy_ref(z, t, reduction="none", label_smoothing=eps),
    "stable_softmax": lambda z, t, eps: cross_entropy_ref(z, t, reduction="none", label_smoothing=eps),
    "sparse": lambda z, t, eps: sparse_cross_entropy_ref(z, t, 4, reduction="none", label_smoothing=eps),
    "sparse-k=C": lambda z, t, eps: cross_entropy_ref(z, t, reduction="none", label_smoothing=eps),
}


def make_head(variant, path, **options):
    cls, extra = VARIANTS[variant]
    torch.manual_seed(0)
    return cls(D, C, chunk_size=PATHS[path], **extra, **options).double()


def refused_without_lse(variant, options) -> bool:
    """Whether ``options`` need an lse the variant's row loss does not give (a variant registered
    outside the package may not): then check that it is refused, by name (the test ends there)."""
    if not (options.get("z_loss") or options.get("return_lse")) or make_head(variant, "plain").row_loss().has_lse:
        return False
    hidden, target = make_data(torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="z_loss and return_lse need the log-normaliser"):
        make_head(variant, "plain", **options)(hidden, target)
    return True


def make_data(gen, n=N):
    hidden = torch.randn(n, D, generator=gen, dtype=torch.float64) * 2
    target = torch.randint(0, C, (n,), generator=gen)
    target[::4] = -100
    return hidden, target


def reference(variant, head, hidden, target, reduction, options):
    """options_ref on hidden @ W^T + b through the variant's textbook loss; (loss, grads of hidden, W, b)."""
    eps = options.get("label_smoothing", 0.0)
    base = make_head(variant, "plain", label_smoothing=eps, reduction="none")
    textbook = TEXTBOOK.get(variant, lambda z, t, e: base.row_loss().on_logits(z, t, reduction="none"))
    h, w, b = (x.detach().clone().requires_grad_(True) for x in (hidden, head.weight, head.bias))
    kw = {k: v for k, v in options.items() if k != "label_smoothing"}
    loss = options_ref(h @ w.T + b, target, lambda z, t: textbook(z, t, eps),
                       lambda z: base.row_loss().log_probs(z).isfinite(), reduction=reduction, **kw)
    return loss, (h, w, b)


def value_and_grads(fn, inputs, row_weight):
    """fn() and the gradients of Σ fn()·r w.r.t. ``inputs`` (r all ones for a scalar)."""
    loss = fn()
    loss = loss.loss if isinstance(loss, HeadOutput) else loss
    r = row_weight if loss.dim() else torch.ones((), dtype=loss.dtype)
    return loss.detach(), torch.autograd.grad((loss * r).sum(), inputs)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("option_set", OPTION_SETS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_options_equal_their_formulas_float64(variant, path, option_set, reduction, gen):
    options = OPTION_SETS[option_set]
    if refused_without_lse(variant, options):
        return  # refused by name, which refused_without_lse checked
    head = make_head(variant, path, reduction=reduction, **options)
    hidden, target = make_data(gen)
    row_weight = torch.rand(N, generator=gen, dtype=torch.float64)  # unequal: "none" reruns the chunked pass
    h = hidden.clone().requires_grad_(True)
    loss, grads = value_and_grads(lambda: head(h, target), [h, head.weight, head.bias], row_weight)
    ref, inputs = reference(variant, head, hidden, target, reduction, options)
    ref_loss, ref_grads = value_and_grads(lambda: ref, list(inputs), row_weight)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-10, atol=1e-12)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-9, atol=1e-12)
    if reduction == "none":
        assert torch.all(loss[target == -100] == 0) and torch.all(grads[0][target == -100] == 0)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_gradcheck_with_every_option(variant, path, reduction, gen):
    if refused_without_lse(variant, OPTION_SETS["all"]):
        return  # refused by name, which refused_without_lse checked
    head = make_head(variant, path, reduction=reduction, **OPTION_SETS["all"])
    hidden, target = make_data(gen, 7)
    weight = head.weight.detach().clone().requires_grad_(True)
    bias = head.bias.detach().clone().requires_grad_(True)

    def head_fn(h, w, b):
        return _with_params(head, w, b, lambda: head(h, target))
    assert torch.autograd.gradcheck(head_fn, (hidden.requires_grad_(True), weight, bias))


def _with_params(head, weight, bias, fn):
    """fn() with the head's weight and bias replaced by ``weight`` and ``bias`` (so gradcheck perturbs them)."""
    saved = head.weight, head.bias
    del head.weight, head.bias
    head.weight, head.bias = weight, bias
    try:
        return fn()
    finally:
        del head.weight, head.bias
        head.weight, head.bias = saved


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_class_weight_equals_torch_cross_entropy(path, reduction, gen):
    head = make_head("softmax", path, reduction=reduction, class_weight=WEIGHTS)
    hidden, target = make_data(gen)
    row_weight = torch.rand(N, generator=gen, dtype=torch.float64)
    h = hidden.clone().requires_grad_(True)
    loss, grads = value_and_grads(lambda: head(h, target), [h, head.weight], row_weight)
    ref_loss, ref_grads = value_and_grads(
        lambda: F.cross_entropy(F.linear(h, head.weight, head.bias), target, weight=WEIGHTS, reduction=reduction),
        [h, head.weight], row_weight,
    )
    torch.testing.assert_close(loss, ref_loss, rtol=1e-12, atol=1e-12)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("path", PATHS)
def test_return_lse_and_token_accuracy(variant, path, gen):
    if refused_without_lse(variant, {"return_lse": True}):
        return  # refused by name, which refused_without_lse checked
    hidden, target = make_data(gen, 3 * N)
    hidden, target = hidden.reshape(3, N, D), target.reshape(3, N)
    target[:, 1::3] = make_head(variant, "plain").predict(hidden[:, 1::3])  # some rows right
    head = make_head(variant, path, softcap=2.0, return_lse=True, return_token_accuracy=True)
    out = head(hidden, target)
    assert isinstance(out, HeadOutput) and out.lse.shape == target.shape and not out.lse.requires_grad
    keep = target != -100
    plain = make_head(variant, "plain", softcap=2.0)
    torch.testing.assert_close(out.loss, plain(hidden, target), rtol=1e-12, atol=1e-12)
    logp = plain.log_probs(hidden)
    z = 2.0 * torch.tanh(plain.logits(hidden) / 2.0)
    expected_lse = z.masked_fill(~logp.isfinite(), float("-inf")).logsumexp(dim=-1)  # over the support
    torch.testing.assert_close(out.lse[keep], expected_lse[keep], rtol=1e-12, atol=1e-12)
    assert torch.all(out.lse[~keep] == 0)
    hits = (logp.argmax(dim=-1) == target)[keep].double()
    assert 0 < hits.mean() < 1
    torch.testing.assert_close(out.token_accuracy, hits.mean())
    assert make_head(variant, path, return_token_accuracy=True)(hidden, target).lse is None


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("path", PATHS)
def test_shift_predicts_the_next_position(variant, path, gen):
    hidden, target = make_data(gen, 2 * 7)
    hidden, target = hidden.reshape(2, 7, D), target.reshape(2, 7)
    none = make_head(variant, path, shift=True, reduction="none")(hidden, target)
    expected = make_head(variant, path, reduction="none")(hidden[:, :-1], target[:, 1:])
    assert none.shape == target.shape and torch.all(none[:, -1] == 0)
    torch.testing.assert_close(none[:, :-1], expected, rtol=1e-12, atol=1e-12)
    mean = make_head(variant, path, shift=True)(hidden, target)
    torch.testing.assert_close(mean, make_head(variant, path)(hidden[:, :-1], target[:, 1:]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("path", PATHS)
def test_shift_n_predicts_the_nth_next_position(variant, path, gen):
    hidden, target = make_data(gen, 2 * 7)
    hidden, target = hidden.reshape(2, 7, D), target.reshape(2, 7)
    for n in (2, 3):
        none = make_head(variant, path, shift=n, reduction="none")(hidden, target)
        expected = make_head(variant, path, reduction="none")(hidden[:, :-n], target[:, n:])
        assert none.shape == target.shape and torch.all(none[:, -n:] == 0)
        torch.testing.assert_close(none[:, :-n], expected, rtol=1e-12, atol=1e-12)
        mean = make_head(variant, path, shift=n)(hidden, target)
        torch.testing.assert_close(mean, make_head(variant, path)(hidden[:, :-n], target[:, n:]), rtol=1e-12, atol=1e-12)
    assert make_head(variant, path, shift=True).options.shift == 1 and make_head(variant, path).options.shift == 0
    assert torch.equal(make_head(variant, path, shift=1)(hidden, target), make_head(variant, path, shift=True)(hidden, target))
    assert make_head(variant, path, shift=7)(hidden, target).isnan()  # every position past the end: no kept row
    weight = make_head(variant, path).weight
    torch.testing.assert_close(linear_cross_entropy(hidden, weight, target, chunk_size=PATHS[path], shift=2),
                               linear_cross_entropy(hidden[:, :-2], weight, target[:, 2:], chunk_size=PATHS[path]))


def test_shift_n_on_the_sampled_and_adaptive_heads(gen):
    hidden, target = make_data(gen, 2 * 7)
    hidden, target = hidden.reshape(2, 7, D), target.reshape(2, 7)

    def sampled(**options):
        torch.manual_seed(0)
        return SampledSoftmaxHead(D, C, sampler=SoftmaxSampler(), num_samples=3, reduction="none", **options).double()

    torch.testing.assert_close(sampled(shift=2)(hidden, target)[:, :-2], sampled()(hidden[:, :-2], target[:, 2:]),
                               rtol=1e-10, atol=1e-12)
    ref, head = make_pair(D, C, [3, 7], div_value=2.0, dtype=torch.float64, reduction="none", shift=3)
    torch.testing.assert_close(head(hidden, target)[:, :-3], reference_loss(ref, hidden[:, :-3], target[:, 3:], reduction="none"),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("path", PATHS)
def test_entropy_and_target_log_prob_equal_their_formulas_float64(variant, path, gen):
    """At a temperature and under the softcap: H = −Σ p log p and log p_t of the head's distribution,
    0 at ignored rows, detached, and log p_t = class_log_probs of the target; the loss is unchanged."""
    hidden, target = make_data(gen, 3 * N)
    hidden, target = hidden.reshape(3, N, D), target.reshape(3, N)
    options = {"softcap": 2.0, "temperature": 0.6}
    head = make_head(variant, path, return_entropy=True, return_target_log_prob=True, **options)
    out = head(hidden.requires_grad_(True), target)
    assert isinstance(out, HeadOutput) and out.lse is None and out.token_accuracy is None
    assert out.entropy.shape == out.target_log_prob.shape == target.shape
    assert not out.entropy.requires_grad and not out.target_log_prob.requires_grad
    plain = make_head(variant, "plain", **options)
    torch.testing.assert_close(out.loss, plain(hidden, target), rtol=1e-12, atol=1e-12)
    logits = plain.logits(hidden).detach().reshape(-1, C)
    support = lambda z: plain.row_loss().log_probs(z).isfinite()  # noqa: E731 (all classes, or the top-k)
    entropy, logp_t = entropy_and_target_ref(logits, target.reshape(-1), support, **options)
    torch.testing.assert_close(out.entropy.reshape(-1), entropy, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(out.target_log_prob.reshape(-1), logp_t, rtol=1e-12, atol=1e-12)
    keep = target != -100
    assert torch.all(out.entropy[~keep] == 0) and torch.all(out.target_log_prob[~keep] == 0)
    assert bool((out.entropy[keep] > 0).all())
    by_class = plain.class_log_probs(hidden, target.clamp(min=0)[..., None])[..., 0]
    torch.testing.assert_close(out.target_log_prob[keep], by_class[keep].detach(), rtol=1e-12, atol=1e-12)
    only = make_head(variant, path, return_target_log_prob=True, temperature=0.6)(hidden, target)
    assert only.entropy is None and only.target_log_prob.shape == target.shape


@pytest.mark.parametrize("path", PATHS)
def test_target_log_prob_at_a_temperature_is_minus_the_loss(path, gen):
    """softmax, no smoothing: −loss ("none") is log p_t at the temperature, differentiable; the
    returned target_log_prob is its detached value, and its gradient is 1/T of the tempered one."""
    hidden, target = make_data(gen)
    head = make_head("softmax", path, reduction="none", temperature=0.5, return_target_log_prob=True)
    h = hidden.clone().requires_grad_(True)
    out = head(h, target)
    torch.testing.assert_close(-out.loss, out.target_log_prob, rtol=1e-12, atol=1e-12)
    y = hidden.clone().requires_grad_(True)
    ref = torch.log_softmax(F.linear(y, head.weight, head.bias) / 0.5, dim=1).gather(1, target.clamp(min=0)[:, None])[:, 0]
    ref = ref * (target != -100)
    r = torch.rand(N, generator=gen, dtype=torch.float64)
    (out.loss * r).sum().backward()
    (-ref * r).sum().backward()
    torch.testing.assert_close(h.grad, y.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_chunked_options_hold_at_most_chunk_rows_of_logits(variant, gen, monkeypatch):
    if refused_without_lse(variant, OPTION_SETS["all"]):
        return  # refused by name, which refused_without_lse checked
    rows = []
    linear = chunked.linear_into
    monkeypatch.setattr(chunked, "linear_into", lambda out, h, *a: rows.append(max(out.shape[0], h.shape[0])) or linear(out, h, *a))
    hidden, target = make_data(gen, 30)
    head = make_head(variant, "chunked", reduction="none", return_lse=True, return_token_accuracy=True,
                     **OPTION_SETS["all"])
    (head(hidden.requires_grad_(True), target).loss * torch.rand(30, dtype=torch.float64)).sum().backward()
    assert rows == [4] * 7 + [2] + [4] * 7 + [2]  # the forward, then the "none" rerun


def test_sampled_takes_class_weight_and_shift(gen):
    hidden, target = make_data(gen, 2 * 7)
    hidden, target = hidden.reshape(2, 7, D), target.reshape(2, 7)

    def head(**options):
        torch.manual_seed(0)
        return SampledSoftmaxHead(D, C, sampler=SoftmaxSampler(), num_samples=3, reduction="none", **options).double()

    plain = head()(hidden, target)  # the softmax sampler: the sampled loss is the full CE for every draw
    weighted = head(class_weight=WEIGHTS)(hidden, target)
    keep = target != -100
    torch.testing.assert_close(weighted, plain * WEIGHTS[target.clamp(min=0)] * keep, rtol=1e-10, atol=1e-12)
    shifted = head(shift=True)(hidden, target)
    torch.testing.assert_close(shifted[:, :-1], head()(hidden[:, :-1], target[:, 1:]), rtol=1e-10, atol=1e-12)
    mean = head(class_weight=WEIGHTS).eval()
    mean.reduction = "mean"
    logits = F.linear(hidden, mean.weight)
    torch.testing.assert_close(mean(hidden, target), F.cross_entropy(logits.reshape(-1, C), target.reshape(-1),
                                                                      weight=WEIGHTS))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_adaptive_takes_class_weight_shift_and_token_accuracy(reduction, gen):
    ref, _ = make_pair(D, C, [3, 7], div_value=2.0, dtype=torch.float64)
    _, head = make_pair(D, C, [3, 7], div_value=2.0, dtype=torch.float64, reduction=reduction,
                        class_weight=WEIGHTS, shift=True, return_token_accuracy=True)
    hidden, target = make_data(gen, 2 * 7)
    hidden, target = hidden.reshape(2, 7, D).requires_grad_(True), target.reshape(2, 7)
    out = head(hidden, target)
    shifted = F.pad(target[:, 1:], (0, 1), value=-100)
    keep = shifted != -100
    w = WEIGHTS[shifted.clamp(min=0)] * keep
    rows = reference_loss(ref, hidden, shifted, reduction="none") * w
    expected = {"none": rows, "sum": rows.sum(), "mean": rows.sum() / w.sum()}[reduction]
    torch.testing.assert_close(out.loss, expected, rtol=1e-10, atol=1e-12)
    r = torch.rand(out.loss.shape, generator=gen, dtype=torch.float64)
    grads = torch.autograd.grad((out.loss * r).sum(), [hidden, *head.parameters()])
    ref_grads = torch.autograd.grad((expected * r).sum(), [hidden, *ref.parameters()])
    for g, ref_g in zip(grads, ref_grads):
        torch.testing.assert_close(g, ref_g, rtol=1e-9, atol=1e-12)
    hits = (head.predict(hidden) == shifted)[keep].double().mean()
    torch.testing.assert_close(out.token_accuracy, hits)


REFUSED = [
    (SampledSoftmaxHead, {"sampler": UniformSampler(C), "num_samples": 3}, ["z_loss", "return_lse", "softcap",
                                                                          "return_token_accuracy", "temperature",
                                                                          "return_entropy", "return_target_log_prob"]),
    (AdaptiveSoftmaxHead, {"cutoffs": [3, 7]}, ["z_loss", "return_lse", "softcap", "temperature", "return_entropy",
                                                "return_target_log_prob"]),
]
SET = {"z_loss": 0.1, "return_lse": True, "class_weight": WEIGHTS, "softcap": 5.0, "shift": True, "return_token_accuracy": True,
       "temperature": 0.5, "return_entropy": True, "return_target_log_prob": True}


@pytest.mark.parametrize("cls, extra, refused", REFUSED)
def test_heads_refuse_what_they_cannot_give_by_name(cls, extra, refused):
    assert set(SET) == set(OPTIONS)
    for name in OPTIONS:
        if name in refused:
            with pytest.raises(ValueError, match=f"{cls.__name__} does not support {name}: "):
                cls(D, C, **extra, **{name: SET[name]})
        else:
            cls(D, C, **extra, **{name: SET[name]})


@pytest.mark.parametrize("options, message", [
    ({"z_loss": -1.0}, "z_loss must be a finite coefficient >= 0, got -1.0"),
    ({"softcap": 0.0}, "softcap must be None or a finite number > 0, got 0.0"),
    ({"class_weight": torch.ones(C - 1)}, f"class_weight must have num_classes = {C} entries, got {C - 1}"),
    ({"class_weight": -torch.ones(C)}, "class_weight must be finite and >= 0"),
    ({"class_weight": torch.ones(C), "label_smoothing": 0.1}, "class_weight with label_smoothing=0.1 is refused"),
    ({"temperature": 0.0}, "temperature must be a finite number > 0, got 0.0"),
    ({"temperature": float("inf")}, "temperature must be a finite number > 0, got inf"),
    ({"shift": -1}, r"shift must be True, False or an int n >= 0 \(the n-th next token\), got -1"),
    ({"shift": 1.5}, "shift must be True, False or an int n >= 0"),
])
def test_bad_option_values_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        SoftmaxHead(D, C, **options)
    if "class_weight" not in options or "label_smoothing" in options:
        with pytest.raises(ValueError, match=message):
            SoftmaxHead.check_options(**options)


def test_the_readme_table_says_what_each_head_refuses():
    """The README's options × variants table against each head's ``refused_options``."""
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    lines = readme.split("### Options", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| option |"))
    table = [line for line in lines[start:] if line.startswith("|")][: len(OPTIONS) + 3]  # header, rule, rows
    header, _, *rows = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    heads = {"softmax": SoftmaxHead, "stable": StableSoftmaxHead, "sparse": SparseSoftmaxHead,
             "adaptive": AdaptiveSoftmaxHead, "sampled": SampledSoftmaxHead}
    assert header[1:] == list(heads)
    named = [re.match(r"`(\w+)", row[0]).group(1) for row in rows]
    assert named == [*OPTIONS, "reduction"]
    for name, row in zip(named, rows):
        for label, cell in zip(header[1:], row[1:]):
            assert cell.startswith("yes") == (name not in heads[label].refused_options), (name, label)


def test_linear_cross_entropy_takes_the_options(gen):
    hidden, target = make_data(gen)
    head = make_head("stable_softmax", "chunked", z_loss=0.05, softcap=2.0, return_token_accuracy=True)
    out = linear_cross_entropy(hidden, head.weight, target, bias=head.bias, loss="stable_softmax", chunk_size=4,
                               z_loss=0.05, softcap=2.0, return_token_accuracy=True)
    expected = head(hidden, target)
    torch.testing.assert_close(out.loss, expected.loss, rtol=0, atol=0)
    torch.testing.assert_close(out.token_accuracy, expected.token_accuracy)


@pytest.mark.parametrize("chunk_size", [None, 4])
def test_per_token_outputs_on_device(device, chunk_size, gen):
    """temperature, entropy and target log-prob in float32 on each device against the float64 head on the CPU."""
    hidden, target = make_data(gen)
    options = dict(temperature=0.7, return_entropy=True, return_target_log_prob=True, reduction="none")
    ref = make_head("sparse", "plain", **options)
    head = make_head("sparse", "plain", **options).float().to(device)
    head.chunk_size = chunk_size
    x = hidden.float().to(device).requires_grad_(True)
    out, expected = head(x, target.to(device)), ref(hidden, target)
    out.loss.sum().backward()
    for name in ("loss", "entropy", "target_log_prob"):
        got, want = getattr(out, name).detach().cpu().double(), getattr(expected, name)
        finite = want.isfinite()
        torch.testing.assert_close(got[finite], want[finite], rtol=1e-4, atol=1e-5)
        assert torch.equal(got.isfinite(), finite)
    assert bool(x.grad.isfinite().all())
