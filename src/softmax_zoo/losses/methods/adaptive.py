"""Adaptive softmax: Grave, Joulin, Cissé, Grangier & Jégou 2017, "Efficient softmax approximation
for GPUs" (ICML 2017, arXiv:1609.04309).

Classes are sorted by decreasing frequency and split by ``cutoffs`` c_0 < c_1 < ... < c_{J-1}
into a shortlist V_h = [0, c_0) and J tail clusters V_i = [c_i, c_{i+1}) (c_J = C). The head
scores the shortlist plus one logit per cluster; cluster i scores its classes through a
projection to d // div^(i+1) dimensions (the paper's Sec. 4, "adapting the classifier capacity"):

    log p(c | h) = log softmax(W_h h)[c]                                       c ∈ V_h
    log p(c | h) = log softmax(W_h h)[c_0 + i] + log softmax(U_i P_i h)[c − c_i]  c ∈ V_i

The parameters have the layout of ``torch.nn.AdaptiveLogSoftmaxWithLoss`` (``head``,
``tail[i] = Sequential(P_i, U_i)``), so :meth:`AdaptiveSoftmaxHead.from_torch` loads one.

The loss is one custom autograd Function, :class:`_AdaptiveNLL`: rows are bucketed by cluster
with one sort, and each output layer is a fused linear + softmax + NLL walking its rows in
chunks of about ``_CHUNK_ELEMENTS`` logits; a chunk's probabilities give the loss *and* the
gradient (softmax − onehot) at once, in one buffer reused by every chunk, so no (rows, classes)
matrix outlives its chunk (torch allocates four per cluster: logits, log-probs, gather's zeros,
their gradient). The backward only scales the stored gradients. One exp per logit:
loss = −log p_t, falling back to logsumexp(z) − z_t where p_t underflows.
The softmax is taken in float32 (float64 for float64 weights), also under autocast, where the
matmuls run in autocast's dtype as ``F.linear`` would.
"""

from __future__ import annotations

import threading
from typing import ClassVar, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd.function import once_differentiable

from ..machinery import memory
from ..machinery._core import CHUNK_LOGITS, check_target_dtype, check_target_range, matmul_dtypes, reduce_loss
from ..machinery.head import OutputHead
from ..machinery.options import HeadOutput
from ..machinery.registry import register_variant
from ..methods.adaptive_cutoffs import (
    MatmulCost,
    check_cutoffs,
    expected_time,
    measure_matmul_cost,
    optimal_cutoffs,
    tail_widths,
)

__all__ = [
    "AdaptiveSoftmaxHead",
    "MatmulCost",
    "check_cutoffs",
    "expected_time",
    "measure_matmul_cost",
    "optimal_cutoffs",
    "tail_widths",
]

# Logits per chunk: the package's budget, 2^24 (64 MiB in float32). Few chunks keep the number of
# ops (each a parallel region, costly on a busy CPU) small; the cap keeps a large cluster's
# logits from being held at once. Measured times against torch's: results/bench_losses_cpu.md.
_CHUNK_ELEMENTS = CHUNK_LOGITS


