"""Memory-lean linear + loss: the (N, C) logits are never held, only ``chunk_size`` × C at a time.

The idea of Liger-Kernel's fused linear cross-entropy (Hsu et al. 2024, arXiv:2410.10989) and
of Cut Cross-Entropy (Wijmans et al. 2025, arXiv:2411.09009), in plain torch (CPU and GPU) and
for every logit-level variant. With z = h W^T + b and a variant's per-row loss ℓ_i(z_i), the
forward walks the rows in chunks R of at most ``chunk_size`` rows and, per chunk,

    z_R = h_R W^T + b                    (r, C), the only logits alive
    ℓ_R, G_R = ∂(Σ_i w_i ℓ_i)/∂z_R       the variant's loss and logit gradient (r, C)
    ∂/∂h_R = G_R W,   ∂/∂W += G_R^T h_R,   ∂/∂b += Σ_rows G_R

with w_i the reduction's weight of row i (1/kept rows for "mean", 1 for "sum" and "none", 0 at
ignored rows). The backward only multiplies these by the upstream gradient g. For reduction
"none" that is exact for d/dh (one row each) but for d/dW and d/db only when g is the same in
every kept row (``loss.sum()``, ``loss.mean()``); any other g reruns the pass with g_i as w_i.

Each variant supplies ``loss_and_grad(z, target, keep, row_weight) -> (loss (r,), G (r, C) or
None, stats (r, s) or None)``: its head's :class:`~softmax_zoo.losses.machinery.row_loss.RowLoss` with the
head's options (``options.py``), the same definition the plain path runs on the whole logits
(``row_loss.py``); the stats (per-row lse, correct prediction) come back beside the loss.
Matmuls run in the weight's dtype (autocast's under autocast), the loss and the logit gradient in
float32 (float64 for float64), as ``_core`` says.

Memory: one (chunk_size, C) buffer that every chunk's logits are written into and that the
softmax and stable heads turn into exp(z − max) and then G in place and the sparse head into its
G once it has read its top-k (the softcap option adds its capped logits), plus the gradients of hidden (N, d), weight (C, d) and
bias (C,), held from the forward to the backward, which scales them in place. ``chunk_size="auto"``
sizes the chunks to the device's budget (``memory.chunk_logits``): on a CPU ``AUTO_CHUNK_LOGITS``
logits or d rows, whichever is more; on a GPU, from its free memory.
"""

from __future__ import annotations

import numbers

import torch
from torch.autograd.function import once_differentiable

from ..machinery._core import CHUNK_LOGITS, check_target_dtype, check_target_range, matmul_dtypes, reduce_loss, reduction_scale
from ..machinery.memory import chunk_logits
from ..machinery.options import head_output, mean_count, reshape_output
from ..machinery.row_loss import SparseGrad
from ..machinery.sparse_linear import sparse_linear_grads

# Logits per chunk for chunk_size="auto" on a CPU unless d rows are more (the softmax head holds one
# such buffer, 64 MiB in float32). At N=4096, C=32000, d=512 this is 8 chunks of 512 rows (524 fit);
# at C=128000, 8 chunks of d=512 rows (131 fit the 2^24). A GPU's: memory.chunk_logits.
AUTO_CHUNK_LOGITS = CHUNK_LOGITS


def check_chunk_size(chunk_size) -> None:
    """Raise ``ValueError`` unless ``chunk_size`` is None, "auto" or an int >= 1."""
    if chunk_size is None or chunk_size == "auto":
        return
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) or chunk_size < 1:
        raise ValueError(f'chunk_size must be >= 1 or "auto" or None, got {chunk_size!r}')


