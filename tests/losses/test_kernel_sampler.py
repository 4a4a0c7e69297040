"""QuadraticKernelSampler: the tree draws from q ∝ α(h·w)² + 1 (and q̃ without the target),
log_q is exact, an incremental refresh equals a rebuild, bad arguments raise."""

from __future__ import annotations

import pytest
import torch

from softmax_zoo.losses import QuadraticKernelSampler
from softmax_zoo.losses.methods.kernel_sampler import _tiles
from softmax_zoo.losses.reference.sampled import chi_square_pvalue, kernel_probs

P_FALSE_ALARM = 1e-6
# C = 37 classes in leaves of 4 (the last one padded), a 3-ary tree 10 -> 4 -> 2 leaves/nodes with
# the top 2 nodes drawn densely: two tree levels are walked, padding at every level.
C, D, ALPHA = 37, 4, 100.0
SMALL_TREE = dict(alpha=ALPHA, leaf_size=4, branching=3, top_nodes=2)


@pytest.fixture
def data():
    """hidden (4, D), weight (C, D) with a few large rows, targets at both ends and inside."""
    g = torch.Generator().manual_seed(2)
    weight = torch.randn(C, D, generator=g) * 0.3
    weight[[3, 20]] *= 5  # classes with most of the mass
    return torch.randn(4, D, generator=g), weight, torch.tensor([0, 20, C - 1, 3])


TREES = [SMALL_TREE, dict(SMALL_TREE, max_tile=4), dict(alpha=ALPHA, leaf_size=64)]
TREE_IDS = ["walked", "walked_tiles_of_4", "dense_only"]


def check_draws_follow(sampler, probs_of, data, excluded: bool) -> None:
    """Chi-square of 20,000 draws per row against ``probs_of(hidden, weight, ALPHA, exclude)``, exact log q,
    target never drawn when excluded."""
    hidden, weight, target = data
    exclude = target if excluded else None
    sampler.refresh(weight)
    torch.manual_seed(0)
    ids, log_q = sampler.sample(hidden, weight, 20_000, exclude=exclude)
    probs = probs_of(hidden, weight, ALPHA, exclude)
    assert ids.shape == log_q.shape == (4, 20_000)
    assert chi_square_pvalue(ids, probs) > P_FALSE_ALARM
    torch.testing.assert_close(log_q.double(), probs.gather(1, ids).log(), rtol=0, atol=1e-5)
    if excluded:
        assert not bool((ids == target[:, None]).any())


def check_log_prob_closed_form(sampler, probs_of, data) -> None:
    """``sampler.log_prob`` of every class equals the log of ``probs_of``, with and without the target."""
    hidden, weight, target = data
    ids = torch.arange(C).expand(4, C)
    for exclude in (None, target):
        expected = probs_of(hidden, weight, ALPHA, exclude).log()
        got = sampler.log_prob(hidden, weight, ids, exclude=exclude).double()
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("excluded", [False, True], ids=["q", "q_tilde"])
@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_draws_follow_kernel_distribution(excluded, tree, data):
    check_draws_follow(QuadraticKernelSampler(**tree), kernel_probs, data, excluded)


@pytest.mark.parametrize("tree", [dict(SMALL_TREE, top_nodes=4), dict(SMALL_TREE, top_nodes=1)],
                         ids=["level_one_dense", "two_walked_levels"])
def test_200k_draws_match_exact_q_and_reject_a_near_miss(tree, data):
    """The class step under a level-1 node (leaf by its classes' kernel sum, then class), alone and
    after two walked levels (the last child's hᵀSh taken as the parent's minus its siblings'):
    200,000 draws per row pass the chi-square against the exact q̃ and fail it against q̃ with 5%
    of one class's probability moved to its neighbour."""
    hidden, weight, target = data
    torch.manual_seed(0)
    ids, log_q = QuadraticKernelSampler(**tree).sample(hidden, weight, 200_000, exclude=target)
    probs = kernel_probs(hidden, weight, ALPHA, target)
    assert chi_square_pvalue(ids, probs) > P_FALSE_ALARM
    near_miss = probs.clone()
    moved = 0.05 * near_miss[:, 10]
    near_miss[:, 10] -= moved
    near_miss[:, 11] += moved
    assert chi_square_pvalue(ids, near_miss) < P_FALSE_ALARM
    torch.testing.assert_close(log_q.double(), probs.gather(1, ids).log(), rtol=0, atol=1e-5)
    assert not bool((ids == target[:, None]).any())