def _chunk_rows(num_classes: int) -> int:
    return max(1, _CHUNK_ELEMENTS // num_classes)


_SCRATCH = threading.local()


def _softmax_of_linear(x, weight, bias, acc):
    """softmax(x @ weight.T + bias) in ``acc``, (r, K).

    On the CPU, in float32/64, the logits are written into a per-thread scratch buffer that is
    kept between calls and normalised in place: glibc hands buffers over 32 MiB straight back
    to the OS, and faulting a fresh chunk's pages in again can cost more than the softmax itself.
    The result is only valid until the next call. On a GPU the caching allocator recycles memory
    already.

    The softmax runs in place through ``torch.softmax``'s ``out=`` overload (the public
    ``softmax.int_out`` op; ``test_adaptive.py`` fails if it stops writing into ``out``): one
    fused pass, cheaper than an in-place max/sub_/exp_/sum/div_ sequence or a fresh (r, K) result.
    """
    if x.device.type != "cpu" or x.dtype != acc:
        return torch.softmax(F.linear(x, weight, bias), dim=1, dtype=acc)
    numel = x.shape[0] * weight.shape[0]
    buf = getattr(_SCRATCH, "buf", None)
    if buf is None or buf.dtype != acc or buf.numel() < numel:
        buf = _SCRATCH.buf = torch.empty(numel, dtype=acc)
    z = buf[:numel].view(x.shape[0], weight.shape[0])  # (r, K)
    if bias is None:
        torch.mm(x, weight.t(), out=z)
    else:
        torch.addmm(bias, x, weight.t(), out=z)
    return torch.softmax(z, 1, out=z)  # in place: each logit is read before it is written


def _ce_chunks(x, weight, bias, target, row_weight, grads, acc):
    """Per-row cross-entropy of one output layer ``x @ weight.T + bias``, chunk by chunk.

    Each chunk's logits serve the loss and, if ``grads``, the gradient, then are dropped. Softmax
    is taken in ``acc``, one exp per logit; loss = −log p_t, or logsumexp(z) − z_t (with
    logsumexp = max − log p_max) in the rows where p_t is too small to be a normal float.

    Args:
        x: (n, k), weight: (K, k), bias: (K,) or None, all in the matmul dtype.
        target: (n,) long in [0, K).
        row_weight: (n,) or None (ones): the gradients are those of Σ_r row_weight_r · loss_r.
        grads: also return d/dx (n, k), d/dweight (K, k), d/dbias (K,) or None, in ``acc``.

    Returns:
        loss (n,) in ``acc``, then the three gradients (None if not ``grads``).
    """
    n, k, K = x.shape[0], x.shape[1], weight.shape[0]
    loss = x.new_empty(n, dtype=acc)
    gx = x.new_empty(n, k, dtype=acc) if grads else None
    gw = x.new_zeros(K, k, dtype=acc) if grads and n == 0 else None  # set by the first chunk
    gb = x.new_zeros(K, dtype=acc) if grads and bias is not None and n == 0 else None
    tiny = torch.finfo(acc).tiny * 2**24  # p_t above this keeps full precision
    step = _chunk_rows(K)
    for s in range(0, n, step):
        xc, tc = x[s : s + step], target[s : s + step, None]  # (r, k), (r, 1)
        p = _softmax_of_linear(xc, weight, bias, acc)  # (r, K)
        p_t = p.gather(1, tc).squeeze(1)
        lc = p_t.log().neg_()
        low = p_t < tiny
        if bool(low.any()):
            r = low.nonzero().squeeze(1)
            zr = F.linear(xc[r], weight, bias).to(acc)  # those rows' logits again
            lc[r] = zr.amax(1) - p[r].amax(1).log() - zr.gather(1, tc[r]).squeeze(1)
        loss[s : s + step] = lc
        if not grads:
            continue
        if row_weight is None:
            p.scatter_add_(1, tc, p.new_full(tc.shape, -1.0))  # softmax − onehot
        else:
            wc = row_weight[s : s + step, None]
            p.mul_(wc).scatter_add_(1, tc, -wc)
        if bias is not None:
            gb = p.sum(0) if s == 0 else gb.add_(p.sum(0))
        if p.dtype == x.dtype:
            torch.mm(p, weight, out=gx[s : s + step])
            gw = p.t() @ xc if s == 0 else gw.addmm_(p.t(), xc)
        else:  # matmuls in autocast's dtype, gradients accumulated in acc
            pm = p.to(x.dtype)
            gx[s : s + step] = pm @ weight
            gw = (pm.t() @ xc).to(acc) if s == 0 else gw.add_(pm.t() @ xc)
    return loss, gx, gw, gb


def _adaptive_pass(plan, hidden, head_w, head_b, tail_ws, row_weight, grads):
    """Per-row NLL of the adaptive softmax and, if ``grads``, every gradient (see :class:`_AdaptiveNLL`).

    The rows are permuted once so that each cluster's rows are a contiguous slice: its inputs,
    losses and hidden gradients are views, with no gather or scatter per cluster.

    Args:
        plan: (mm dtype, acc dtype, order (n,) grouping the rows by cluster, its inverse (n,),
            head target in that order (n,), per tail cluster (start, end, local target) or None).
        hidden: (n, d). head_w: (c_0 + J, d). head_b: (c_0 + J,) or None.
        tail_ws: P_0, U_0, P_1, U_1, ...: (d_i, d) projections and (|V_i|, d_i) outputs.
        row_weight: (n,) or None, as in :func:`_ce_chunks`.
    """
    mm, acc, order, inverse, head_target, groups = plan
    with torch.autocast(hidden.device.type, enabled=False):
        h = hidden.to(mm).index_select(0, order)  # (n, d), grouped by cluster
        rw = None if row_weight is None else row_weight.index_select(0, order)
        b = None if head_b is None else head_b.to(mm)
        loss, gh, gwh, gbh = _ce_chunks(h, head_w.to(mm), b, head_target, rw, grads, acc)
        tail_grads = []
        for i, group in enumerate(groups):
            if group is None:
                tail_grads += [None, None]
                continue
            start, end, local = group
            proj, out = tail_ws[2 * i].to(mm), tail_ws[2 * i + 1].to(mm)
            hs = h[start:end]  # (n_i, d)
            x = hs @ proj.t()  # (n_i, d_i)
            lc, gx, gu, _ = _ce_chunks(x, out, None, local, None if rw is None else rw[start:end], grads, acc)
            loss[start:end] += lc
            if grads:
                gxm = gx.to(mm)
                if gh.dtype == mm:
                    gh[start:end].addmm_(gxm, proj)
                else:
                    gh[start:end] += gxm @ proj
                tail_grads += [(gxm.t() @ hs).to(acc), gu]
        loss = loss.index_select(0, inverse)  # back to the input order
        gh = gh.index_select(0, inverse) if grads else None
    return loss, (gh, gwh, gbh, *tail_grads)


class _AdaptiveNLL(torch.autograd.Function):
    """Per-row adaptive-softmax NLL with every gradient computed in the forward, chunk by chunk.

    With ``row_weight`` (n,) (class weights w_t) the rows' losses are w_t·NLL and the stored
    gradients those of Σ w_t·NLL. The backward scales the stored gradients by the upstream (n,)
    gradient g: exact for d/dhidden (one row each) for any g; for the weights only when g is the
    same in every row (reductions "mean" and "sum"), so for any other g the pass is rerun with
    g·w_t as row weights.
    """

    @staticmethod
    def forward(ctx, plan, row_weight, hidden, head_w, head_b, *tail_ws):
        loss, grads = _adaptive_pass(plan, hidden, head_w, head_b, tail_ws, row_weight, grads=True)
        ctx.plan, ctx.grads, ctx.row_weight = plan, grads, row_weight
        ctx.save_for_backward(hidden, head_w, head_b, *tail_ws)
        return loss if row_weight is None else loss * row_weight

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_loss):
        saved = ctx.saved_tensors
        g = grad_loss.to(ctx.plan[1])
        if g.numel() > 0 and bool((g == g[0]).all()):
            grads = [None if t is None else t * g[0] for t in ctx.grads]
        elif g.numel() > 0:
            w = g if ctx.row_weight is None else g * ctx.row_weight
            _, grads = _adaptive_pass(ctx.plan, saved[0], saved[1], saved[2], saved[3:], w, grads=True)
        else:
            grads = ctx.grads
        return (None, None, *(None if gr is None else gr.to(t.dtype) for gr, t in zip(grads, saved)))


