"""Inference of a linear head over blocks of classes: never the (N, C) logits, only (N, c).

With z = h W^T + b, the classes are walked in blocks B of at most c columns, and only
z_B = h W_B^T + b_B (N, c) exists at a time. Two streaming reductions are merged per block:

    logsumexp:  L ← logaddexp(L, logsumexp_{j∈B} z_j)       (log of a sum split in parts)
    top-k:      T ← the k largest of T ∪ top-k(z_B)           (values and class ids)

which give ``predict`` (top-1), log-probabilities of chosen classes (z_c − L) and the k most
probable classes (z_T − L; for sparse-softmax, Sun et al. 2021, z_T − logsumexp of its top-k).

Ties: among equal values the lowest class id is kept at every merge, so the result does not
depend on the block size. :func:`topk_lowest_index` is the same rule on a whole matrix; the heads'
plain paths use it too, so both paths agree on ties (``torch.topk`` leaves the choice among tied
values unspecified; ``torch.argmax`` takes the first, as here). A tie means equal computed
logits: a block's matmul may round a logit an ulp away from the full matmul's, so classes whose
logits are equal only in exact arithmetic (e.g. duplicate weight rows) may fall either way.

NaN: rows holding a NaN logit are flagged (the caller gives them NaN log-probabilities and
``ignore_index`` as prediction, ``_core``'s rule); meanwhile the selection reads NaN as −inf.

Block size: :func:`class_block_size` keeps a block at ``chunk_size`` × C logits, the bound a
chunked head keeps in training, so N <= chunk_size rows take all classes in one block.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..machinery._core import CHUNK_LOGITS, compute_dtype

# Logits per block for chunk_size="auto": the budget of training's chunks (``_core.CHUNK_LOGITS``).
AUTO_BLOCK_LOGITS = CHUNK_LOGITS


def class_block_size(num_rows: int, num_classes: int, chunk_size) -> int:
    """Classes per block: at most ``chunk_size`` × C logits (2^24 for "auto"), at least 1, at most C."""
    budget = AUTO_BLOCK_LOGITS if chunk_size == "auto" else chunk_size * num_classes
    return max(1, min(num_classes, budget // max(1, num_rows)))


def _select(values: torch.Tensor, k: int) -> torch.Tensor:
    """Columns (N, k) of the k largest ``values`` (N, m) of each row, ascending; among ties the
    leftmost. ``values`` hold no NaN."""
    n, m = values.shape
    if m <= k:
        return torch.arange(m, device=values.device).expand(n, m)
    kth = values.topk(k, dim=1).values[:, -1:]  # (N, 1) the k-th largest
    greater = values > kth  # fewer than k per row
    tied = values == kth
    room = k - greater.sum(dim=1, keepdim=True)  # (N, 1) tied entries still to take
    take = greater | (tied & (tied.cumsum(dim=1) <= room))  # exactly k per row
    return take.nonzero()[:, 1].view(n, k)


class StreamingTopK:
    """The k largest values seen so far in each row and their class ids, block after block.

    Blocks must come in increasing class order; the kept ids then stay ascending, which is what
    makes "leftmost among ties" mean "lowest class id" at every merge.
    """

    def __init__(self, k: int) -> None:
        self.k = k
        self.values: torch.Tensor | None = None  # (N, <=k)
        self.index: torch.Tensor | None = None  # (N, <=k) ascending class ids

    def update(self, z: torch.Tensor, start: int) -> None:
        """Merge block ``z`` (N, c), classes start..start+c-1, without NaN."""
        cols = _select(z, self.k)
        values, index = z.gather(1, cols), cols + start
        if self.values is not None:
            values, index = torch.cat([self.values, values], 1), torch.cat([self.index, index], 1)
            cols = _select(values, self.k)
            values, index = values.gather(1, cols), index.gather(1, cols)
        self.values, self.index = values, index

    def result(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(values (N, k), class ids (N, k)), largest first, ties by lowest id."""
        order = self.values.sort(dim=1, descending=True, stable=True).indices
        return self.values.gather(1, order), self.index.gather(1, order)


def topk_lowest_index(values: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """values (N, C) -> the k largest of each row (N, k) and their columns, ties by lowest column.

    NaN is read as −inf for the selection (callers mark NaN rows themselves).
    """
    top = StreamingTopK(k)
    top.update(values.masked_fill(values.isnan(), float("-inf")), 0)
    return top.result()


def logit_blocks(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, block: int):
    """Yield (start, z (N, c)) for c <= ``block`` consecutive classes, in the compute dtype.

    Each block is ``F.linear`` on a slice of the weight (a view), as the head's ``logits`` would
    compute those columns (under autocast too).
    """
    for start in range(0, weight.shape[0], block):
        b = None if bias is None else bias[start : start + block]
        z = F.linear(hidden, weight[start : start + block], b)  # (N, c)
        yield start, z.to(compute_dtype(z.dtype))


def scan_classes(hidden, weight, bias, block: int, *, lse: bool = False, tracks=()):
    """One pass over the class blocks of ``hidden @ weight.T + bias``.

    Args:
        hidden: (N, d). weight: (C, d). bias: (C,) or None. block: classes per block.
        lse: also stream logsumexp over all classes.
        tracks: (k, exclude) pairs, one streaming top-k each; ``exclude`` is a (C,) bool mask of
            classes left out of that top-k (their logits read as −inf), or None.

    Returns:
        (logsumexp (N,) or None, [(values (N, k), class ids (N, k)) per track], NaN rows (N,) bool).
    """
    total = None
    nan = torch.zeros(hidden.shape[0], dtype=torch.bool, device=hidden.device)
    tops = [StreamingTopK(k) for k, _ in tracks]
    for start, z in logit_blocks(hidden, weight, bias, block):
        if lse:
            part = z.logsumexp(dim=1)  # (N,)
            total = part if total is None else torch.logaddexp(total, part)
        bad = z.isnan()
        nan |= bad.any(dim=1)
        z = z.masked_fill(bad, float("-inf"))
        for top, (_, exclude) in zip(tops, tracks):
            out = None if exclude is None else exclude[start : start + z.shape[1]]
            top.update(z if out is None else z.masked_fill(out, float("-inf")), start)
    return total, [top.result() for top in tops], nan
