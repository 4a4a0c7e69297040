"""Memory-lean distillation: a divergence between a teacher and the student's softmax(h W^T / T), never the (N, C) logits.

The student is given by its hidden states h (N, d) and output weight W (C, d), the teacher by its
logits z_T (N, C), by its own hidden states and weight (z_T = h_T W_T^T, computed block by block),
or by its K largest logits and their class ids (a top-K teacher: p is their softmax, 0 elsewhere).
With x = z_S/T and y = z_T/T, per row (T² times, as ``stable_kd_loss``, so gradients keep their
size across temperatures; T = 1 is the plain divergence):

    forward_kl   KL(p‖q), in the expm1 form of "A Fix for Softmax and Cross-Entropy" (section 2,
                 "Softmax Cancellation"), as ``stable_kd.py``: δ = x − y, d = δ − Σ p·δ,
                 s = d − log1p(Σ p·expm1(d)) = log q − log p, u = p·expm1(s) = q − p, and
                 dL/dx = u − q·Σu; the loss Σu + KL, KL = −Σ p·s. Identical student and teacher
                 logits give δ = 0, so an exactly zero loss and gradient.
    reverse_kl   KL(q‖p) = Σ q·(δ − (lse_S − lse_T)), dL/dx = q·(log q − log p − KL); exactly
                 zero too at identical logits.
    jsd          β·KL(p‖M) + (1 − β)·KL(q‖M), M = β·p + (1 − β)·q, as Liger-Kernel's fused
                 linear JSD defines β (β = 0 is forward_kl, β = 1 reverse_kl, as there);
                 dL/dx = a − q·Σa, a = (1 − β)·q·(log q − log M).

A top-K teacher (forward KL only: p is 0 outside its K classes, so KL(q‖p) is infinite) keeps
the student's full softmax: KL = Σ_K p·(log p − log q), s = d − log1p(Σ_K p·expm1(d) + R),
R = Σ_{j∉K} e^{x_j − lse_T − Σ p·δ} (the student's mass outside K), dL/dx_j = u_j − q_j·Σu on
K and q_j·(1 − Σu) elsewhere, Σu = Σ_K u + Σ_{j∉K} q_j.

Streaming: rows go ``chunk_size`` at a time, and within a chunk the classes go
``class_chunk_size`` at a time. The log-normalisers (and the p- or q-weighted means Σ p·δ, Σ q·δ)
are running maxima and sums (:class:`_RunningLSE`), merged block after block and then over the
ranks of a vocabulary-parallel group. With ``class_chunk_size`` None (the default) a row chunk's
(r, C) logits are computed once and kept for the chunk: one pass over W. With class blocks, every
pass recomputes each block's logits (the teacher's too, if given as hidden states), and a chunk
makes these passes over W, each needing the one before:

    forward_kl   3: lse_T, Σ p·δ and max δ; then Σ p·expm1(d) (d needs Σ p·δ), with lse_S only
                 if a row is far apart; then the gradient (u needs log1p(Σ p·expm1(d)))
    jsd          3: lse_S and lse_T; then Σ a (log M needs both); then the gradient (a − q·Σa)
    reverse_kl   2: lse_S, lse_T and Σ q·δ (a running sum under lse_S's maximum); then the gradient
    top-K        2: lse_S, the logsumexp outside K and x at the K ids (gathered on the way: the rest
                 is on (r, K)); then the gradient

The gradients of h, W and b are accumulated in the last pass, in the forward (as ``chunked.py``);
the backward scales them.

The teacher receives no gradient (a frozen teacher; ``stable_kd_loss`` gives the teacher's
gradient where it is wanted). Rows whose centred differences could overflow expm1
(``stable_kd.far_apart``) take log Σ p·e^d = lse_S − lse_T − Σ p·δ from the logs instead, as
``stable_kd`` does. Normalisation in float32 (float64 for float64); matmuls in the weight's dtype
(autocast's under autocast).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from ..machinery._core import check_reduction, check_target_dtype, check_target_range, matmul_dtypes, reduce_loss, reduction_scale
from ..machinery.chunked import _addmm_, auto_chunk_size, check_chunk_size, linear_into, unit_row_weight
from ..machinery.memory import chunk_logits
from ..methods.stable_kd import far_apart

DIVERGENCES = ("forward_kl", "reverse_kl", "jsd")


@dataclass
class Teacher:
    """The teacher, in one of three forms (the others None), rows aligned with the student's.

    logits: (N, C_local). hidden (N, d_T), weight (C_local, d_T), bias (C_local,) or None.
    topk_ids (N, K) global class ids, topk_logits (N, K).
    """

    logits: torch.Tensor | None = None
    hidden: torch.Tensor | None = None
    weight: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    topk_ids: torch.Tensor | None = None
    topk_logits: torch.Tensor | None = None

    def matmul_dtype(self) -> torch.dtype | None:
        """The dtype of the teacher's matmul (autocast's when it is on, else its weight's), read before
        the pass turns autocast off; None without hidden states."""
        return None if self.hidden is None else matmul_dtypes(self.hidden, self.weight)[0]

    def block(self, rows: slice, start: int, stop: int, dtype: torch.dtype, mm: torch.dtype | None) -> torch.Tensor:
        """The teacher's logits (r, stop − start) of ``rows`` and the local classes [start, stop), in ``dtype``, a new
        tensor (the caller may write into it)."""
        if self.logits is not None:
            return self.logits[rows, start:stop].to(dtype, copy=True)
        b = None if self.bias is None else self.bias[start:stop].to(mm)
        h = self.hidden[rows].to(mm)
        return linear_into(h.new_empty(h.shape[0], stop - start), h, self.weight[start:stop].to(mm), b).to(dtype)


class Collectives:
    """Row statistics combined over the ranks that hold the other classes; one process: nothing to combine."""

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def max(self, x: torch.Tensor) -> torch.Tensor:
        return x


class _RunningLSE:
    """logsumexp over the classes of a row (r,), block after block, with the means Σ e^v·w / Σ e^v of weights w."""

    def __init__(self, rows: int, means: int, like: torch.Tensor) -> None:
        self.m = like.new_full((rows,), float("-inf"))
        self.z = like.new_zeros(rows)
        self.w = like.new_zeros(rows, means)

    def add(self, v: torch.Tensor, *weights: torch.Tensor) -> None:
        """v (r, Cb) values (−inf: left out), each weight (r, Cb)."""
        m = torch.maximum(self.m, v.amax(dim=1))
        safe = m.masked_fill(m == float("-inf"), 0.0)  # a row still all −inf keeps sums 0, not nan
        e = torch.sub(v, safe[:, None]).exp_()  # (r, Cb)
        scale = torch.exp(self.m - safe)  # (r,) the old sums to the new maximum
        self.z = self.z * scale + e.sum(dim=1)
        for i, w in enumerate(weights):  # the last weight multiplies e in place
            self.w[:, i] = self.w[:, i] * scale + (e.mul_(w) if i == len(weights) - 1 else e * w).sum(dim=1)
        self.m = m

    def combine(self, over: Collectives) -> None:
        """The same over every rank's classes (a MAX, then one SUM of z and the weighted sums)."""
        m = over.max(self.m.clone())
        safe = m.masked_fill(m == float("-inf"), 0.0)
        sums = over.sum(torch.cat([self.z[:, None], self.w], dim=1) * torch.exp(self.m - safe)[:, None])
        self.m, self.z, self.w = m, sums[:, 0], sums[:, 1:]

    @property
    def lse(self) -> torch.Tensor:
        return self.m + self.z.log()

    def mean(self, i: int) -> torch.Tensor:
        return self.w[:, i] / self.z


