"""Where the targets sit among the logits: the top-k regime diagnostics of sparse-softmax.

Sparse-softmax (Sun et al. 2021, eq. 2-3) trains logsumexp over Ω_k, the k largest logits,
minus the target's logit. Whether that resembles the full softmax depends on the regime: with
the target inside Ω_k nearly always (a fine-tuned model) the two losses differ only in the tail;
with the target usually outside, the loss rewards flattening the top of the logits. Three
numbers per evaluated split tell the regimes apart, for a given k:

- ``target_in_topk``: share of targets inside Ω_k (rank <= k);
- ``median_target_rank``: median rank of the target (1 = the largest logit);
- ``logits_near_kth``: mean number of logits within ``near`` (0.1) of the k-th largest, the k-th
  itself included (a flat top gives hundreds).

Ranks count strictly larger scores: rank = 1 + |{j : z_j > z_t}|, so a target tied with the k-th
logit counts as inside. Scores may be logits or any per-row shift of them (log-probabilities of
the full softmax): ranks and differences are the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ..losses.machinery.head import LinearHead, OutputHead

NEAR = 0.1  # "within 0.1 of the k-th logit"


def head_scores(head: OutputHead, hidden: torch.Tensor) -> torch.Tensor:
    """hidden (..., d) -> (..., C) scores with the logits' order and differences.

    The logits for a single-projection head (the sparse head's log-probabilities are −inf outside
    Ω_k, so they would not do); the full log-probabilities otherwise (e.g. adaptive softmax).
    """
    return head.logits(hidden) if isinstance(head, LinearHead) else head.log_probs(hidden)


def topk_rows(scores: torch.Tensor, target: torch.Tensor, k: int, near: float = NEAR) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row target rank and number of scores near the k-th.

    Args:
        scores: (N, C) logits (or a per-row shift of them).
        target: (N,) class ids in [0, C).
        k: the support size, 1 <= k <= C.
        near: the distance to the k-th largest score that counts as near.

    Returns:
        rank (N,) long, 1 for the largest score; near_kth (N,) long, scores within ``near`` of the
        k-th largest (that one included).
    """
    if scores.dim() != 2 or target.shape != scores.shape[:1]:
        raise ValueError(f"scores must be (N, C) and target (N,), got {tuple(scores.shape)} and {tuple(target.shape)}")
    if not 1 <= k <= scores.shape[1]:
        raise ValueError(f"k must be in [1, {scores.shape[1]}], got {k}")
    scores = scores.float() if scores.dtype in (torch.float16, torch.bfloat16) else scores
    zt = scores.gather(1, target[:, None])  # (N, 1)
    rank = 1 + (scores > zt).sum(1)
    kth = scores.topk(k, dim=1).values[:, -1:]  # (N, 1)
    near_kth = ((scores - kth).abs() <= near).sum(1)
    return rank, near_kth


@dataclass
class TopkDiagnostics:
    """Accumulates :func:`topk_rows` over batches; :meth:`metrics` summarises them.

    Attributes:
        k: the support size the diagnostics are for.
    """

    k: int
    ranks: list[torch.Tensor] = field(default_factory=list)
    near: list[torch.Tensor] = field(default_factory=list)

    def update(self, scores: torch.Tensor, target: torch.Tensor) -> None:
        """Add a batch: scores (N, C), target (N,)."""
        rank, near_kth = topk_rows(scores, target, min(self.k, scores.shape[1]))
        self.ranks.append(rank.cpu())
        self.near.append(near_kth.cpu())

    def metrics(self, prefix: str) -> dict[str, float]:
        """``<prefix>target_in_topk``, ``median_target_rank``, ``logits_near_kth``, ``diagnostics_k``, ``diagnostic_targets``."""
        if not self.ranks:
            return {}
        rank, near_kth = torch.cat(self.ranks).double(), torch.cat(self.near).double()
        return {
            f"{prefix}target_in_topk": float((rank <= self.k).double().mean()),
            f"{prefix}median_target_rank": float(rank.quantile(0.5)),
            f"{prefix}logits_near_kth": float(near_kth.mean()),
            f"{prefix}diagnostics_k": float(self.k),
            f"{prefix}diagnostic_targets": float(len(rank)),
        }


def diagnostics_k(head: OutputHead, default: int) -> int:
    """The k the diagnostics use: a sparse head's own k, otherwise ``default`` (the paired sparse runs' k)."""
    k = getattr(head, "support_k", None)
    return int(k) if k is not None else int(default)
