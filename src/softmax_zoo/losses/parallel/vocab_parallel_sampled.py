"""Negatives for a vocabulary-parallel sampled softmax, drawn once over the whole vocabulary.

Every rank must train on the same m negatives per row, drawn from the sampler's q over all C
classes (Blanc & Rendle 2018; :mod:`softmax_zoo.losses.methods.sampled` for the loss). Two cases:

- q independent of the weight (:class:`UniformSampler`, :class:`UnigramSampler`): every rank
  draws over the whole vocabulary from its own generator, so that the generators stay in step
  (dropout in a replicated backbone stays identical), and the group's first rank's draws are
  broadcast. With the same seed, the draws are those of one process.
- q from the weight (:class:`QuadraticKernelSampler`, :class:`SoftmaxSampler`): a two-level draw.
  Rank r's share of row i's mass, M_ir = Σ_{j∈r, j≠t_i} K(h_i, w_j) (the kernel tree's root sum
  on rank r, or the sum of exp logits), is all-gathered; each draw picks a rank with
  probability M_ir / Σ_r M_ir, then that rank descends its own tree (or draws from its own
  softmax) for it, and reports log q̃ = log q̃_local + log M_ir − log Σ_r M_ir. The product is
  the one-process q̃ exactly (a mixture over the ranks' disjoint classes); the draws differ from
  one process's, the distribution does not. Draws are exchanged with one all_reduce.

The centred kernel sampler is refused: its centring uses the mean row of the whole weight.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F

from ..methods.centred_kernel_sampler import CentredQuadraticKernelSampler
from ..methods.kernel_sampler import QuadraticKernelSampler
from ..methods.samplers import Sampler, SoftmaxSampler, UniformSampler, UnigramSampler
from ..parallel.vocab_parallel import VocabShard, _all_gather, _all_reduce

WHOLE_VOCABULARY = (UniformSampler, UnigramSampler)  # q does not read the weight
PER_SHARD = (QuadraticKernelSampler, SoftmaxSampler)  # q from the weight: rank mass, then a local draw


def check_sampler(sampler: Sampler) -> None:
    """Raise ``TypeError`` for a sampler without a vocabulary-parallel draw, with the reason."""
    if isinstance(sampler, CentredQuadraticKernelSampler):
        raise TypeError(
            "CentredQuadraticKernelSampler has no vocabulary-parallel form: its kernel is centred on the mean "
            "row of the whole weight, which no rank holds; use QuadraticKernelSampler"
        )
    if not isinstance(sampler, WHOLE_VOCABULARY + PER_SHARD):
        raise TypeError(
            f"{type(sampler).__name__} has no vocabulary-parallel draw; supported: "
            f"{[c.__name__ for c in WHOLE_VOCABULARY + PER_SHARD]}"
        )


def _from_first_rank(x: torch.Tensor, group) -> torch.Tensor:
    dist.broadcast(x, group=group, group_src=0)
    return x


def draw_negatives(sampler, hidden, weight, bias, target, num_samples: int, shard: VocabShard):
    """m negatives per row over all C classes, the same on every rank.

    Args:
        hidden: (n, d) kept rows, the same on every rank. weight: (C_r, d) this rank's rows (the
            sampler is refreshed from them). bias: (C_r,) or None. target: (n,) global ids, excluded.

    Returns:
        ids (n, m) global class ids and log q̃ (n, m) float32 under the one-process q̃.
    """
    group = shard.group
    if isinstance(sampler, WHOLE_VOCABULARY):
        ids, log_q = sampler.sample(hidden, weight, num_samples, exclude=target)
        return _from_first_rank(ids.contiguous(), group), _from_first_rank(log_q.contiguous(), group)
    local_t, owned = shard.local_target(target, torch.ones_like(target, dtype=torch.bool))
    log_mass = _log_mass(sampler, hidden, weight, bias, local_t, owned)  # (n,) this rank's share
    every = torch.stack(_all_gather(log_mass.double(), group), dim=1)  # (n, P)
    log_total = every.logsumexp(dim=1, keepdim=True)
    cum = (every - log_total).exp().cumsum(dim=1)  # (n, P)
    u = 1 - _from_first_rank(torch.rand(*hidden.shape[:1], num_samples, dtype=torch.float64, device=hidden.device), group)
    rank_of = torch.searchsorted(cum, u * cum[:, -1:])  # first rank with cum >= u ∈ (0, 1]
    rank_of = rank_of.clamp_(max=every.shape[1] - 1)  # (n, m)
    seed = int(_from_first_rank(torch.randint(0, 2**62, (1,)), group))
    devices = [hidden.device] if hidden.device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):  # the ranks' local descents use their own streams
        torch.manual_seed(seed + dist.get_rank(group))
        ids, local_log_q = _local_draws(sampler, hidden, weight, bias, local_t, owned, log_mass > float("-inf"),
                                        num_samples)
    mine = rank_of == dist.get_rank(group)
    log_q = local_log_q.double() + (log_mass[:, None].double() - log_total)
    ids = torch.where(mine, ids + shard.start, 0)
    log_q = torch.where(mine, log_q, 0.0)
    return _all_reduce(ids, group), _all_reduce(log_q, group).float()


def _log_mass(sampler, hidden, weight, bias, local_t, owned) -> torch.Tensor:
    """(n,) log of this shard's unnormalised q mass without the row's target (on its owning rank)."""
    if isinstance(sampler, SoftmaxSampler):
        z = F.linear(hidden, weight, bias).double()
        z = z.scatter(1, local_t[:, None], torch.where(owned[:, None], float("-inf"), z.gather(1, local_t[:, None])))
        return z.logsumexp(dim=1)
    sampler._ensure(weight)  # the tree of this rank's rows
    h = sampler._query(hidden)
    q_t = (h * sampler._W.view(-1, h.shape[1])[local_t]).sum(1) ** 2  # (n,) (h·w_t)², used on owned rows
    return torch.where(owned, sampler._log_z(h, q_t), sampler._log_z(h, None))


def _local_draws(sampler, hidden, weight, bias, local_t, owned, alive, num_samples):
    """Local ids (n, m) and log q̃ (n, m) from this rank's classes, excluding the target where owned;
    rows without mass here (``alive`` False: a one-class shard holding the target) draw nothing."""
    n = hidden.shape[0]
    ids = torch.zeros(n, num_samples, dtype=torch.long, device=hidden.device)
    log_q = torch.zeros(n, num_samples, dtype=torch.float32, device=hidden.device)
    for rows, exclude in ((owned & alive, local_t[owned & alive]), (~owned & alive, None)):
        if bool(rows.any()):
            i, q = sampler.sample(hidden[rows], weight, num_samples, exclude=exclude, bias=bias)
            ids[rows], log_q[rows] = i, q.float()
    return ids, log_q