def auto_chunk_size(num_rows: int, num_classes: int, budget: int = AUTO_CHUNK_LOGITS) -> int:
    """Rows per chunk: the fewest chunks of at most ``budget`` logits each, the N rows split evenly
    among them (at least 1 row, at most N), so that no chunk is a small remainder."""
    most = max(1, budget // num_classes)  # rows within the budget
    chunks = max(1, -(-num_rows // most))
    return max(1, -(-num_rows // chunks))


def _addmm_(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """out += a @ b, with ``a @ b`` in its own dtype and added in ``out``'s."""
    if out.dtype == a.dtype:
        out.addmm_(a, b)
    else:
        out.add_(a @ b)


def linear_into(out: torch.Tensor, h: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """out (r, C) = h (r, d) @ w (C, d)^T + b (C,), written into ``out``, which is returned."""
    if b is None:
        return torch.mm(h, w.t(), out=out)
    return torch.addmm(b, h, w.t(), out=out)


def unit_row_weight(row_weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(row_weight / s, s), s its largest magnitude (1 where it is 0 or there are no rows): the gradient G is cast to the
    matmul dtype at row weights of magnitude at most 1, and the backward multiplies s back in."""
    scale = row_weight.abs().max() if row_weight.numel() else row_weight.new_ones(())
    scale = torch.where(scale > 0, scale, 1.0)
    return row_weight / scale, scale


def chunked_pass(loss_and_grad, target, keep, hidden, weight, bias, row_weight, chunk_rows):
    """Per-row loss of ``hidden @ weight.T + bias`` and, if ``row_weight`` is given, the gradients.

    Every chunk's logits are written into one (chunk_rows, C) buffer, which ``loss_and_grad`` may
    overwrite (:meth:`~softmax_zoo.losses.machinery.row_loss.RowLoss.scratch_rows`): the softmax, stable and
    sparse heads write their logit gradient into it, so a chunk holds one (chunk_rows, C) buffer.

    Args:
        loss_and_grad: the variant's ``(z, target, keep, row_weight) -> (loss, G or None, stats or None)``.
        target: (N,) long, ignored rows pointed at class 0. keep: (N,) bool.
        hidden: (N, d). weight: (C, d). bias: (C,) or None.
        row_weight: (N,) or None: the gradients are those of Σ_i row_weight_i · loss_i.
        chunk_rows: rows per chunk.

    Returns:
        loss (N,) in the compute dtype; (d/dhidden (N, d), d/dweight (C, d), d/dbias (C,) or
        None) in the compute dtype, or None without ``row_weight``; the stats (N, s) or None.
    """
    mm, acc = matmul_dtypes(hidden, weight)
    n, d, num_classes = hidden.shape[0], hidden.shape[1], weight.shape[0]
    grads = row_weight is not None
    if grads:  # G is cast to ``mm`` with row weights of largest magnitude 1: 1/N in float16 would flush it to 0
        row_weight, scale = unit_row_weight(row_weight)
    with torch.autocast(hidden.device.type, enabled=False):
        h, w = hidden.to(mm), weight.to(mm)
        b = None if bias is None else bias.to(mm)
        loss = h.new_empty(n, dtype=acc)
        stats = None
        logits = h.new_empty(min(n, chunk_rows), num_classes)  # (chunk_rows, C), every chunk's logits
        if grads:
            gh = h.new_empty(n, d, dtype=acc)  # every row written once
            gw = h.new_zeros(num_classes, d, dtype=acc)
            gb = None if b is None else h.new_zeros(num_classes, dtype=acc)
        for s in range(0, n, chunk_rows):
            rows = slice(s, s + chunk_rows)
            hr = h[rows]  # (r, d)
            z = linear_into(logits[: hr.shape[0]], hr, w, b).to(acc)  # (r, C)
            loss[rows], g, part = loss_and_grad(z, target[rows], keep[rows], None if not grads else row_weight[rows])
            del z
            if part is not None:
                stats = part.new_empty(n, part.shape[1]) if stats is None else stats
                stats[rows] = part
            if not grads:
                continue
            if isinstance(g, SparseGrad):  # k + 1 nonzeros a row: a gather and a scatter, no GEMM
                sparse_linear_grads(g, hidden[rows], weight if weight.dtype == acc else w, gh[rows], gw, gb, logits)
                continue
            gm = g.to(mm)  # (r, C)
            if gh.dtype == mm:
                torch.mm(gm, w, out=gh[rows])
            else:
                gh[rows] = gm @ w
            _addmm_(gw, gm.t(), hr)
            if gb is not None:
                gb.add_(g.sum(dim=0))
            del g, gm
    if not grads:
        return loss, None, stats
    for g in (gh, gw, gb):
        if g is not None:
            g.mul_(scale)  # in place: gw is (C, d)
    return loss, (gh, gw, gb), stats


class _ChunkedLinearLoss(torch.autograd.Function):
    """Reduced loss of a linear head with every gradient computed in the forward (module docstring),
    and the per-row stats (N, s), not differentiable; ``count`` is the "mean"'s denominator or None.

    The backward scales the forward's gradients in place and hands them over, so no second copy of
    d/dW (C, d) is made; a second backward through the same graph (``retain_graph``) reruns the pass."""

    @staticmethod
    def forward(ctx, loss_and_grad, target, keep, reduction, chunk_rows, count, hidden, weight, bias):
        acc = matmul_dtypes(hidden, weight)[1]
        row_weight = reduction_scale(keep, reduction, acc, count)
        loss, grads, stats = chunked_pass(loss_and_grad, target, keep, hidden, weight, bias, row_weight, chunk_rows)
        ctx.args = (loss_and_grad, target, keep, chunk_rows)
        ctx.reduction, ctx.grads, ctx.row_weight = reduction, grads, row_weight
        ctx.save_for_backward(hidden, weight, bias)
        stats = loss.new_empty(loss.shape[0], 0) if stats is None else stats
        ctx.mark_non_differentiable(stats)
        return reduce_loss(loss, keep, reduction, count), stats

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_loss, grad_stats):
        saved = ctx.saved_tensors
        g = grad_loss.to(ctx.row_weight.dtype)
        grads, ctx.grads = ctx.grads, None  # consumed: scaled in place below
        scale = g  # the one factor of every row's gradient, or None
        if ctx.reduction == "none":
            kept = g[ctx.args[2]]  # (n,)
            same = kept.numel() == 0 or bool((kept == kept[0]).all())
            scale = (kept[0] if kept.numel() else 0.0) if same else None
        if grads is None or scale is None:
            _, grads, _ = chunked_pass(*ctx.args[:3], *saved, ctx.row_weight * g, ctx.args[3])
        else:
            for t in grads:
                if t is not None:
                    t.mul_(scale)
        out = (None if gr is None else gr.to(t.dtype) for gr, t in zip(grads, saved))
        return (None, None, None, None, None, None, *out)


def chunked_linear_loss(head, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """``head``'s loss of hidden (..., d) and target (...) through :class:`_ChunkedLinearLoss`.

    ``head`` is a :class:`~softmax_zoo.losses.methods.softmax.SoftmaxHead` (or subclass) with an int or
    "auto" ``chunk_size``: its ``weight``, ``bias``, ``ignore_index``, ``reduction``, ``options``
    and ``row_loss_with_options()`` are used (``target`` is already shifted if ``shift``).

    Returns:
        Scalar for "mean" and "sum"; target's shape for "none" (0 at ignored rows); or
        ``options.HeadOutput`` with ``return_lse``/``return_token_accuracy``.
    """
    head.check_hidden(hidden, head.weight)
    if tuple(target.shape) != tuple(hidden.shape[:-1]):
        raise ValueError(
            f"target must be {tuple(hidden.shape[:-1])}, hidden's leading shape, got {tuple(target.shape)}"
        )
    check_target_dtype(target)
    h = hidden.reshape(-1, head.in_features)  # (..., d) -> (N, d)
    t = target.reshape(-1).long()  # (...) -> (N,)
    keep = check_target_range(t, head.num_classes, head.ignore_index)
    t = t.masked_fill(~keep, 0)  # ignored rows gather class 0; their loss and weight are 0
    rows = head.chunk_size
    if rows is None:  # the plain path of a sparse gradient: the whole (N, C) logits, one chunk
        rows = max(1, h.shape[0])
    elif rows == "auto":
        rows = auto_chunk_size(h.shape[0], head.num_classes, chunk_logits(h.device, head.weight.numel()))
    params = (h, head.weight, head.bias)
    variant_loss = head.row_loss_with_options()  # the variant as set for this call, every chunk alike
    count = mean_count(head.class_weight, t, keep)
    if torch.is_grad_enabled() and any(p is not None and p.requires_grad for p in params):
        loss, stats = _ChunkedLinearLoss.apply(variant_loss.loss_and_grad, t, keep, head.reduction, rows, count, *params)
    else:
        loss, _, stats = chunked_pass(variant_loss.loss_and_grad, t, keep, *params, None, rows)
        loss = reduce_loss(loss, keep, head.reduction, count)
    return reshape_output(head_output(loss, stats, keep, head.options), target.shape, head.reduction)
