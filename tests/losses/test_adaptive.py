"""AdaptiveSoftmaxHead against torch.nn.AdaptiveLogSoftmaxWithLoss, and what torch lacks."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from softmax_zoo.losses import AdaptiveSoftmaxHead
from softmax_zoo.losses.methods import adaptive
from softmax_zoo.losses.reference.adaptive import make_pair, reference_loss, zipf_targets

D, C, CUTOFFS = 32, 300, [20, 60, 150]  # tail widths 16, 8, 4 at div 2 (at div 4: 8, 2, 1, torch's 8, 2, 0)
DIV = 2.0
REDUCTIONS = ["mean", "sum", "none"]


def clone_grad(t: torch.Tensor) -> torch.Tensor:
    return t.detach().clone().requires_grad_(True)


def assert_same_grads(head: AdaptiveSoftmaxHead, ref: torch.nn.Module, **tol) -> None:
    ours, theirs = dict(head.named_parameters()), dict(ref.named_parameters())
    assert ours.keys() == theirs.keys()
    for name, p in ours.items():
        q = theirs[name]
        if q.grad is None:  # a cluster no row reached: torch leaves it out of the graph
            assert p.grad is None or torch.all(p.grad == 0), name
        else:
            torch.testing.assert_close(p.grad, q.grad, msg=name, **tol)


@pytest.mark.parametrize("head_bias", [False, True])
def test_from_torch_matches_loss_log_probs_and_grads(head_bias, device, gen):
    ref, head = make_pair(D, C, CUTOFFS, div_value=DIV, head_bias=head_bias, device=device)
    hidden = torch.randn(3, 41, D, generator=gen).to(device)  # odd shape, flattened to 123 rows
    target = zipf_targets(123, C, 1.0, gen).reshape(3, 41).to(device)
    h1, h2 = clone_grad(hidden), clone_grad(hidden)
    loss = head(h1, target)
    expected = ref(h2.reshape(-1, D), target.reshape(-1)).loss
    torch.testing.assert_close(loss, expected)
    loss.backward()
    expected.backward()
    torch.testing.assert_close(h1.grad, h2.grad)
    assert_same_grads(head, ref)
    with torch.no_grad():
        torch.testing.assert_close(head.log_probs(hidden), ref.log_prob(hidden.reshape(-1, D)).reshape(3, 41, C))
        assert torch.equal(head.predict(hidden).reshape(-1), ref.predict(hidden.reshape(-1, D)))


def test_state_dict_is_torch_layout():
    ref, head = make_pair(D, C, CUTOFFS, div_value=DIV, head_bias=True)
    assert head.state_dict().keys() == ref.state_dict().keys()
    back = torch.nn.AdaptiveLogSoftmaxWithLoss(D, C, CUTOFFS, div_value=DIV, head_bias=True)
    back.load_state_dict(head.state_dict())
    assert head.from_torch(back).cutoffs == CUTOFFS


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ignore_index", [-100, 5])
def test_ignore_index_and_reductions(reduction, ignore_index, gen):
    ref, head = make_pair(D, C, CUTOFFS, div_value=DIV, ignore_index=ignore_index, reduction=reduction)
    hidden = torch.randn(50, D, generator=gen)
    target = zipf_targets(50, C, 1.0, gen)
    target[::6] = ignore_index
    h1, h2 = clone_grad(hidden), clone_grad(hidden)
    loss = head(h1, target)
    expected = reference_loss(ref, h2, target, ignore_index=ignore_index, reduction=reduction)
    torch.testing.assert_close(loss, expected)
    upstream = torch.rand(loss.shape, generator=gen)  # per-row weights for "none": the recompute path
    loss.backward(upstream)
    expected.backward(upstream)
    torch.testing.assert_close(h1.grad, h2.grad)
    assert torch.all(h1.grad[::6] == 0)
    assert_same_grads(head, ref)


def test_all_rows_ignored_gives_nan_mean_and_zero_grads():
    _, head = make_pair(D, C, CUTOFFS, div_value=DIV)
    hidden = torch.randn(4, D, requires_grad=True)
    target = torch.full((4,), -100)
    loss = head(hidden, target)
    assert torch.isnan(loss)
    head.reduction = "sum"
    loss = head(hidden, target)
    loss.backward()
    assert loss.item() == 0 and torch.all(hidden.grad == 0) and torch.all(head.head.weight.grad == 0)


def test_chunked_equals_one_chunk(monkeypatch, gen):
    _, head = make_pair(D, C, CUTOFFS, div_value=DIV, head_bias=True)
    hidden, target = torch.randn(70, D, generator=gen), zipf_targets(70, C, 0.7, gen)
    results = []
    for chunk in (1 << 24, 100):  # one chunk per layer; then 1 to 5 rows per chunk
        monkeypatch.setattr(adaptive, "_CHUNK_ELEMENTS", chunk)
        head.zero_grad()
        h = clone_grad(hidden)
        loss = head(h, target)
        loss.backward()
        results.append([loss, h.grad] + [p.grad for p in head.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b)


def test_tiny_target_probability_uses_logsumexp(gen):
    """Targets with log p < −87 (p_t underflows in float32) still get the exact loss."""
    ref, head = make_pair(D, C, CUTOFFS, div_value=DIV)
    hidden = torch.randn(40, D, generator=gen) * 200
    target = zipf_targets(40, C, 0.5, gen)
    h1, h2 = clone_grad(hidden), clone_grad(hidden)
    loss = AdaptiveSoftmaxHead.from_torch(ref, reduction="none")(h1, target)
    expected = reference_loss(ref, h2, target, reduction="none")
    assert expected.max() > 200  # the case is exercised
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-3)
    loss.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(h1.grad, h2.grad, rtol=1e-4, atol=1e-4)


def test_log_probs_normalised_and_subset(gen):
    _, head = make_pair(D, C, CUTOFFS, div_value=DIV)
    hidden = torch.randn(2, 9, D, generator=gen)
    full = head.log_probs(hidden)
    assert full.shape == (2, 9, C) and full.dtype == torch.float32
    torch.testing.assert_close(full.logsumexp(-1), torch.zeros(2, 9), atol=1e-5, rtol=0)
    classes = [299, 3, 65, 3, 21, 140]  # unsorted, repeated, from the shortlist and clusters 0 and 1
    calls = []
    for i, cluster in enumerate(head.tail):
        cluster.register_forward_hook(lambda *_, i=i: calls.append(i))
    subset = head.log_probs(hidden, classes)
    assert subset.shape == (2, 9, len(classes))
    torch.testing.assert_close(subset, full[..., classes])
    assert sorted(calls) == [0, 1, 2]  # 299 is in cluster 2
    calls.clear()
    head.log_probs(hidden, torch.tensor([0, 19, 25]))
    assert calls == [0]  # only the cluster holding 25


def test_predict_is_exact_argmax(gen):
    """Rows whose best class is in a tail cluster, in the shortlist, and in between."""
    _, head = make_pair(D, C, CUTOFFS, div_value=DIV)
    with torch.no_grad():
        head.head.weight[CUTOFFS[0] :] *= 8  # make the clusters compete with the shortlist
        head.tail[1][1].weight *= 6
    hidden = torch.randn(400, D, generator=gen)
    pred = head.predict(hidden)
    assert torch.equal(pred, head.log_probs(hidden).argmax(-1))
    assert (pred < CUTOFFS[0]).any() and (pred >= CUTOFFS[0]).any()


def test_autocast_bf16_on_cpu(gen):
    """pytorch/pytorch#44724: under autocast the softmax is taken in float32, results stay finite."""
    _, head = make_pair(D, C, CUTOFFS, div_value=DIV, head_bias=True)
    hidden, target = torch.randn(64, D, generator=gen), zipf_targets(64, C, 1.0, gen)
    h32, h16 = clone_grad(hidden), clone_grad(hidden)
    loss32 = head(h32, target)
    loss32.backward()
    grads32 = [p.grad.clone() for p in head.parameters()]
    head.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss16 = head(h16, target)
        logp = head.log_probs(hidden)
    loss16.backward()
    assert loss16.dtype == torch.float32 and logp.dtype == torch.float32
    assert torch.isfinite(loss16) and torch.isfinite(logp).all() and torch.isfinite(h16.grad).all()
    torch.testing.assert_close(loss16, loss32, rtol=2e-2, atol=0)  # bf16 matmuls: 8 mantissa bits
    torch.testing.assert_close(logp, head.log_probs(hidden), rtol=0, atol=0.1)
    torch.testing.assert_close(h16.grad, h32.grad, rtol=0, atol=0.05 * h32.grad.abs().max().item())
    for p, g32 in zip(head.parameters(), grads32):
        assert p.grad.dtype == torch.float32
        torch.testing.assert_close(p.grad, g32, rtol=0, atol=0.05 * g32.abs().max().item())


