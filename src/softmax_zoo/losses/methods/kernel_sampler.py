"""Quadratic-kernel sampler drawn from a divide-and-conquer tree (Blanc & Rendle 2018).

The kernel-based sampling distribution of "Adaptive Sampled Softmax with Kernel Based Sampling"
(ICML 2018), with its quadratic kernel::

    q_j ∝ K(h, w_j) = α·(h·w_j)² + 1,        Z(h) = Σ_j K(h, w_j) = α·hᵀ(Σ_j w_j w_jᵀ)h + C

is drawn without touching the C classes: the classes (in id order) are cut into leaves of
``leaf_size`` consecutive ids, and the leaves into a ``branching``-ary tree. Every node stores the
sum of w wᵀ (d × d) and the count of its classes, so that its mass for a query h,
α·hᵀ(Σ w wᵀ)h + count, is the sum of its classes' kernel values (the paper's divide-and-conquer
sampler). A draw picks a node of the top level in proportion to its mass, walks down choosing a
child in proportion to its mass, and ends at a leaf where the classes' own kernel values decide:
O(d² log C) per draw.

How it is made fast (N rows × m draws, all vectorised, no Python loop per draw or per node):

* **Top levels, dense.** The levels above the first one with at most ``top_nodes`` nodes are not
  walked: the masses of all K nodes of that level for all rows are one GEMM, (N, d²) h⊗h against
  (d², K) node sums, and the m first choices per row are one inverse-CDF draw. This costs K·d² per
  row against m·(B − 1)·d² per row for each walked level, but a large GEMM runs several times
  faster per multiply-add than the gathers and small batched GEMMs of a walk, so evaluating up to ~1000 nodes
  densely (``top_nodes=1024``, for m = 64) is cheaper than walking the two levels it replaces
  (measured times: the sampler rows of results/bench_losses_cpu.md). At C = 500,000 and leaves of
  64 the tree is 7,936 → 1,984 → 496 nodes: 496 dense, one level walked, then the class step under
  a level-1 node (below); at C = 50,000 the 782 leaves are dense. The steps below the dense level
  run small batched GEMMs at a lower rate than the dense GEMM, and with N·m ≥ the number of nodes
  every level they touch is read whole (~160 MB per call at C = 500,000 against ~26 MB at C = 50,000).
  The dense level's node count is rounded up to a multiple of ``_ALIGN`` (zero padding, as below) where
  that stays within ``top_nodes``: the GEMM's output columns then fill whole SIMD registers, where an odd
  count (489 at C = 500,000) leaves a slow remainder on every row.
* **Walked levels, tiled.** Below, draws are sorted by their current node and packed into tiles
  that share a node (a node's c draws into ⌈c / ``max_tile``⌉ tiles of nearly equal size; tiles
  of similar size batched together, see ``_tiles``), and the children's d × d sums are read once
  per tile instead of once per draw, which would make the walk memory-bound: a few tiles' node
  sums are gathered at a time and multiplied while still in cache, and S h is dotted with h before
  it leaves the cache (``_gathered``, ``_node_quads``). Only the first B − 1 children are
  multiplied: the node sums add up, so the last child's hᵀSh is the parent's (known from the level
  above) minus its siblings', clamped at 0, and a node without classes keeps mass 0 through its
  count. A level costs (B − 1)·d² per draw:
  3·d² per factor 4 in C for B = 4, against 2·d² for B = 2 at twice the levels (and sorts).
* **Leaves of 64 classes, reached from level 1.** A leaf's kernel values cost leaf_size·d per
  draw, a node's mass d²; with leaf_size ≈ d the tree has 64× fewer d × d sums to store and
  refresh (128 MB at C = 500,000) than one with one class per leaf. The walk stops at level 1:
  there the kernel values of the node's B·L classes (batched GEMMs, as above) pick the
  leaf by their sums α·Σ(h·w)² + count, then the class among the chosen leaf's L: B·L·d per draw,
  the multiply-adds of walking to a leaf and evaluating it, without reading the leaves' d × d sums
  and with B× more draws per tile. The leaves' sums serve when they are the dense level, and to
  build level 1.

Exclusion of the target (``exclude``) is exact: along the target's path, node masses are taken
without the target's own kernel value (hᵀSh − (h·w_t)² and count − 1; under a level-1 node the
target's h·w set to 0 before the leaf sums), and in the leaf its kernel is set to 0, so the draw is
from q̃ = q without the target renormalised, and the returned log q̃ uses Z − K(h, w_t). Below the
dense level only the draws whose target lies under their current node are adjusted (found by the
target's ancestor at that level; a padding slot's target is −1, under no node).

Bias: the paper's kernel is on h·w only; an output bias, if the head has one, is ignored by this
sampler (q still is a valid proposal, and the sampled softmax corrects with the q actually used).

The distribution is that of the weight at the last :meth:`refresh` (the head refreshes whenever
its weight changed, once per training step); ``sample`` and ``log_prob`` build the tree on first
use, or when the weight's shape changes. Node sums are kept in float32; the normaliser Z in
float64. Every public method runs outside autocast (``samplers.outside_autocast``) on float32
copies of its inputs: under autocast the tree's GEMMs would round to bfloat16, and log q would
drift from the kernel it draws from.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ..machinery import memory
from ..methods.samplers import Sampler, outside_autocast

_CHUNK = 8192  # draw slots per batched GEMM (e.g. 256 tiles of 32): bounds the GEMM's memory without a loop of tiny GEMMs
_CHUNK_TILES = 512  # tiles per batched GEMM: bounds the gathered node parameters (512 × B·L·d floats: 32 MB at d = 64)
_COUNT_BELOW = 8  # _pick among at most this many: a comparison per entry beats a binary search per row
_ALIGN = 16  # the dense level's node count is a multiple of this where it fits top_nodes: 16 float32 per AVX-512 register
_GATHER_BYTES = 1 << 20  # node parameters gathered per GEMM call: small enough to be read back from cache (see _gathered)


def _pick(mass: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Index along the last dim, drawn in proportion to the non-negative ``mass`` (..., B)."""
    cum = mass.cumsum(-1)
    thr = (1 - torch.rand(*mass.shape[:-1], 1, dtype=cum.dtype, device=mass.device, generator=generator)) * cum[..., -1:]  # (0, 1]·total
    if mass.shape[-1] <= _COUNT_BELOW:  # the first index with cum >= thr is the number of cum < thr (cum is non-decreasing)
        return (cum < thr).sum(-1).clamp_(max=mass.shape[-1] - 1)
    return torch.searchsorted(cum, thr)[..., 0].clamp_(max=mass.shape[-1] - 1)  # first index with cum >= thr