@pytest.mark.parametrize("max_tile", [16, 256], ids=["several_tiles_per_node", "one_tile_per_node"])
def test_tiles_hold_every_draw_once_in_bounded_chunks(max_tile):
    """``_tiles``: each draw in one slot of a tile of its node, tiles ≤ max_tile, chunks ≤ chunk_tiles tiles,
    every slot of a tile but the padding of its chunk filled."""
    node = torch.randint(0, 50, (3000,), generator=torch.Generator().manual_seed(6))  # ~60 draws per node
    tiles = _tiles(node, max_tile=max_tile, chunk=256, chunk_tiles=8)
    real = tiles.slots < node.numel()
    assert torch.equal(tiles.slots[real].sort().values, torch.arange(node.numel()))
    assert tiles.node.numel() == (50 if max_tile == 256 else int((node.bincount() + 15).div(16, rounding_mode="floor").sum()))
    for (a, b, width, s0, s1), (tile_node, slots) in zip(tiles.chunks, tiles.blocks(), strict=True):
        assert b - a <= 8 and width <= max_tile and slots.shape == (b - a, width)
        assert bool(slots[:, 0].lt(node.numel()).all())  # tiles are filled from their first slot
        kept = slots < node.numel()
        assert torch.equal(node[slots[kept]], tile_node[:, None].expand_as(slots)[kept])


def test_log_prob_is_closed_form(data):
    check_log_prob_closed_form(QuadraticKernelSampler(**SMALL_TREE), kernel_probs, data)


def test_dominant_target_is_never_drawn():
    """A target holding ~all the kernel mass: q̃ must still be exact over the other classes."""
    g = torch.Generator().manual_seed(3)
    weight = torch.randn(C, D, generator=g) * 0.01
    hidden = torch.randn(2, D, generator=g)
    weight[[5, 36]] = hidden * 50  # (h·w_t)² huge for row 0 -> class 5, row 1 -> class 36
    target = torch.tensor([5, 36])
    torch.manual_seed(0)
    ids, log_q = QuadraticKernelSampler(**SMALL_TREE).sample(hidden, weight, 20_000, exclude=target)
    probs = kernel_probs(hidden, weight, ALPHA, target)
    assert not bool((ids == target[:, None]).any())
    assert chi_square_pvalue(ids, probs) > P_FALSE_ALARM
    torch.testing.assert_close(log_q.double(), probs.gather(1, ids).log(), rtol=0, atol=1e-4)