@dataclass
class Spec:
    """Everything a pass needs besides the student's hidden, weight and bias (the Function's inputs)."""

    teacher: Teacher
    keep: torch.Tensor  # (N,) bool
    reduction: str
    divergence: str
    beta: float
    temperature: float
    chunk_rows: int
    class_chunk: int | None
    over: Collectives
    offset: int = 0  # the global id of the first local class


class _Chunk:
    """One row chunk: its blocks' (x, y) = (z_S/T, z_T/T) (r, Cb), computed once and kept when there is one block."""

    def __init__(self, spec: Spec, rows: slice, hr: torch.Tensor, w, b, acc, teacher_mm) -> None:
        self.spec, self.rows, self.hr, self.w, self.b, self.acc = spec, rows, hr, w, b, acc
        self.teacher_mm = teacher_mm
        c, size = w.shape[0], spec.class_chunk or w.shape[0]
        self.blocks = [(s, min(s + size, c)) for s in range(0, c, size)]
        self.kept = None

    def __iter__(self):
        """(start, stop, x, y) of each block; y is None for a top-K teacher."""
        if self.kept is not None:
            yield self.kept
            return
        t, teacher = self.spec.temperature, self.spec.teacher
        for s, e in self.blocks:
            b = None if self.b is None else self.b[s:e]
            x = linear_into(self.hr.new_empty(self.hr.shape[0], e - s), self.hr, self.w[s:e], b).to(self.acc).div_(t)
            y = None if teacher.topk_ids is not None else teacher.block(self.rows, s, e, self.acc, self.teacher_mm).div_(t)
            if len(self.blocks) == 1:
                self.kept = (s, e, x, y)
            yield s, e, x, y