def _gather(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``table[index]`` by ``index_select`` (several times faster than advanced indexing on CPU)."""
    return table.index_select(0, index.reshape(-1)).view(*index.shape, *table.shape[1:])


def _gathered(table: torch.Tensor, tile_node: torch.Tensor, width: int):
    """(first tile, end tile, rows) for a few tiles at a time: ``rows`` (b − a, ``width``) the first
    ``width`` columns of the tiles' nodes in ``table`` (nodes, ≥ width), about ``_GATHER_BYTES`` each.

    Gathered a few tiles at a time and multiplied at once, the rows are read from cache by the GEMM;
    gathering a whole chunk's first (tens of MB at large C) makes the GEMM read them back from memory.
    """
    step = max(1, _GATHER_BYTES // (width * table.element_size()))
    for a in range(0, tile_node.numel(), step):
        yield a, min(a + step, tile_node.numel()), table.index_select(0, tile_node[a : a + step])[:, :width]


def _node_products(Hq: torch.Tensor, table: torch.Tensor, tile_node: torch.Tensor, n: int) -> torch.Tensor:
    """(t, P, n) products of each tile's rows ``Hq`` (t, P, d) with the n rows of its node: ``table``
    (nodes, ≥ n·d) holds a node's rows (n, d) in its first n·d columns, ``tile_node`` (t,) the nodes."""
    t, P, d = Hq.shape
    out = Hq.new_empty(t, P, n)
    for a, b, rows in _gathered(table, tile_node, n * d):
        torch.bmm(Hq[a:b], rows.view(-1, n, d).transpose(1, 2), out=out[a:b])
    return out


def _node_quads(Hq: torch.Tensor, table: torch.Tensor, tile_node: torch.Tensor, n: int) -> torch.Tensor:
    """(t, P, n) quadratic forms hᵀ S h of each tile's rows ``Hq`` (t, P, d) with the n symmetric d × d
    matrices of its node: ``table`` (nodes, ≥ n·d²) holds them in its first n·d² columns.

    S h is computed a few tiles at a time (see :func:`_gathered`) into one small buffer and dotted
    with h while still in cache.
    """
    t, P, d = Hq.shape
    out = Hq.new_empty(t, P, n)
    v = None
    for a, b, rows in _gathered(table, tile_node, n * d * d):
        if v is None:
            v = Hq.new_empty(b - a, P, n * d)
        va = v[: b - a]
        torch.bmm(Hq[a:b], rows.view(-1, n * d, d).transpose(1, 2), out=va)  # (b − a, P, n·d): S h (S symmetric)
        torch.bmm(va.view(-1, n, d), Hq[a:b].reshape(-1, d, 1), out=out[a:b].view(-1, n, 1))
    return out


def _per_draw(values: torch.Tensor, slots: torch.Tensor, num_draws: int) -> torch.Tensor:
    """Per-draw (M,) tensor from per-slot ``values`` (S,); the padding slots (id M) are dropped."""
    out = values.new_zeros(num_draws + 1)
    out[slots] = values
    return out[:num_draws]


def outer_rows(budget: int, d: int) -> int:
    """Rows whose h⊗h (rows, d²) fit a chunk budget of ``budget`` values (``memory.chunk_logits``), at least 1."""
    return max(1, budget // (d * d))


class _Tiles(NamedTuple):
    """Draws packed by node for the batched GEMMs of a walked level (see :func:`_tiles`).

    ``node`` (T,): the node of each tile; ``slots`` (S,): the draw ids of all tiles, tile after
    tile, each tile padded with M to the width of its chunk; ``chunks``: (first tile, end tile,
    width, first slot, end slot) of each chunk, whose tiles form one (end − first, width) block.
    """

    node: torch.Tensor
    slots: torch.Tensor
    chunks: list[tuple[int, int, int, int, int]]

    def blocks(self):
        """Per chunk: the tiles' nodes (t,) and the draw ids of their slots (t, width), padding → M."""
        for a, b, width, s0, s1 in self.chunks:
            yield self.node[a:b], self.slots[s0:s1].view(b - a, width)


def _tiles(node: torch.Tensor, max_tile: int, chunk: int = _CHUNK, chunk_tiles: int = _CHUNK_TILES) -> _Tiles:
    """Pack the draws at each ``node`` (M,) into tiles that share the node's parameters.

    A node's c draws are cut into ⌈c / max_tile⌉ tiles of nearly equal size; tiles are sorted by
    size and cut into chunks of about ``chunk`` slots and at most ``chunk_tiles`` tiles, each chunk
    padded to its largest tile.
    Tiles of one width per chunk keep the padding (wasted multiply-adds) to a few percent, where
    one width for all tiles wastes up to half of them when the number of draws per node varies
    (Poisson-like counts around a mean that is not a power of two).
    """
    M, dev = node.numel(), node.device
    sorted_node, order = torch.sort(node.int())  # any order within a node will do; node ids fit int32, which sorts faster
    uniq, counts = torch.unique_consecutive(sorted_node.long(), return_counts=True)
    pieces = (counts + max_tile - 1) // max_tile  # (U,) tiles per node
    first = pieces.cumsum(0) - pieces  # (U,) first tile of each node
    group = torch.repeat_interleave(torch.arange(uniq.numel(), device=dev), counts)  # (M,) node of each sorted draw
    rank = torch.arange(M, device=dev) - (counts.cumsum(0) - counts)[group]  # rank within its node
    if int(pieces.max()) == 1:  # one tile per node (no node holds more than max_tile draws)
        tile_of, pos = group, rank
    else:
        node_pieces = pieces[group]
        tile_of = first[group] + rank % node_pieces  # (M,) draws dealt round-robin to the node's tiles
        pos = rank // node_pieces  # (M,) place within the tile
    size = torch.bincount(tile_of, minlength=int(pieces.sum()))  # (T,)
    size, by_size = torch.sort(size, descending=True, stable=True)
    chunks, a, s0, sizes = [], 0, 0, size.tolist()
    while a < len(sizes):
        width = sizes[a]
        b = min(len(sizes), a + max(1, min(chunk // width, chunk_tiles)))
        chunks.append((a, b, width, s0, s0 + (b - a) * width))
        a, s0 = b, s0 + (b - a) * width
    width_of = torch.repeat_interleave(torch.tensor([c[2] for c in chunks], device=dev),
                                       torch.tensor([c[1] - c[0] for c in chunks], device=dev))  # (T,) in sorted order
    start = torch.empty_like(by_size)
    start[by_size] = width_of.cumsum(0) - width_of  # (T,) first slot of each tile
    slots = torch.full((s0,), M, dtype=torch.long, device=dev)
    slots[start[tile_of] + pos] = order
    tile_node = torch.repeat_interleave(uniq, pieces)[by_size]
    return _Tiles(tile_node, slots, chunks)


class QuadraticKernelSampler(Sampler):
    """Sampler from q_j ∝ α(h·w_j)² + 1 through a divide-and-conquer tree (see module docstring).

    Args:
        alpha: α > 0 of the quadratic kernel (100 in the paper).
        leaf_size: classes per leaf (default 64 ≈ d of the benchmark; see module docstring).
        branching: children per tree node.
        top_nodes: the first level (from the leaves up) with at most this many nodes is drawn
            densely by one GEMM; the levels above it are not stored.
        max_tile: the most draws sharing one node's parameters in a batched GEMM (see ``_tiles``).
    """

    extra_dims = 0  # columns the tree's rows add to the weight's d (:meth:`_tree_rows`)

    def __init__(
        self,
        alpha: float = 100.0,
        leaf_size: int = 64,
        *,
        branching: int = 4,
        top_nodes: int = 1024,
        max_tile: int = 256,
    ) -> None:
        if not alpha > 0:
            raise ValueError(f"alpha must be > 0, got {alpha}")
        for name, value, low in (("leaf_size", leaf_size, 1), ("branching", branching, 2),
                                 ("top_nodes", top_nodes, 1), ("max_tile", max_tile, 1)):
            if value < low:
                raise ValueError(f"{name} must be >= {low}, got {value}")
        self.alpha, self.leaf_size, self.branching = float(alpha), leaf_size, branching
        self.top_nodes, self.max_tile = top_nodes, max_tile
        self.num_classes = None  # taken from the weight
        self._W: torch.Tensor | None = None

    # -- the tree ----------------------------------------------------------------------------------
    @outside_autocast
    def refresh(self, weight: torch.Tensor) -> None:
        """Rebuild the node sums from ``weight`` (C, d), or update only the leaves whose rows changed.

        When fewer than half of the leaves hold a changed row, only those leaves and their
        ancestors are recomputed (the result equals a rebuild); otherwise all sums are recomputed,
        in place (no new allocation: at C = 500,000 the tree is ~170 MB).
        """
        self._weight_shape = tuple(weight.shape)
        W = self._tree_rows(weight)
        C, d = W.shape
        if self._W is None or self._shape != (C, d) or self._W.device != W.device:
            return self._build(W)
        flat = self._W.view(-1, d)
        changed = (flat[:C] != W).any(1).nonzero()[:, 0]
        leaves = torch.unique(changed // self.leaf_size)
        if leaves.numel() == 0:
            return
        if 2 * leaves.numel() > self._W.shape[0]:
            flat[:C] = W
            return self._sum_all()
        flat[changed] = W[changed]
        nodes = leaves
        Wl = self._W[nodes]  # (k, L, d)
        self._S[0][nodes] = torch.bmm(Wl.transpose(1, 2), Wl)  # Σ w wᵀ over each leaf
        for k in range(1, len(self._S)):
            nodes = torch.unique(nodes // self.branching)
            self._S[k][nodes] = self._S[k - 1].view(-1, self.branching, d, d)[nodes].sum(1)
        self._S_root = self._S[-1].double().sum(0)

    def level_sizes(self, num_classes: int) -> list[int]:
        """Nodes per stored level, leaves first: level k has B× the nodes of level k+1 (zero padding), the
        top (dense) level rounded up to a multiple of ``_ALIGN`` where that stays within ``top_nodes``."""
        sizes = [math.ceil(num_classes / self.leaf_size)]
        while sizes[-1] > self.top_nodes:
            sizes.append(math.ceil(sizes[-1] / self.branching))
        aligned = -(-sizes[-1] // _ALIGN) * _ALIGN
        top = aligned if aligned <= self.top_nodes else sizes[-1]
        return [top * self.branching ** (len(sizes) - 1 - k) for k in range(len(sizes))]

    def tree_bytes(self, num_classes: int, dim: int) -> int:
        """Bytes of the tree for C classes of dimension d: the float32 node sums (d × d each) and rows."""
        padded = self.level_sizes(num_classes)
        return 4 * (sum(padded) * dim * dim + padded[0] * self.leaf_size * (dim + 1))

    def step_buffers(self, rows: int, num_samples: int, num_classes: int, dim: int, free: int | None = None) -> dict[str, int]:
        """The tree (:meth:`tree_bytes`), one chunk of the top level's h⊗h (:func:`outer_rows`) and the
        (rows, K) masses of the K top nodes (float32 quadratic forms, float64 masses and their cumsum)."""
        d = dim + self.extra_dims
        chunk = min(rows, outer_rows(memory.budget_logits(free), d))
        top = self.level_sizes(num_classes)[-1]
        return {
            f"the kernel tree for C={num_classes:,}, d={d:,}": self.tree_bytes(num_classes, d),
            f"h⊗h of ({chunk:,}, {d:,}²) per call": 4 * chunk * d * d,
            f"({rows:,}, {top:,}) top-level masses": (4 + 8 + 8) * rows * top,
        }

    def _build(self, W: torch.Tensor) -> None:
        """Allocate the tree for ``W`` (C, d) and compute its sums (refused if it cannot fit the device)."""
        C, d = W.shape
        L, B = self.leaf_size, self.branching
        padded = self.level_sizes(C)
        memory.check_fits(
            self.tree_bytes(C, d), W.device, f"the quadratic-kernel tree for C={C:,}, d={d:,} "
            f"({sum(padded):,} node sums of d × d float32)", hint="; its size grows like C·d²/leaf_size",
        )
        self._shape = (C, d)
        self._W = torch.zeros(padded[0] * L, d, dtype=torch.float32, device=W.device)
        self._W[:C] = W
        self._W = self._W.view(padded[0], L, d)  # (leaves, L, d), classes in id order
        self._cls_cnt = torch.zeros(padded[0] * L, dtype=torch.float32, device=W.device)
        self._cls_cnt[:C] = 1.0  # 0 for the padding classes: nodes count their real classes only
        self._cls_cnt = self._cls_cnt.view(padded[0], L)
        self._cnt = [self._cls_cnt.sum(1)]  # (nodes,) classes per node, per level
        for _ in padded[1:]:
            self._cnt.append(self._cnt[-1].view(-1, B).sum(1))
        self._S = [torch.empty(n, d, d, dtype=torch.float32, device=W.device) for n in padded]  # (nodes, d, d) per level
        self._sum_all()

    def _sum_all(self) -> None:
        """Recompute every node sum from ``self._W``, into the existing buffers."""
        d = self._W.shape[2]
        torch.bmm(self._W.transpose(1, 2), self._W, out=self._S[0])  # Σ w wᵀ over each leaf
        for k in range(1, len(self._S)):
            torch.sum(self._S[k - 1].view(-1, self.branching, d, d), dim=1, out=self._S[k])
        self._S_root = self._S[-1].double().sum(0)  # (d, d)

    def _ensure(self, weight: torch.Tensor) -> None:
        if self._W is None or self._weight_shape != tuple(weight.shape):
            self.refresh(weight)

    def _tree_rows(self, weight: torch.Tensor) -> torch.Tensor:
        """(C, d') the rows the tree is built on: the output rows w_j themselves (float32)."""
        return weight.detach().float()

    def _query(self, hidden: torch.Tensor) -> torch.Tensor:
        """(N, d') the query matching :meth:`_tree_rows`: the hidden rows themselves (float32)."""
        return hidden.detach().float()

    # -- sampling ----------------------------------------------------------------------------------
    def _log_z(self, h: torch.Tensor, q_t: torch.Tensor | None) -> torch.Tensor:
        """(N,) float64 log of Z(h) = α hᵀ S h + C, or of Z − K(h, w_t) with ``q_t`` = (h·w_t)²."""
        hd = h.double()
        quad = ((hd @ self._S_root) * hd).sum(1)
        count = float(self._shape[0])
        if q_t is not None:
            quad, count = (quad - q_t.double()).clamp_(min=0), count - 1
        return torch.log(self.alpha * quad + count)

    @torch.no_grad()
    @outside_autocast
    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        self._ensure(weight)
        d = self._shape[1]
        self.check_num_samples(num_samples)
        h = self._query(hidden)
        if h.shape[0] == 0:
            return torch.zeros(0, num_samples, dtype=torch.long, device=h.device), h.new_zeros(0, num_samples, dtype=torch.float32)
        N, m, L, B = h.shape[0], num_samples, self.leaf_size, self.branching
        top = len(self._S) - 1
        flat_W = self._W.view(-1, d)
        q_t = None if exclude is None else ((h * flat_W[exclude]).sum(1)) ** 2  # (N,) (h·w_t)²

        # Dense top level: hᵀ S h of all K nodes for all rows, one GEMM per chunk of rows whose h⊗h
        # fits the device's chunk budget; m draws per row.
        K = self._S[top].shape[0]
        rows = outer_rows(memory.chunk_logits(h.device), d)
        quad = torch.cat([
            (hc[:, :, None] * hc[:, None, :]).reshape(-1, d * d) @ self._S[top].view(K, d * d).T
            for hc in h.split(rows)
        ])  # (N, K)
        cnt = self._cnt[top].expand(N, K)
        if exclude is not None:  # the target's top node without the target
            anc = ((exclude // L) // B**top)[:, None]  # (N, 1)
            quad.scatter_(1, anc, (quad.gather(1, anc) - q_t[:, None]).clamp_(min=0))
            cnt = cnt.scatter(1, anc, cnt.gather(1, anc) - 1)
        cum = self._mass(quad, cnt).double().cumsum(1)  # (N, K) float64
        thr = (1 - torch.rand(N, m, dtype=cum.dtype, device=h.device, generator=self.generator)) * cum[:, -1:]  # (0, 1]·total
        node = torch.searchsorted(cum, thr).clamp_(max=K - 1)  # (N, m) first cum >= thr
        node_quad = quad.gather(1, node).reshape(N * m)  # (N·m,) hᵀ S h of each draw's node
        node = node.reshape(N * m)

        h_pad = torch.cat([h, h.new_zeros(1, d)])  # row N: zeros, for the padding slots
        row_pad = torch.cat([torch.arange(N, device=h.device).repeat_interleave(m), node.new_tensor([N])])  # (N·m + 1,)
        t_pad = None if exclude is None else torch.cat([exclude, exclude.new_tensor([-1])]).int()  # (N + 1,) int32: cheaper floor divisions
        qt_pad = None if exclude is None else torch.cat([q_t, q_t.new_zeros(1)])

        # Walk down to level 1, draws tiled by node, tiles in chunks.
        for k in range(top - 1, 0, -1):
            tiles = _tiles(node, self.max_tile)
            quad_pad = torch.cat([node_quad, node_quad.new_zeros(1)])
            parts = [self._children(k, tile_node, _gather(row_pad, slots), _gather(quad_pad, slots), h_pad, t_pad, qt_pad)
                     for tile_node, slots in tiles.blocks()]
            node = node * B + _per_draw(torch.cat([p[0].reshape(-1) for p in parts]), tiles.slots, N * m)
            node_quad = _per_draw(torch.cat([p[1].reshape(-1) for p in parts]), tiles.slots, N * m)

        # The classes under the node (a leaf, or the B leaves of a level-1 node): their own kernel values decide.
        tiles = _tiles(node, self.max_tile)
        level = min(top, 1)
        parts = [self._classes(level, tile_node, _gather(row_pad, slots), h_pad, t_pad) for tile_node, slots in tiles.blocks()]
        ids = _per_draw(torch.cat([p[0].reshape(-1) for p in parts]), tiles.slots, N * m).view(N, m)
        k_s = _per_draw(torch.cat([p[1].reshape(-1) for p in parts]), tiles.slots, N * m).view(N, m)  # K(h, w_s)
        log_q = k_s.double().log() - self._log_z(h, q_t)[:, None]
        return ids, log_q.float()

    def _mass(self, quad: torch.Tensor, cnt: torch.Tensor) -> torch.Tensor:
        """Node masses α·hᵀ S h + count from ``quad`` and ``cnt`` (broadcast), 0 for a node without classes."""
        return (self.alpha * quad + cnt) * (cnt > 0)

    def _children(self, k, tile_node, rows, parent_quad, h_pad, t_pad, qt_pad) -> tuple[torch.Tensor, torch.Tensor]:
        """Child index (t, P) drawn for each draw of the tiles at nodes ``tile_node`` (t,) of level k+1,
        and the child's hᵀ S h (t, P), given the parent's ``parent_quad`` (t, P).

        Only the first B − 1 children's sums are read: the last child's hᵀ S h is the parent's
        minus theirs (the node sums add up), so a level costs (B − 1)·d² per draw.
        """
        B, d, L = self.branching, h_pad.shape[1], self.leaf_size
        Hq = _gather(h_pad, rows)  # (t, P, d)
        quad = _node_quads(Hq, self._S[k].view(-1, B * d * d), tile_node, B - 1)  # (t, P, B−1): hᵀ S_b h
        cnt = self._cnt[k].view(-1, B)[tile_node][:, None, :]  # (t, 1, B)
        if t_pad is not None:  # the draws whose target is under this node (padding slots: target -1, under no node)
            t = _gather(t_pad, rows)  # (t, P)
            i, p = (t // (L * B ** (k + 1)) == tile_node[:, None]).nonzero(as_tuple=True)
            b = (t[i, p] // (L * B**k)) % B  # the target's child
            own = b < B - 1  # the last child's quad comes from the parent's
            quad[i[own], p[own], b[own]] = (quad[i[own], p[own], b[own]] - qt_pad[rows[i[own], p[own]]]).clamp_(min=0)
        last = (parent_quad - quad.sum(2)).clamp_(min=0)  # (t, P): hᵀ S_{B−1} h
        quad = torch.cat([quad, last[..., None]], 2)  # (t, P, B)
        mass = self._mass(quad, cnt)  # (t, P, B)
        if t_pad is not None:  # the target's child without the target
            mass[i, p, b] = self._mass(quad[i, p, b], cnt[i, 0, b] - 1)
        child = _pick(mass, self.generator)
        return child, quad.gather(2, child[..., None])[..., 0]

    def _classes(self, level, tile_node, rows, h_pad, t_pad) -> tuple[torch.Tensor, torch.Tensor]:
        """Class ids (t, P) drawn among the classes under the nodes ``tile_node`` (t,) of ``level``
        (0: a leaf's L classes; 1: the B·L classes of its B leaves), and their kernel values.

        Under a level-1 node a draw first picks a leaf in proportion to the sum of its classes'
        kernel values, α·Σ(h·w)² + count, then a class of that leaf: the same distribution as one
        pick among all B·L, with the kernel values of the chosen leaf only.
        """
        L, B, span = self.leaf_size, self.branching, self.leaf_size * self.branching**level
        Hq = _gather(h_pad, rows)  # (t, P, d)
        logit = _node_products(Hq, self._W.view(-1, span * Hq.shape[2]), tile_node, span)  # (t, P, span): h·w
        if t_pad is not None:  # draws whose target is under the node (padding slots: target -1, under no node)
            t = _gather(t_pad, rows)  # (t, P)
            i, p = (t // span == tile_node[:, None]).nonzero(as_tuple=True)
            t_at = t[i, p] - tile_node[i] * span  # the target's place under the node
            logit[i, p, t_at] = 0.0  # the target's (h·w)² taken out
        if level == 1:
            quad = torch.linalg.vector_norm(logit.view(*rows.shape, B, L), dim=3).square_()  # (t, P, B): Σ (h·w)² per leaf
            cnt = self._cnt[0].view(-1, B)[tile_node][:, None, :]  # (t, 1, B)
            mass = self._mass(quad, cnt)  # (t, P, B)
            if t_pad is not None:  # the target's leaf without the target
                b = t_at // L
                mass[i, p, b] = self._mass(quad[i, p, b], cnt[i, 0, b] - 1)
            child = _pick(mass, self.generator)  # (t, P)
            slot_child = torch.arange(rows.numel(), device=rows.device) * B + child.reshape(-1)
            logit = logit.view(-1, L).index_select(0, slot_child).view(*rows.shape, L)  # (t, P, L): the chosen leaf's
            leaf = tile_node[:, None] * B + child  # (t, P) the draw's leaf
        else:
            leaf = tile_node[:, None].expand(rows.shape)
        kern = torch.addcmul(logit.new_ones(()), logit, logit, value=self.alpha)  # (t, P, L): α(h·w)² + 1
        last = (self._shape[0] - 1) // L  # the last leaf holding classes: its places from `real` on are padding
        real = self._shape[0] - last * L
        if real < L:  # padding classes get kernel 0 (the leaves after `last` have mass 0 and are never reached)
            tl = (tile_node == last // B**level).nonzero()[:, 0]  # the tiles at the node holding that leaf
            i_last, p_last = (leaf[tl] == last).nonzero(as_tuple=True)
            kern[tl[i_last], p_last, real:] = 0.0
        if t_pad is not None:  # the target's kernel value set to 0
            hit = leaf[i, p] == t[i, p] // L
            kern[i[hit], p[hit], t[i[hit], p[hit]] % L] = 0.0
        j = _pick(kern, self.generator)  # (t, P)
        return leaf * L + j, kern.gather(2, j[..., None])[..., 0]

    @torch.no_grad()
    @outside_autocast
    def log_prob(self, hidden, weight, ids, exclude=None, bias=None):
        self._ensure(weight)
        h = self._query(hidden)
        flat_W = self._W.view(-1, self._shape[1])
        kern = self.alpha * torch.einsum("nd,nkd->nk", h.double(), flat_W[ids].double()) ** 2 + 1
        q_t = None if exclude is None else ((h * flat_W[exclude]).sum(1)) ** 2
        log_q = kern.log() - self._log_z(h, q_t)[:, None]
        if exclude is not None:
            log_q = log_q.masked_fill(ids == exclude[:, None], -math.inf)
        return log_q.float()