@pytest.mark.parametrize("changed", [[0], [1, 2, 30], list(range(0, C, 2))], ids=["one", "few", "most"])
def test_refresh_with_changed_rows_equals_rebuild(changed, data):
    _, weight, _ = data
    sampler = QuadraticKernelSampler(**SMALL_TREE)
    sampler.refresh(weight)
    new = weight.clone()
    new[changed] += torch.randn(len(changed), D, generator=torch.Generator().manual_seed(4))
    sampler.refresh(new)
    rebuilt = QuadraticKernelSampler(**SMALL_TREE)
    rebuilt.refresh(new)
    torch.testing.assert_close(sampler._W, rebuilt._W, rtol=0, atol=0)
    for ours, theirs in zip(sampler._S, rebuilt._S, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(sampler._S_root, rebuilt._S_root, rtol=1e-6, atol=1e-6)


def test_distribution_is_that_of_the_last_refresh(data):
    hidden, weight, _ = data
    sampler = QuadraticKernelSampler(**SMALL_TREE)
    sampler.refresh(weight)
    moved = weight + 1.0
    ids = torch.arange(C).expand(4, C)
    before = sampler.log_prob(hidden, moved, ids)
    sampler.refresh(moved)
    torch.testing.assert_close(before.double(), kernel_probs(hidden, weight, ALPHA).log(), rtol=0, atol=1e-5)
    torch.testing.assert_close(sampler.log_prob(hidden, moved, ids).double(), kernel_probs(hidden, moved, ALPHA).log(), rtol=0, atol=1e-5)


def test_ignores_bias(data):
    hidden, weight, target = data
    sampler = QuadraticKernelSampler(**SMALL_TREE)
    ids = torch.arange(C).expand(4, C)
    torch.testing.assert_close(
        sampler.log_prob(hidden, weight, ids, exclude=target),
        sampler.log_prob(hidden, weight, ids, exclude=target, bias=torch.randn(C)),
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [({"alpha": 0.0}, "alpha must be > 0, got 0.0"), ({"alpha": -1}, "got -1"), ({"leaf_size": 0}, "leaf_size"),
     ({"branching": 1}, "branching")],
)
def test_bad_arguments_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        QuadraticKernelSampler(**kwargs)


def test_runs_on_device(data, device):
    hidden, weight, target = (x.to(device) for x in data)
    torch.manual_seed(0)
    ids, log_q = QuadraticKernelSampler(**SMALL_TREE).sample(hidden, weight, 2000, exclude=target)
    assert ids.device.type == device.type
    assert not bool((ids == target[:, None]).any())
    probs = kernel_probs(hidden.cpu(), weight.cpu(), ALPHA, target.cpu())
    torch.testing.assert_close(log_q.cpu().double(), probs.gather(1, ids.cpu()).log(), rtol=0, atol=1e-5)


@pytest.mark.slow
def test_default_tree_on_a_larger_vocabulary():
    """C = 3000 with the default leaf size and branching, 3 walked levels: chi-square per row."""
    g = torch.Generator().manual_seed(5)
    weight, hidden = torch.randn(3000, 16, generator=g) * 0.2, torch.randn(3, 16, generator=g)
    target = torch.tensor([0, 1500, 2999])
    sampler = QuadraticKernelSampler(top_nodes=2)
    torch.manual_seed(0)
    ids, _ = sampler.sample(hidden, weight, 100_000, exclude=target)
    assert chi_square_pvalue(ids, kernel_probs(hidden, weight, 100.0, target)) > P_FALSE_ALARM


def test_node_products_gathered_a_few_tiles_at_a_time_equal_per_tile_products(monkeypatch):
    """``_node_products`` in several gathers (two tiles each): each tile's rows times the first n rows of
    its node, read from a table whose rows hold more than n rows (as the walk's B − 1 of B children)."""
    from softmax_zoo.losses.methods import kernel_sampler

    g = torch.Generator().manual_seed(3)
    nodes, n, d, t, P = 6, 3, 4, 5, 7
    table = torch.randn(nodes, (n + 1) * d, generator=g)  # (nodes, (n + 1)·d): only the first n·d are read
    tile_node = torch.tensor([4, 0, 4, 5, 2])
    Hq = torch.randn(t, P, d, generator=g)
    monkeypatch.setattr(kernel_sampler, "_GATHER_BYTES", 2 * n * d * table.element_size())
    got = kernel_sampler._node_products(Hq, table, tile_node, n)
    expected = torch.einsum("tpd,tnd->tpn", Hq, table[tile_node, : n * d].view(t, n, d))
    torch.testing.assert_close(got, expected)


def test_draws_follow_q_tilde_with_one_tile_per_gather(monkeypatch, data):
    """The walk and the class step with every tile gathered and multiplied on its own still draw q̃."""
    from softmax_zoo.losses.methods import kernel_sampler

    monkeypatch.setattr(kernel_sampler, "_GATHER_BYTES", 1)
    check_draws_follow(QuadraticKernelSampler(**dict(SMALL_TREE, top_nodes=1)), kernel_probs, data, excluded=True)


def test_node_quads_gathered_a_few_tiles_at_a_time_equal_per_tile_quadratic_forms(monkeypatch):
    """``_node_quads`` in several gathers (two tiles each, the last one shorter): each tile's rows h
    against the first n symmetric matrices S of its node, hᵀ S h, read from a table holding n + 1."""
    from softmax_zoo.losses.methods import kernel_sampler

    g = torch.Generator().manual_seed(4)
    nodes, n, d, t, P = 6, 3, 4, 5, 7
    A = torch.randn(nodes, n + 1, d, d, generator=g)
    S = A + A.transpose(2, 3)  # symmetric, as node sums are
    table = S.reshape(nodes, (n + 1) * d * d)
    tile_node = torch.tensor([4, 0, 4, 5, 2])
    Hq = torch.randn(t, P, d, generator=g)
    monkeypatch.setattr(kernel_sampler, "_GATHER_BYTES", 2 * n * d * d * table.element_size())
    got = kernel_sampler._node_quads(Hq, table, tile_node, n)
    expected = torch.einsum("tpd,tnde,tpe->tpn", Hq, S[tile_node, :n], Hq)
    torch.testing.assert_close(got, expected)


def test_targets_under_the_drawn_nodes_and_elsewhere_in_one_tile(data):
    """Rows sharing top nodes, only some of whose targets lie under them, in the same tiles: each row
    draws its own q̃ (the target's mass is taken out for the rows whose target is under the node only)."""
    hidden, weight, _ = data
    hidden = hidden[[0, 0, 1, 1]]  # rows 0, 1 (and 2, 3) draw the same nodes and share tiles
    target = torch.tensor([3, 35, 20, 0])  # 3 and 20 hold most of the mass; 35 and 0 little
    check_draws_follow(QuadraticKernelSampler(**SMALL_TREE), kernel_probs, (hidden, weight, target), excluded=True)


@pytest.mark.parametrize("width", [3, 4, 8, 9, 64])
def test_pick_is_the_first_index_whose_cumulative_mass_reaches_the_threshold(width):
    """``_pick`` by counting (up to ``_COUNT_BELOW`` entries) and by binary search: the inverse CDF of the
    same uniforms, never an index of zero mass, also when a row has zero masses at both ends."""
    from softmax_zoo.losses.methods.kernel_sampler import _pick

    g = torch.Generator().manual_seed(5)
    mass = torch.rand(300, 7, width, generator=g).double()
    mass[..., 0] = 0
    mass[..., -1] = 0
    if width > 3:
        mass[::3, :, width // 2] = 0
    got = _pick(mass, torch.Generator().manual_seed(9))
    cum = mass.cumsum(-1)
    thr = (1 - torch.rand(300, 7, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(9))) * cum[..., -1:]
    expected = torch.searchsorted(cum, thr)[..., 0]
    assert torch.equal(got, expected)
    assert bool(mass.gather(-1, got[..., None]).gt(0).all())


@pytest.mark.parametrize("tree", TREES, ids=TREE_IDS)
def test_float64_default_dtype_builds_the_float32_tree_and_draws_q_tilde(tree, data):
    """Under ``torch.set_default_dtype(torch.float64)`` the tree is still float32 (its queries are),
    and the draws and log q are those of float64 weights and hidden rows, through the sampled head too."""
    from softmax_zoo.losses import SampledSoftmaxHead

    hidden, weight, target = (t.double() if t.is_floating_point() else t for t in data)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        sampler = QuadraticKernelSampler(**tree)
        check_draws_follow(sampler, kernel_probs, (hidden, weight, target), excluded=True)
        check_log_prob_closed_form(sampler, kernel_probs, (hidden, weight, target))
        head = SampledSoftmaxHead(D, C, sampler=QuadraticKernelSampler(**tree), num_samples=3)
        assert head.weight.dtype == torch.float64
        head(hidden, target).backward()
        assert head.weight.grad.dtype == torch.float64 and bool(head.weight.grad.isfinite().all())
    finally:
        torch.set_default_dtype(previous)
