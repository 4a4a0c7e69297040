"""``predict``, ``class_log_probs`` and ``topk_log_probs`` of a chunked head over class blocks.

What :class:`~softmax_zoo.losses.methods.softmax.SoftmaxHead` and its subclasses run when ``chunk_size``
is set: one pass of :func:`~softmax_zoo.losses.machinery.streaming.scan_classes`, holding at most
``chunk_size`` × C logits (a whole (N, C) block only when N <= chunk_size). The head's inference
distribution normalises either over all classes (softmax, stable: log p_j = z_j − logsumexp_C z)
or over its top-k support (sparse-softmax, Sun et al. 2021: log p_j = z_j − logsumexp_{Ω_k} z for
j ∈ Ω_k, −inf elsewhere), which ``head.support_k`` says (None or k).

Equal to the plain paths (full matrix) up to rounding, with two documented differences:
``predict`` is the argmax of the logits (the plain path takes the argmax of the rounded
log-probabilities, which can tie where the logits do not), and a sparse head's support Ω_k
breaks ties at its k-th logit by the lowest class id (the plain path by ``torch.topk``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..machinery._core import check_k, compute_dtype
from ..machinery.head import check_classes, exclusion_mask
from ..machinery.streaming import class_block_size, scan_classes


def _tempered(head, h: torch.Tensor):
    """(h / T, bias / T): the tempered logits z / T = (h / T) W^T + b / T (``temperature``, ``options.py``)."""
    t = head.options.temperature
    if t == 1.0:
        return h, head.bias
    return h / t, None if head.bias is None else head.bias / t


def _scan(head, h: torch.Tensor, tracks=()):
    """scan_classes for ``head`` on h (N, d), with its normaliser (of the logits at the head's temperature).

    Returns:
        (log-normaliser (N,), support (values (N, k), ids (N, k)) or None, the tracks' top-k, NaN rows (N,)).
    """
    head.check_hidden(h, head.weight)
    block = class_block_size(h.shape[0], head.num_classes, head.chunk_size)
    k = head.support_k
    support = [] if k is None else [(k, None)]
    h, bias = _tempered(head, h)
    lse, tops, nan = scan_classes(h, head.weight, bias, block, lse=k is None, tracks=support + list(tracks))
    if k is None:
        return lse, None, tops, nan
    (values, ids), *tops = tops
    return values.logsumexp(dim=1), (values, ids), tops, nan


def lean_predict(head, hidden: torch.Tensor) -> torch.Tensor:
    """hidden (..., d) -> (...,) argmax of the logits; ``ignore_index`` in NaN rows."""
    h = hidden.reshape(-1, head.in_features)  # (N, d)
    head.check_hidden(h, head.weight)
    block = class_block_size(h.shape[0], head.num_classes, head.chunk_size)
    _, [(_, ids)], nan = scan_classes(h, head.weight, head.bias, block, tracks=[(1, None)])
    return ids[:, 0].masked_fill(nan, head.ignore_index).reshape(hidden.shape[:-1])


def _in_support(ids: torch.Tensor, support_ids: torch.Tensor) -> torch.Tensor:
    """ids (N, K), support_ids (N, k) -> (N, K, k) bool: ids[n, i] == support_ids[n, j]."""
    return ids.unsqueeze(2) == support_ids.unsqueeze(1)


def lean_topk_log_probs(head, hidden: torch.Tensor, k: int, exclude=None):
    """:meth:`OutputHead.topk_log_probs` over class blocks (same return; −inf entries' ids unspecified)."""
    check_k(k, head.num_classes)
    h = hidden.reshape(-1, head.in_features)  # (N, d)
    mask = exclusion_mask(exclude, head.num_classes, h.device)
    norm, support, [(z, ids)], nan = _scan(head, h, [(k, mask)])
    logp = z - norm.unsqueeze(1)  # (N, k)
    if support is not None:  # outside Ω_k: −inf; Ω_k is an upper set, so the order stays
        logp = logp.masked_fill(~_in_support(ids, support[1]).any(dim=2), float("-inf"))
    shape = (*hidden.shape[:-1], k)
    return logp.masked_fill(nan.unsqueeze(1), float("nan")).reshape(shape), ids.reshape(shape)


def _class_logits(head, h: torch.Tensor, classes: torch.Tensor) -> torch.Tensor:
    """Logits of the given classes: h (N, d), classes (K,) or (N, K) -> (N, K) in the compute dtype."""
    bias = None if head.bias is None else head.bias[classes]
    if classes.dim() == 1:
        z = F.linear(h, head.weight[classes], bias)  # (N, K)
    else:
        z = torch.bmm(head.weight[classes], h.unsqueeze(2)).squeeze(2)  # (N, K, d) @ (N, d, 1)
        z = z if bias is None else z + bias
    return z.to(compute_dtype(z.dtype)) / head.options.temperature


def lean_class_log_probs(head, hidden: torch.Tensor, classes) -> torch.Tensor:
    """:meth:`OutputHead.class_log_probs` over class blocks (same arguments and return)."""
    lead = hidden.shape[:-1]
    classes = check_classes(classes, lead, head.num_classes).to(hidden.device)
    h = hidden.reshape(-1, head.in_features)  # (N, d)
    norm, support, _, nan = _scan(head, h)
    if classes.dim() > 1:
        classes = classes.reshape(h.shape[0], -1)  # (N, K)
    if support is None:
        logp = _class_logits(head, h, classes) - norm.unsqueeze(1)
    else:  # the class's support logit, −inf if it is not in Ω_k
        values, ids = support
        rows = classes.expand(h.shape[0], -1)  # (N, K)
        inside = torch.where(_in_support(rows, ids), values.unsqueeze(1), float("-inf"))  # (N, K, k)
        logp = inside.amax(dim=2) - norm.unsqueeze(1)
    logp = logp.masked_fill(nan.unsqueeze(1), float("nan"))
    return logp.reshape(*lead, logp.shape[1])