def _adaptive_examples(num_classes: int) -> dict[str, dict]:
    return {"adaptive": {"cutoffs": [num_classes // 3, 2 * num_classes // 3], "div_value": 2.0}}


@register_variant("adaptive_softmax", label="adaptive", title="adaptive softmax", auto=("cutoffs",),
                  examples=_adaptive_examples)
class AdaptiveSoftmaxHead(OutputHead):
    """Adaptive softmax output layer (Grave et al. 2017) with its loss.

    Same parameters as ``torch.nn.AdaptiveLogSoftmaxWithLoss``: ``head = Linear(d, c_0 + J,
    bias=head_bias)`` and ``tail[i] = Sequential(Linear(d, d // div^(i+1), bias=False),
    Linear(d // div^(i+1), |V_i|, bias=False))``. Beyond torch: ``ignore_index`` and every
    ``reduction`` (pytorch/pytorch#12675), float32 log-softmax under autocast (pytorch/pytorch#44724),
    :meth:`log_probs` for a subset of classes, an exact :meth:`predict` that never builds the
    (N, C) matrix, and inputs of any leading shape.

    There is no ``weight=`` argument: the projection is split over clusters of different widths,
    so one (C, d) matrix such as the input embeddings cannot be tied to it.

    The forward computes the gradients as well (see :class:`_AdaptiveNLL`): evaluate under
    ``torch.no_grad()`` to skip them. On the CPU one scratch buffer of up to 2^24 logits
    (64 MiB in float32) is kept per thread between calls.

    Args:
        in_features: d.
        num_classes: C; class ids must be sorted by decreasing frequency (0 = most frequent).
        cutoffs: c_0 < ... < c_{J-1} in (0, C): shortlist [0, c_0), cluster i = [c_i, c_{i+1}).
            :func:`optimal_cutoffs` chooses them with the paper's cost model.
        div_value: tail cluster i projects to ``max(1, in_features // div_value**(i+1))`` dimensions
            (:func:`~softmax_zoo.losses.methods.adaptive_cutoffs.tail_widths`; torch's would be 0 at small d).
        head_bias: give the head a bias (torch's default and the paper's: no bias).
        ignore_index, reduction: see :class:`~softmax_zoo.losses.machinery.head.OutputHead`.
        class_weight, shift, return_token_accuracy: as every head (``options.py``); the token
            accuracy is that of :meth:`predict` (exact, one more pass over the head and the
            clusters that can win). The other options are refused (:attr:`refused_options`).
    """

    refused_options: ClassVar[dict[str, str]] = {
        "z_loss": "the adaptive softmax normalises twice (the head over shortlist and clusters, then within "
                  "a cluster); there is no single log-normaliser over the C classes to keep near 0",
        "return_lse": "the adaptive softmax has no single log-normaliser over the C classes",
        "softcap": "its logits are split over the head and the cluster projections, not one vector to cap",
        "temperature": "it normalises twice, so dividing each layer's logits by T is not the tempered distribution",
        "return_entropy": "its distribution is a product of the head's and a cluster's; not computed per row",
        "return_target_log_prob": "its loss with reduction='none' is −log p_t itself (differentiable)",
    }

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        *,
        ignore_index: int = -100,
        reduction: str = "mean",
        class_weight=None,
        shift: bool | int = False,
        return_token_accuracy: bool = False,
        z_loss: float = 0.0,
        return_lse: bool = False,
        softcap: float | None = None,
        temperature: float = 1.0,
        return_entropy: bool = False,
        return_target_log_prob: bool = False,
    ) -> None:
        # the options by name, no **kwargs: a tied ``weight=`` must stay an unknown argument (build_head)
        super().__init__(in_features, num_classes, ignore_index=ignore_index, reduction=reduction,
                         class_weight=class_weight, shift=shift, return_token_accuracy=return_token_accuracy,
                         z_loss=z_loss, return_lse=return_lse, softcap=softcap, temperature=temperature,
                         return_entropy=return_entropy, return_target_log_prob=return_target_log_prob)
        self.cutoffs = check_cutoffs(cutoffs, num_classes)
        self.div_value = div_value
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs)
        bounds = self.cutoffs + [num_classes]
        self.head = nn.Linear(in_features, self.shortlist_size + self.n_clusters, bias=head_bias)
        self.tail = nn.ModuleList(
            nn.Sequential(nn.Linear(in_features, w, bias=False), nn.Linear(w, hi - lo, bias=False))
            for w, lo, hi in zip(tail_widths(in_features, self.n_clusters, div_value), bounds, bounds[1:])
        )
        # Cluster boundaries as a tensor for bucketize; not in the state dict (torch's has none).
        self.register_buffer("_bounds", torch.tensor(self.cutoffs), persistent=False)

    @classmethod
    def from_torch(cls, module: nn.AdaptiveLogSoftmaxWithLoss, **kwargs) -> "AdaptiveSoftmaxHead":
        """A head with a copy of ``module``'s weights, on its device and dtype.

        Args:
            module: a ``torch.nn.AdaptiveLogSoftmaxWithLoss``.
            **kwargs: ``ignore_index``, ``reduction``.
        """
        torch_widths = [proj.out_features for proj, _ in module.tail]
        if 0 in torch_widths:
            raise ValueError(
                f"the torch module's tail clusters project to {torch_widths} dimensions; a 0-dimensional cluster "
                "(equally likely classes) has no counterpart here, where every cluster projects to at least 1"
            )
        weight = module.head.weight
        head = cls(
            module.in_features, module.n_classes, module.cutoffs[:-1], module.div_value, module.head_bias, **kwargs
        ).to(device=weight.device, dtype=weight.dtype)
        head.load_state_dict({**head.state_dict(), **module.state_dict()})  # class_weight, if given, kept
        return head

    def _flatten(self, hidden: torch.Tensor) -> torch.Tensor:
        self.check_hidden(hidden, self.head.weight)
        return hidden.reshape(-1, self.in_features)  # (..., d) -> (N, d)

    def forward(self, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Negative log-likelihood of ``target`` under the adaptive softmax.

        Args:
            hidden: (..., d).
            target: (...) class ids in [0, C), or ``ignore_index``.

        Returns:
            Scalar for "mean" (over non-ignored rows) and "sum"; (...) for "none" (0 at ignored).
        """
        if tuple(target.shape) != tuple(hidden.shape[:-1]):
            raise ValueError(f"target must have shape {tuple(hidden.shape[:-1])} to match hidden, got {tuple(target.shape)}")
        check_target_dtype(target)
        target = self.shifted(target)
        h, t = self._flatten(hidden), target.reshape(-1).long()  # (N, d), (N,)
        keep = check_target_range(t, self.num_classes, self.ignore_index)
        kept = None if bool(keep.all()) else keep.nonzero().squeeze(1)
        if kept is not None:
            h, t = h.index_select(0, kept), t.index_select(0, kept)
        cluster = torch.bucketize(t, self._bounds, right=True)  # (n,): 0 = shortlist, i + 1 = tail cluster i
        head_target = torch.where(cluster == 0, t, self.shortlist_size + cluster - 1)
        order = torch.argsort(cluster, stable=True)  # rows grouped by cluster: one sort for all
        inverse = torch.empty_like(order).index_copy_(0, order, torch.arange(order.shape[0], device=order.device))
        t_sorted = t.index_select(0, order)
        sizes = torch.bincount(cluster, minlength=self.n_clusters + 1).tolist()
        groups, start = [], sizes[0]
        for i, size in enumerate(sizes[1:]):
            groups.append((start, start + size, t_sorted[start : start + size] - self.cutoffs[i]) if size else None)
            start += size
        head_target = head_target.index_select(0, order)
        plan = (*matmul_dtypes(h, self.head.weight), order, inverse, head_target, groups)
        weights = [w for proj, out in self.tail for w in (proj.weight, out.weight)]
        params = (h, self.head.weight, self.head.bias, *weights)
        row_weight = None if self.class_weight is None else self.class_weight.to(t.device, plan[1])[t]  # (n,) w_t
        if torch.is_grad_enabled() and any(p is not None and p.requires_grad for p in params):
            loss = _AdaptiveNLL.apply(plan, row_weight, *params)  # (n,)
        else:
            loss = _adaptive_pass(plan, h, self.head.weight, self.head.bias, weights, None, grads=False)[0]
            loss = loss if row_weight is None else loss * row_weight
        accuracy = None
        if self.options.return_token_accuracy:
            with torch.no_grad():
                hits = (self.predict(h) == t).sum().to(plan[1])
            accuracy = torch.where(keep.any(), hits / keep.sum().clamp(min=1), float("nan"))
        count = None if row_weight is None else row_weight.sum()
        if kept is not None:
            loss = loss.new_zeros(keep.shape[0]).index_copy(0, kept, loss)  # (N,), 0 at ignored rows
        loss = reduce_loss(loss, keep, self.reduction, count)
        loss = loss.reshape(target.shape) if self.reduction == "none" else loss
        return loss if accuracy is None else HeadOutput(loss, None, accuracy)

    def step_buffers(self, rows: int, free: int | None = None) -> dict[str, int]:
        """The largest layer's chunk of logits (every layer runs in chunks of ``_chunk_rows`` rows, all rows
        in the head or one tail at worst) and the weight gradients the forward computes and keeps."""
        widest = max(self.shortlist_size + self.n_clusters, *(b - a for a, b in zip(self.cutoffs, self.cutoffs[1:] + [self.num_classes])))
        size = min(rows, _chunk_rows(widest))
        grads = 4 * sum(p.numel() for p in self.parameters())  # in float32 (matmul_dtypes' accumulation dtype)
        return {
            f"one chunk's ({size:,}, {widest:,}) logits x {memory.LOGIT_BUFFERS}": memory.logits_bytes(size, widest),
            "weight gradients from the forward": grads,
        }

    def _head_log_probs(self, h: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.head(h).to(matmul_dtypes(h, self.head.weight)[1]), dim=-1)  # (N, c_0 + J)

    def _cluster_log_probs(self, h: torch.Tensor, head_lp: torch.Tensor, i: int) -> torch.Tensor:
        """(N, |V_i|) log p(c | h) for the classes of tail cluster i."""
        local = torch.log_softmax(self.tail[i](h).to(head_lp.dtype), dim=-1)
        return local + head_lp[:, self.shortlist_size + i, None]

    def log_probs(self, hidden: torch.Tensor, classes: torch.Tensor | Sequence[int] | None = None) -> torch.Tensor:
        """Log-probabilities of all classes, or of ``classes`` only, normalised in float32.

        Args:
            hidden: (..., d).
            classes: optional (M,) class ids in [0, C), any order; only the clusters holding
                one of them are evaluated.

        Returns:
            (..., C), or (..., M) with column m for ``classes[m]``.
        """
        h = self._flatten(hidden)
        head_lp = self._head_log_probs(h)
        bounds = self.cutoffs + [self.num_classes]
        if classes is None:
            out = head_lp.new_empty(h.shape[0], self.num_classes)
            out[:, : self.shortlist_size] = head_lp[:, : self.shortlist_size]
            for i in range(self.n_clusters):
                out[:, bounds[i] : bounds[i + 1]] = self._cluster_log_probs(h, head_lp, i)
            return out.reshape(*hidden.shape[:-1], self.num_classes)
        classes = torch.as_tensor(classes, dtype=torch.long, device=h.device).reshape(-1)
        bad = (classes < 0) | (classes >= self.num_classes)
        if bool(bad.any()):
            raise ValueError(f"classes must lie in [0, {self.num_classes}), got {int(classes[bad][0])}")
        out = head_lp.new_empty(h.shape[0], classes.shape[0])
        cluster = torch.bucketize(classes, self._bounds, right=True)  # (M,)
        short = (cluster == 0).nonzero().squeeze(1)
        out[:, short] = head_lp[:, classes[short]]
        for i in cluster.unique().tolist():
            if i > 0:
                cols = (cluster == i).nonzero().squeeze(1)
                out[:, cols] = self._cluster_log_probs(h, head_lp, i - 1)[:, classes[cols] - bounds[i - 1]]
        return out.reshape(*hidden.shape[:-1], classes.shape[0])

    @torch.no_grad()
    def predict(self, hidden: torch.Tensor) -> torch.Tensor:
        """``log_probs(hidden).argmax(-1)``, exactly, without the (N, C) matrix.

        Every class of cluster i has log p ≤ log p(cluster i), so the cluster is evaluated only
        for rows where that bound beats the best class found so far, in chunks of rows.
        Ties go to the smaller class id, as ``argmax``; a row with NaN log-probabilities (a NaN
        in ``hidden``) gets ``ignore_index``, as :meth:`OutputHead.predict`.

        Args:
            hidden: (..., d).

        Returns:
            (...) long.
        """
        h = self._flatten(hidden)
        head_lp = self._head_log_probs(h)
        best, arg = head_lp[:, : self.shortlist_size].max(dim=-1)
        for i in range(self.n_clusters):
            rows = (head_lp[:, self.shortlist_size + i] > best).nonzero().squeeze(1)
            step = _chunk_rows(self.tail[i][1].out_features)
            for r in rows.split(step):
                value, index = self._cluster_log_probs(h[r], head_lp[r], i).max(dim=-1)
                win = value > best[r]
                best[r[win]] = value[win]
                arg[r[win]] = index[win] + self.cutoffs[i]
        arg.masked_fill_(head_lp.isnan().any(dim=-1), self.ignore_index)
        return arg.reshape(hidden.shape[:-1])

    def extra_repr(self) -> str:
        return super().extra_repr() + f", cutoffs={self.cutoffs}, div_value={self.div_value}"
