"""The linear layer's backward for a logit gradient given by its nonzeros (``row_loss.SparseGrad``).

With z = h W^T + b and a logit gradient G (r, C) of m nonzeros a row, (index, values) (r, m)
(sparse-softmax: m = k + 1, the support Ω_k and the target; Sun et al. 2021, arXiv:2112.12433):

    ∂/∂h_i  = Σ_j values_ij · W[index_ij]                   a gather of m rows of W a row
    ∂/∂W_c += Σ_{(i, j): index_ij = c} values_ij · h_i       a scatter of m rows of h a row
    ∂/∂b_c += Σ_{(i, j): index_ij = c} values_ij

4·r·m·d multiply-adds in place of the two backward GEMMs' 4·r·C·d. The gather writes the (r, m, d)
rows of W into the chunk's logits buffer (read by then) and multiplies them by the values, one
(1, m) @ (m, d) a row; where they do not fit, one ``F.embedding_bag`` (bags of m rows of W, weighted
by the values) makes ∂/∂h without them. The scatter runs a block of the index's columns at a time,
its temporary written into the same buffer, else at most ``SCATTER_ELEMENTS``: ``index_add_``, or,
where deterministic algorithms are asked for (``torch.use_deterministic_algorithms``; on a GPU
``index_add_`` adds in the order its atomics happen to run), a sorted segment sum: the block's
pairs sorted by class, each class's rows summed in that order (``F.embedding_bag`` over the runs
of equal class), and each class's sum added once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..machinery.row_loss import SparseGrad

# Elements of a scatter's temporary (a block's rows of h times their values) where no scratch buffer holds it: 4 MiB in
# float32, or one (r, d) where that is more; blocks of index columns within it keep the calls few at small r.
SCATTER_ELEMENTS = 1 << 20


def sparse_linear_grads(g: SparseGrad, hidden: torch.Tensor, weight: torch.Tensor, gh: torch.Tensor, gw: torch.Tensor,
                        gb: torch.Tensor | None, scratch: torch.Tensor | None = None) -> None:
    """gh (r, d) = G W; gw (C, d) += G^T h; gb (C,) += Σ_rows G (when not None); in place.

    Args:
        g: index (r, m), values (r, m). hidden: (r, d), cast to gw's dtype (the compute dtype).
        weight: (C, d), gathered in its own dtype (the values cast to it), summed into gh's.
        scratch: a buffer the caller gives up (the chunk's logits, read by then): the gathered rows of W and the
            scatter's temporaries are written into it where it is contiguous and of gw's dtype, so they take no
            memory of their own.
    """
    (r, m), d = g.index.shape, hidden.shape[1]
    deterministic = torch.are_deterministic_algorithms_enabled()  # the segment sums' (classes, d) are their own
    usable = scratch is not None and scratch.dtype == gw.dtype and scratch.is_contiguous() and not deterministic
    room = scratch.numel() if usable else 0
    if r * m * d <= room and weight.dtype == gh.dtype == scratch.dtype and gh.is_contiguous():
        rows = torch.index_select(weight, 0, g.index.reshape(-1), out=scratch.view(-1)[: r * m * d].view(r * m, d))
        torch.bmm(g.values.to(gh.dtype).unsqueeze(1), rows.view(r, m, d), out=gh.unsqueeze(1))  # (r, 1, m) @ (r, m, d)
    else:
        gh.copy_(F.embedding_bag(g.index, weight, per_sample_weights=g.values.to(weight.dtype), mode="sum"))
    src = hidden.to(gw.dtype)  # (r, d)
    values = g.values.to(gw.dtype)
    width = max(1, max(room, SCATTER_ELEMENTS) // max(1, r * d))  # index columns a block
    for j in range(0, m, width):
        index, v = g.index[:, j : j + width], values[:, j : j + width]  # (r, b) each
        if deterministic:
            _segment_sum_(gw, gb, index, v, src)
            continue
        size = index.numel() * d
        rows = scratch.view(-1)[:size].view(*index.shape, d) if size <= room else None  # (r, b, d)
        rows = torch.mul(v.unsqueeze(2), src.unsqueeze(1), out=rows)  # the pairs' rows of h, times their values
        gw.index_add_(0, index.reshape(-1), rows.view(-1, d))
        if gb is not None:
            gb.index_add_(0, index.reshape(-1), v.reshape(-1))


def _segment_sum_(gw: torch.Tensor, gb: torch.Tensor | None, index: torch.Tensor, v: torch.Tensor,
                  src: torch.Tensor) -> None:
    """gw[c] += Σ_{index_ij = c} v_ij·src_i and gb[c] += Σ v_ij (index, v (r, b)): each class's sum in the pairs'
    row-major order, then added once."""
    flat = index.reshape(-1)  # (r·b,), pair p of row p // b
    order = flat.argsort(stable=True)  # pairs by class, those of a class in their order
    by_class = flat[order]
    first = torch.ones_like(by_class, dtype=torch.bool)
    first[1:] = by_class[1:] != by_class[:-1]
    starts = first.nonzero().squeeze(1)  # (U,) each class's first position in ``order``
    classes = by_class[starts]  # (U,) distinct
    if gb is not None:  # the bias's sum rides along as a column of ones
        src = torch.cat([src, src.new_ones(src.shape[0], 1)], dim=1)  # (r, d + 1)
    rows = order // index.shape[1]
    sums = F.embedding_bag(rows, src, starts, mode="sum", per_sample_weights=v.reshape(-1)[order])  # (U, d [+ 1])
    d = gw.shape[1]
    gw.index_add_(0, classes, sums[:, :d])  # distinct classes: one add each, in no particular order
    if gb is not None:
        gb.index_add_(0, classes, sums[:, d])
