"""The linear layer's backward for a logit gradient given by its nonzeros (``row_loss.SparseGrad``).

With z = h W^T + b and a logit gradient G (r, C) of m nonzeros a row, (index, values) (r, m)
(sparse-softmax: m = k + 1, the support Ω_k and the target; Sun et al. 2021, arXiv:2112.12433):

    ∂/∂h_i  = Σ_j values_ij · W[index_ij]                   a gather of m rows of W a row
    ∂/∂W_c += Σ_{(i, j): index_ij = c} values_ij · h_i       a scatter of m rows of h a row
    ∂/∂b_c += Σ_{(i, j): index_ij = c} values_ij

4·r·m·d multiply-adds in place of the two backward GEMMs' 4·r·C·d. The gather is one
``F.embedding_bag`` (bags of m rows of W, weighted by the values; no (r, m, d) temporary). The
scatter runs one column of the index at a time, so its temporaries are (r, d): ``index_add_``,
or, where deterministic algorithms are asked for (``torch.use_deterministic_algorithms``; on a GPU
``index_add_`` adds in the order its atomics happen to run), a sorted segment sum: the column's
pairs sorted by class, each class's rows summed in that order (``F.embedding_bag`` over the runs
of equal class), and each class's sum added once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .row_loss import SparseGrad


def sparse_linear_grads(g: SparseGrad, hidden: torch.Tensor, weight: torch.Tensor, gh: torch.Tensor, gw: torch.Tensor,
                        gb: torch.Tensor | None) -> None:
    """gh (r, d) = G W; gw (C, d) += G^T h; gb (C,) += Σ_rows G (when not None); in place.

    Args:
        g: index (r, m), values (r, m). hidden: (r, d), cast to gw's dtype (the compute dtype).
        weight: (C, d), gathered in its own dtype (the values cast to it), summed into gh's.
    """
    gh.copy_(F.embedding_bag(g.index, weight, per_sample_weights=g.values.to(weight.dtype), mode="sum"))
    src = hidden.to(gw.dtype)  # (r, d)
    values = g.values.to(gw.dtype)
    deterministic = torch.are_deterministic_algorithms_enabled()
    for j in range(g.index.shape[1]):
        index, v = g.index[:, j], values[:, j]  # (r,) each
        if deterministic:
            _segment_sum_(gw, gb, index, v, src)
            continue
        gw.index_add_(0, index, src * v.unsqueeze(1))
        if gb is not None:
            gb.index_add_(0, index, v)


def _segment_sum_(gw: torch.Tensor, gb: torch.Tensor | None, index: torch.Tensor, v: torch.Tensor,
                  src: torch.Tensor) -> None:
    """gw[c] += Σ_{i: index_i = c} v_i·src_i and gb[c] += Σ v_i, each class's sum in row order, added once."""
    order = index.argsort(stable=True)  # (r,) rows by class, rows of a class in their order
    by_class = index[order]
    first = torch.ones_like(by_class, dtype=torch.bool)
    first[1:] = by_class[1:] != by_class[:-1]
    starts = first.nonzero().squeeze(1)  # (U,) each class's first position in ``order``
    classes = by_class[starts]  # (U,) distinct
    if gb is not None:  # the bias's sum rides along as a column of ones
        src = torch.cat([src, src.new_ones(src.shape[0], 1)], dim=1)  # (r, d + 1)
    sums = F.embedding_bag(order, src, starts, mode="sum", per_sample_weights=v[order])  # (U, d [+ 1])
    d = gw.shape[1]
    gw.index_add_(0, classes, sums[:, :d])  # distinct classes: one add each, in no particular order
    if gb is not None:
        gb.index_add_(0, classes, sums[:, d])