@pytest.mark.parametrize("fast", [True, pytest.param(False, marks=pytest.mark.slow)])
@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("class_weight", [None, torch.linspace(0.5, 2.0, 14)], ids=["unweighted", "class_weight"])
def test_gradcheck_float64(reduction, fast, class_weight, monkeypatch):
    """The custom Function _AdaptiveNLL: "mean" scales the stored gradients, "none" recomputes them;
    with class weights as the fused pass's row weights."""
    monkeypatch.setattr(adaptive, "_CHUNK_ELEMENTS", 10)  # several chunks per layer
    head = AdaptiveSoftmaxHead(6, 14, [3, 7], div_value=2.0, head_bias=True, reduction=reduction,
                               class_weight=class_weight).double()
    gen = torch.Generator().manual_seed(1)
    hidden = torch.randn(9, 6, generator=gen, dtype=torch.float64, requires_grad=True)
    target = torch.tensor([0, 4, 13, 2, 8, 5, -100, 11, 1])
    names = [n for n, _ in head.named_parameters()]

    def loss(h, *params):
        return functional_call(head, dict(zip(names, params)), (h, target))

    params = [p.detach().clone().requires_grad_(True) for p in head.parameters()]
    assert torch.autograd.gradcheck(loss, (hidden, *params), fast_mode=fast)