def _topk_columns(ids: torch.Tensor, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Global ids (r, K) -> their columns in the block [start, stop) (the block's width, one past it, where
    outside), and (r, K) bool: inside."""
    inside = (ids >= start) & (ids < stop)
    return torch.where(inside, ids - start, stop - start), inside


class _Rows:
    """One divergence on one row chunk: ``stats`` (the passes before the gradient) -> loss (r,); then ``grad``
    per block: d(row loss)/d z_S (r, Cb), the T² and 1/T included."""

    def __init__(self, chunk: _Chunk) -> None:
        self.chunk, self.spec = chunk, chunk.spec
        self.over = self.spec.over

    def stats(self) -> torch.Tensor:
        div, topk = self.spec.divergence, self.spec.teacher.topk_ids is not None
        beta = self.spec.beta
        if topk:
            return self._topk_stats()
        if div == "forward_kl" or (div == "jsd" and beta == 0):
            return self._forward_stats()
        if div == "reverse_kl" or beta == 1:
            return self._reverse_stats()
        return self._jsd_stats()

    def _normalisers(self, student: bool, teacher: bool, forward: bool = False, reverse: bool = False) -> None:
        """Pass 1: lse_S and lse_T (those asked for); forward: Σ p·δ and max δ; reverse: Σ q·δ."""
        r = self.chunk.hr.shape[0]
        like = self.chunk.hr.new_empty(0, dtype=self.chunk.acc)
        lse_s, lse_t = _RunningLSE(r, int(reverse), like), _RunningLSE(r, int(forward), like)
        top = like.new_full((r,), float("-inf"))
        for _, _, x, y in self.chunk:
            delta = x - y if forward or reverse else None  # (r, Cb) δ
            if student:
                lse_s.add(x, *([delta] if reverse else []))
            if teacher:
                lse_t.add(y, *([delta] if forward else []))
            if forward:
                top = torch.maximum(top, delta.amax(dim=1))
        if student:
            lse_s.combine(self.over)
            self.lse_s = lse_s.lse
        if teacher:
            lse_t.combine(self.over)
            self.lse_t = lse_t.lse
        if forward:
            self.c, self.top = lse_t.mean(0), self.over.max(top)
        if reverse:
            self.mean_q = lse_s.mean(0)

    def _forward_stats(self) -> torch.Tensor:
        """Pass 1: lse_T, Σ p·δ, max δ; pass 2: Σ p·expm1(d), Σ p, Σ p·d (and lse_S if a row is far apart)."""
        self._normalisers(student=False, teacher=True, forward=True)
        self.far = self.top - self.c > far_apart(self.lse_t.dtype)  # (r,), the same on every rank
        far = bool(self.far.any())
        lse_s = _RunningLSE(self.lse_t.shape[0], 0, self.lse_t)
        sums = self.lse_t.new_zeros(self.lse_t.shape[0], 3)  # Σ p·expm1(d), Σ p, Σ p·d
        one = len(self.chunk.blocks) == 1  # one block: p and d are kept for the gradient
        for _, _, x, y in self.chunk:  # pass 2
            d = torch.sub(x, y).sub_(self.c[:, None])
            p = y.sub_(self.lse_t[:, None]).exp_()  # in y's buffer: the forward KL reads y no more
            e = torch.expm1(d).mul_(p)  # (r, Cb) p·expm1(d), then p·d
            sums += torch.stack([e.sum(dim=1), p.sum(dim=1), torch.mul(p, d, out=e).sum(dim=1)], dim=1)
            del e
            if far:
                lse_s.add(x)
            if one:
                self.p_d = (p, d)
        s, p1, pd = self.over.sum(sums).unbind(1)
        if far:
            lse_s.combine(self.over)
            self.lse_s = lse_s.lse
            log_sum = self.lse_s - self.lse_t - self.c  # log Σ p·e^d from the logs
        self.log_sum = torch.where(self.far, log_sum, torch.log1p(s.masked_fill(self.far, 0))) if far else torch.log1p(s)
        self.sum_u = -(1 - p1) * torch.expm1(-self.log_sum)  # Σ p·expm1(d − log_sum), from the row sums
        return self.sum_u + p1 * self.log_sum - pd  # Σu + KL, KL = −Σ p·s

    def _reverse_stats(self) -> torch.Tensor:
        self._normalisers(student=True, teacher=True, reverse=True)
        self.shift = self.lse_s - self.lse_t  # log q − log p = δ − shift
        self.kl = self.mean_q - self.shift
        return self.kl

    def _jsd_stats(self) -> torch.Tensor:
        self._normalisers(student=True, teacher=True)
        sums = self.lse_s.new_zeros(self.lse_s.shape[0], 2)  # the loss, Σ a
        for _, _, x, y in self.chunk:  # pass 2
            log_q, log_p, log_m = self._jsd_logs(x, y)
            q, p = log_q.exp(), log_p.exp()
            a = (1 - self.spec.beta) * q * (log_q - log_m)
            loss = self.spec.beta * (p * (log_p - log_m)).sum(dim=1) + a.sum(dim=1)
            sums += torch.stack([loss, a.sum(dim=1)], dim=1)
        loss, self.sum_a = self.over.sum(sums).unbind(1)
        return loss

    def _jsd_logs(self, x, y):
        """log q, log p, log M = log(β·p + (1 − β)·q) of a block (r, Cb) each."""
        beta = self.spec.beta
        log_q, log_p = x - self.lse_s[:, None], y - self.lse_t[:, None]
        return log_q, log_p, torch.logaddexp(log_p + math.log(beta), log_q + math.log1p(-beta))

    def _topk_stats(self) -> torch.Tensor:
        """Pass 1: lse_S, the logsumexp of the classes outside K, and x at the K ids; the rest on (r, K)."""
        teacher, rows = self.spec.teacher, self.chunk.rows
        ids = teacher.topk_ids[rows] - self.spec.offset  # (r, K) local ids
        y = teacher.topk_logits[rows].to(self.chunk.acc) / self.spec.temperature  # (r, K)
        r, k = ids.shape
        like = y.new_empty(0)
        student, tail = _RunningLSE(r, 0, like), _RunningLSE(r, 0, like)
        xk = y.new_zeros(r, k)
        for s, e, x, _ in self.chunk:
            cols, inside = _topk_columns(ids, s, e)
            padded = F.pad(x, (0, 1), value=float("-inf"))  # (r, Cb + 1): column Cb takes the ids outside
            xk += torch.where(inside, padded.gather(1, cols), 0.0)
            student.add(x)
            tail.add(padded.scatter_(1, cols, float("-inf")))  # the classes outside K (every write is −inf)
        student.combine(self.over)
        tail.combine(self.over)
        xk = self.over.sum(xk)
        self.lse_s = student.lse
        lse_t = y.logsumexp(dim=1)
        p = torch.exp(y - lse_t[:, None])  # (r, K)
        delta = xk - y
        c = (p * delta).sum(dim=1)
        d = delta - c[:, None]
        log_rest = tail.lse - lse_t - c  # log R
        self.far = (d.amax(dim=1) > far_apart(d.dtype)) | (log_rest > far_apart(d.dtype))
        inner = (p * torch.expm1(d)).sum(dim=1) + torch.exp(log_rest.masked_fill(self.far, 0.0))
        log_sum = torch.where(self.far, self.lse_s - lse_t - c, torch.log1p(inner.masked_fill(self.far, 0.0)))
        s = d - log_sum[:, None]  # log q − log p on K
        u = torch.where(self.far[:, None], torch.exp(xk - self.lse_s[:, None]) - p, p * torch.expm1(s))
        self.sum_u = u.sum(dim=1) + torch.exp(tail.lse - self.lse_s)  # Σ_K u + the student's mass outside K
        self.ids, self.u_k = ids, u
        return self.sum_u - (p * s).sum(dim=1)

    def grad(self, start: int, stop: int, x: torch.Tensor, y: torch.Tensor | None, scale: torch.Tensor) -> torch.Tensor:
        """d(row loss)/d z_S of the block [start, stop) (r, Cb) times ``scale`` (r, 1), in the compute dtype."""
        div, beta = self.spec.divergence, self.spec.beta  # scale: T·(row weight), the T² of the loss times the 1/T of x
        if y is None:  # top-K: q·(1 − Σu) outside K, u − q·Σu on K
            q = torch.sub(x, self.lse_s[:, None]).exp_()
            g = F.pad(q.mul_(1 - self.sum_u[:, None]), (0, 1))  # (r, Cb + 1)
            cols, _ = _topk_columns(self.ids, start, stop)
            q_k = torch.exp(F.pad(x, (0, 1)).gather(1, cols) - self.lse_s[:, None])  # (r, K); ids outside: unused
            g.scatter_(1, cols, self.u_k - q_k * self.sum_u[:, None])  # ids outside the block all write column Cb
            return g[:, : stop - start].mul_(scale)
        if div == "forward_kl" or (div == "jsd" and beta == 0):
            p, d = getattr(self, "p_d", None) or (torch.sub(y, self.lse_t[:, None]).exp_(), torch.sub(x, y).sub_(self.c[:, None]))
            u = d.sub_(self.log_sum[:, None]).expm1_().mul_(p)  # p·expm1(s), s = d − log_sum, in d's buffer
            if self.far.any():
                u = torch.where(self.far[:, None], torch.exp(x - self.lse_s[:, None]) - p, u)
            return u.mul_(1 - self.sum_u[:, None]).sub_(p.mul_(self.sum_u[:, None])).mul_(scale)  # T·(u − q·Σu), q = p + u
        if div == "reverse_kl" or beta == 1:
            q = torch.sub(x, self.lse_s[:, None]).exp_()
            return torch.sub(x, y).sub_((self.shift + self.kl)[:, None]).mul_(q).mul_(scale)  # T·q·(log q − log p − KL)
        log_q, _, log_m = self._jsd_logs(x, y)
        q = log_q.exp()
        a = (1 - beta) * q * (log_q - log_m)
        return a.sub_(q * self.sum_a[:, None]).mul_(scale)  # T·(a − q·Σa)


def kd_pass(spec: Spec, hidden, weight, bias, row_weight):
    """Per-row loss (N,) of the linear KD and, with ``row_weight`` (N,), the gradients of Σ row_weight·loss:
    (d/dhidden (N, d), d/dweight (C, d), d/dbias (C,) or None) in the compute dtype, else None."""
    mm, acc = matmul_dtypes(hidden, weight)
    teacher_mm = spec.teacher.matmul_dtype()
    n, d = hidden.shape
    t2 = spec.temperature**2
    grads = row_weight is not None
    if grads:  # G is cast to ``mm`` with row weights of largest magnitude 1, as chunked.chunked_pass
        row_weight, scale = unit_row_weight(row_weight)
    with torch.autocast(hidden.device.type, enabled=False):
        h, w = hidden.to(mm), weight.to(mm)
        b = None if bias is None else bias.to(mm)
        loss = h.new_empty(n, dtype=acc)
        if grads:
            gh = h.new_zeros(n, d, dtype=acc)
            gw = h.new_zeros(w.shape, dtype=acc)
            gb = None if b is None else h.new_zeros(w.shape[0], dtype=acc)
        for s in range(0, n, spec.chunk_rows):
            rows = slice(s, s + spec.chunk_rows)
            hr = h[rows]
            chunk = _Chunk(spec, rows, hr, w, b, acc, teacher_mm)
            div = _Rows(chunk)
            loss[rows] = (div.stats() * t2).masked_fill_(~spec.keep[rows], 0.0)
            if not grads:
                continue
            rw = row_weight[rows].to(acc)[:, None]  # (r, 1)
            for start, stop, x, y in chunk:  # the gradient pass
                g = div.grad(start, stop, x, y, rw * spec.temperature).to(mm)  # (r, Cb)
                _addmm_(gh[rows], g, w[start:stop])
                _addmm_(gw[start:stop], g.t(), hr)
                if gb is not None:
                    gb[start:stop] += g.sum(dim=0)
                del g
            del chunk, div, x, y  # the chunk's kept logits and p, d: freed before the next chunk's are made
    if not grads:
        return loss, None
    for g in (gh, gw, gb):
        if g is not None:
            g.mul_(scale)
    return loss, (gh, gw, gb)


class _LinearKD(torch.autograd.Function):
    """The reduced loss, every gradient computed in the forward; the backward scales them (as
    ``chunked._ChunkedLinearLoss``: reduction "none" under unequal upstream gradients reruns the pass)."""

    @staticmethod
    def forward(ctx, spec, hidden, weight, bias):
        row_weight = reduction_scale(spec.keep, spec.reduction, matmul_dtypes(hidden, weight)[1])
        loss, grads = kd_pass(spec, hidden, weight, bias, row_weight)
        ctx.spec, ctx.grads, ctx.row_weight = spec, grads, row_weight
        ctx.save_for_backward(hidden, weight, bias)
        return reduce_loss(loss, spec.keep, spec.reduction)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_loss):
        saved, spec = ctx.saved_tensors, ctx.spec
        g = grad_loss.to(ctx.row_weight.dtype)
        grads, ctx.grads = ctx.grads, None
        scale = g
        if spec.reduction == "none":
            kept = g[spec.keep]
            same = kept.numel() == 0 or bool((kept == kept[0]).all())
            scale = (kept[0] if kept.numel() else 0.0) if same else None
        if grads is None or scale is None:
            _, grads = kd_pass(spec, *saved, ctx.row_weight * g)
        else:
            for x in grads:
                if x is not None:
                    x.mul_(scale)
        return (None, *(None if gr is None else gr.to(x.dtype) for gr, x in zip(grads, saved)))


def check_kd_options(divergence: str, beta: float, temperature: float, reduction: str, topk: bool) -> None:
    """Raise ``ValueError`` naming a bad option (and the valid ones)."""
    check_reduction(reduction)
    if divergence not in DIVERGENCES:
        raise ValueError(f"divergence must be one of {DIVERGENCES}, got {divergence!r}")
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"beta must be in [0, 1], got {beta}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    forward = divergence == "forward_kl" or (divergence == "jsd" and beta == 0)
    if topk and not forward:
        raise ValueError(
            f"a top-K teacher supports divergence='forward_kl' only, got {divergence!r}"
            + (f" with beta={beta}" if divergence == "jsd" else "")
            + ": its p is 0 outside the K classes, so KL(q‖p) is infinite and JSD's M needs the whole p"
        )


def teacher_rows(
    n: int,
    lead: tuple[int, ...],
    local_classes: int,
    num_classes: int,
    device: torch.device,
    *,
    logits=None,
    hidden=None,
    weight=None,
    bias=None,
    topk=None,
) -> Teacher:
    """The teacher as (N, ·) rows, detached, its form checked against the student's N rows and C classes."""
    forms = {"teacher_logits": logits is not None, "teacher_hidden and teacher_weight": hidden is not None,
             "teacher_topk": topk is not None}
    if sum(forms.values()) != 1 or (hidden is None) != (weight is None):
        given = [k for k, v in forms.items() if v] + (["teacher_weight"] if weight is not None and hidden is None else [])
        raise ValueError(f"give exactly one teacher: {list(forms)}; got {given or 'none'}")
    if logits is not None:
        if tuple(logits.shape) != (*lead, local_classes) or not logits.is_floating_point():
            raise ValueError(
                f"teacher_logits must be floating point of shape {(*lead, local_classes)}, got {tuple(logits.shape)} {logits.dtype}"
            )
        return Teacher(logits=logits.detach().reshape(n, local_classes).to(device))
    if hidden is not None:
        if tuple(hidden.shape[:-1]) != lead or weight.dim() != 2 or weight.shape[0] != local_classes:
            raise ValueError(
                f"teacher_hidden must be {(*lead, 'd_T')} and teacher_weight ({local_classes}, d_T), "
                f"got {tuple(hidden.shape)} and {tuple(weight.shape)}"
            )
        if weight.shape[1] != hidden.shape[-1] or (bias is not None and tuple(bias.shape) != (local_classes,)):
            raise ValueError(
                f"teacher_weight {tuple(weight.shape)} and teacher_bias {None if bias is None else tuple(bias.shape)} "
                f"do not fit teacher_hidden {tuple(hidden.shape)}"
            )
        return Teacher(hidden=hidden.detach().reshape(n, -1), weight=weight.detach(),
                       bias=None if bias is None else bias.detach())
    ids, values = topk
    if ids.shape != values.shape or tuple(ids.shape[:-1]) != lead or ids.dim() != len(lead) + 1:
        raise ValueError(f"teacher_topk must be (ids, logits) of shape {(*lead, 'K')} each, got {tuple(ids.shape)}, {tuple(values.shape)}")
    check_target_dtype(ids)
    if not values.is_floating_point():
        raise ValueError(f"teacher_topk logits must be floating point, got {values.dtype}")
    k = ids.shape[-1]
    ids, values = ids.reshape(n, k).long(), values.detach().reshape(n, k)
    if k < 1 or bool(((ids < 0) | (ids >= num_classes)).any()):
        bad = ids[(ids < 0) | (ids >= num_classes)]
        raise ValueError(f"teacher_topk ids must be K >= 1 class ids in [0, {num_classes}), got K={k}"
                         + (f" and id {int(bad[0])}" if bad.numel() else ""))
    ordered = ids.sort(dim=1).values
    if bool((ordered[:, 1:] == ordered[:, :-1]).any()):
        raise ValueError("teacher_topk ids must be distinct within a row, got a repeated id")
    return Teacher(topk_ids=ids, topk_logits=values)


def linear_kd_loss(
    student_hidden: torch.Tensor,
    student_weight: torch.Tensor,
    *,
    student_bias: torch.Tensor | None = None,
    teacher_logits: torch.Tensor | None = None,
    teacher_hidden: torch.Tensor | None = None,
    teacher_weight: torch.Tensor | None = None,
    teacher_bias: torch.Tensor | None = None,
    teacher_topk: tuple[torch.Tensor, torch.Tensor] | None = None,
    divergence: str = "forward_kl",
    beta: float = 0.5,
    temperature: float = 1.0,
    target: torch.Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    chunk_size: int | str = "auto",
    class_chunk_size: int | None = None,
) -> torch.Tensor:
    """T²·D(teacher ‖ softmax(student_hidden @ student_weight.T / T)), streamed (module docstring).

    Args:
        student_hidden: (..., d) h. student_weight: (C, d) W. student_bias: (C,) or None.
        teacher_logits: (..., C); or teacher_hidden (..., d_T) with teacher_weight (C, d_T) and
            teacher_bias (C,) or None; or teacher_topk = (ids (..., K), logits (..., K)), the
            teacher's K largest logits. Exactly one. The teacher gets no gradient.
        divergence: "forward_kl" (KL(p‖q), the expm1 form), "reverse_kl" (KL(q‖p)) or "jsd"
            (β·KL(p‖M) + (1 − β)·KL(q‖M), M = β·p + (1 − β)·q). beta: JSD's β in [0, 1].
        temperature: T > 0; the loss is T² times the divergence of softmax(z/T)'s.
        target: (...) labels whose ``ignore_index`` rows count for nothing (None: every row counts).
        reduction: "mean" over the kept rows, "sum", or "none" -> (...), 0 at ignored rows.
        chunk_size: rows at a time: an int or "auto" (``chunked.auto_chunk_size`` at the device's budget).
        class_chunk_size: classes at a time within a row chunk; None: all C, the chunk's logits kept.

    Returns:
        The loss, in float32 for float16/bfloat16 weights (float64 for float64); gradients flow to
        ``student_hidden``, ``student_weight`` and ``student_bias``.
    """
    lead, num_classes = tuple(student_hidden.shape[:-1]), student_weight.shape[0]
    check_student(student_hidden, student_weight, student_bias)
    check_kd_options(divergence, beta, temperature, reduction, teacher_topk is not None)
    check_chunk_size(chunk_size)
    check_class_chunk_size(class_chunk_size)
    h = student_hidden.reshape(-1, student_hidden.shape[-1])  # (..., d) -> (N, d)
    n = h.shape[0]
    teacher = teacher_rows(n, lead, num_classes, num_classes, h.device, logits=teacher_logits,
                           hidden=teacher_hidden, weight=teacher_weight, bias=teacher_bias, topk=teacher_topk)
    keep = kept_rows(target, lead, ignore_index, num_classes, h.device)
    rows = chunk_size
    if rows == "auto":
        rows = auto_chunk_size(n, class_chunk_size or num_classes, chunk_logits(h.device, student_weight.numel()))
    spec = Spec(teacher, keep, reduction, divergence, float(beta), float(temperature), rows, class_chunk_size, Collectives())
    loss = run(spec, h, student_weight, student_bias)
    return loss.reshape(lead) if reduction == "none" else loss


def run(spec: Spec, hidden, weight, bias) -> torch.Tensor:
    """The reduced loss: through :class:`_LinearKD` where a gradient is wanted, else one pass without gradients."""
    params = (hidden, weight, bias)
    if torch.is_grad_enabled() and any(p is not None and p.requires_grad for p in params):
        return _LinearKD.apply(spec, *params)
    return reduce_loss(kd_pass(spec, *params, None)[0], spec.keep, spec.reduction)


def check_student(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    if hidden.dim() < 1 or weight.dim() != 2 or hidden.shape[-1] != weight.shape[1]:
        raise ValueError(
            f"student_hidden must be (..., d) and student_weight (C, d), got {tuple(hidden.shape)} and {tuple(weight.shape)}"
        )
    if not hidden.is_floating_point() or not weight.is_floating_point():
        raise ValueError(f"student_hidden and student_weight must be floating point, got {hidden.dtype}, {weight.dtype}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(f"student_bias must be ({weight.shape[0]},), got {tuple(bias.shape)}")


def check_class_chunk_size(size) -> None:
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise ValueError(f"class_chunk_size must be an int >= 1 or None, got {size!r}")


def kept_rows(target, lead: tuple[int, ...], ignore_index: int, num_classes: int, device) -> torch.Tensor:
    """(N,) bool: the rows whose target is not ``ignore_index`` (all, without a target)."""
    n = math.prod(lead)
    if target is None:
        return torch.ones(n, dtype=torch.bool, device=device)
    if tuple(target.shape) != lead:
        raise ValueError(f"target must be {lead}, student_hidden's leading shape, got {tuple(target.shape)}")
    check_target_dtype(target)
    return check_target_range(target.reshape(n).to(device), num_classes, ignore_index)