def test_bad_input():
    with pytest.raises(ValueError, match=r"strictly increasing, got \[10, 10\]"):
        AdaptiveSoftmaxHead(D, C, [10, 10], div_value=DIV)
    with pytest.raises(ValueError, match=r"\(0, 300\), got 300"):
        AdaptiveSoftmaxHead(D, C, [10, 300], div_value=DIV)
    with pytest.raises(ValueError, match=r"got 0"):
        AdaptiveSoftmaxHead(D, C, [0, 10], div_value=DIV)
    with pytest.raises(ValueError, match=r"integers, got 2.5"):
        AdaptiveSoftmaxHead(D, C, [2.5, 10], div_value=DIV)
    with pytest.raises(ValueError, match=r"got \[\]"):
        AdaptiveSoftmaxHead(D, C, [], div_value=DIV)
    with pytest.raises(TypeError):
        AdaptiveSoftmaxHead(D, C, CUTOFFS, div_value=DIV, weight=torch.zeros(C, D))
    head = AdaptiveSoftmaxHead(D, C, CUTOFFS, div_value=DIV)
    hidden = torch.randn(4, D)
    with pytest.raises(ValueError, match=r"target 300 is outside \[0, 300\)"):
        head(hidden, torch.tensor([0, 1, 300, 2]))
    with pytest.raises(ValueError, match=r"target -1 is outside"):
        head(hidden, torch.tensor([0, 1, -1, 2]))
    with pytest.raises(ValueError, match=r"hidden has 31 features but the head expects 32"):
        head(torch.randn(4, 31), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"hidden is torch.float64 but the weight is torch.float32"):
        head(hidden.double(), torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"target must have shape \(4,\)"):
        head(hidden, torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match=r"integer tensor, got torch.float32"):
        head(hidden, torch.zeros(4))
    with pytest.raises(ValueError, match=r"classes must lie in \[0, 300\), got 300"):
        head.log_probs(hidden, [1, 300])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_in_place_softmax_writes_into_the_scratch_buffer(dtype, gen):
    """The CPU path's softmax must stay in place (``torch.softmax(z, 1, out=z)``): if torch stops
    honouring ``out`` or aliasing, the scratch buffer would be silently doubled or wrong."""
    x = torch.randn(5, 4, generator=gen, dtype=dtype)
    weight = torch.randn(9, 4, generator=gen, dtype=dtype)
    bias = torch.randn(9, generator=gen, dtype=dtype)
    p = adaptive._softmax_of_linear(x, weight, bias, dtype)
    assert p.data_ptr() == adaptive._SCRATCH.buf.data_ptr(), "softmax no longer writes into out="
    torch.testing.assert_close(p, torch.softmax(x @ weight.T + bias, dim=1))
    z = torch.randn(3, 7, generator=gen, dtype=dtype)
    expected = torch.softmax(z, 1)
    assert torch.softmax(z, 1, out=z).data_ptr() == z.data_ptr()
    torch.testing.assert_close(z, expected)


def test_a_small_hidden_size_keeps_every_tail_cluster_a_projection():
    # d = 32 at div 4 with three clusters: d // 4**3 = 0, which torch would take as it is.
    counts = torch.arange(C, 0, -1).double()
    cost = adaptive.MatmulCost(c_m=1e-5, lam=1e-11, w0=1e6)
    cutoffs = adaptive.optimal_cutoffs(counts, D, num_clusters=3, batch_size=4096, cost=cost, div_value=4.0)
    head = AdaptiveSoftmaxHead(D, C, cutoffs=cutoffs)  # the README's line, default div_value 4
    assert [proj.out_features for proj, _ in head.tail] == adaptive.tail_widths(D, 3, 4.0) == [8, 2, 1]
    hidden, target = torch.randn(50, D), zipf_targets(50, C, 1.0, torch.Generator().manual_seed(0))
    loss = head(hidden, target)
    loss.backward()
    assert torch.isfinite(loss) and head.tail[2][0].weight.grad is not None
    torch.testing.assert_close(head.log_probs(hidden).exp().sum(-1), torch.ones(50))
    with pytest.raises(ValueError, match=r"project to \[8, 2, 0\] dimensions"):
        AdaptiveSoftmaxHead.from_torch(torch.nn.AdaptiveLogSoftmaxWithLoss(D, C, CUTOFFS, div_value=4.0))
