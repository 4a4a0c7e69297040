"""Negative samplers for :class:`~softmax_zoo.losses.SampledSoftmaxHead` (Blanc & Rendle 2018).

Every sampler draws, for each row ``i`` of ``hidden`` (N, d), ``m`` classes with replacement from
a distribution ``q_i`` over the C classes (``q`` may depend on the row's hidden state and on the
output weight), and reports ``log q`` of what it drew. With ``exclude`` (N,) — the rows' targets —
it draws from ``q̃_i = q_i`` restricted to the other classes and renormalised,
``q̃_ij = q_ij / (1 − q_i,t)``, and reports ``log q̃``: the distribution the sampled softmax needs
(see :mod:`softmax_zoo.losses.methods.sampled`). Exclusion is exact (the target is never drawn), and done
without a per-draw Python loop.

Samplers draw from torch's global generator (``torch.manual_seed`` fixes the draws), or from a
generator of their own once :meth:`Sampler.seed` gave them one (the engine does so under DDP, with
seed + rank, so that the ranks draw different negatives); they never take part in autograd:
their outputs carry no gradient. Those that compute q from the hidden states
or the weight run outside autocast (:func:`outside_autocast`), in float32 (float64 inputs stay
float64): under a GPU's bfloat16 autocast their matmuls would otherwise round, and log q would no
longer be that of the distribution drawn from.

The quadratic-kernel tree sampler lives in :mod:`softmax_zoo.losses.methods.kernel_sampler`.
"""

from __future__ import annotations

import functools
import math

import torch

from ..machinery import memory


def outside_autocast(method):
    """Run a sampler's ``method(self, tensor, ...)`` with autocast off on the first tensor's device."""

    @functools.wraps(method)
    def wrapper(self, tensor: torch.Tensor, *args, **kwargs):
        with torch.autocast(tensor.device.type, enabled=False):
            return method(self, tensor, *args, **kwargs)

    return wrapper


class Sampler:
    """Interface of a negative sampler.

    Attributes:
        num_classes: C if the sampler is built for a fixed number of classes, else ``None``
            (samplers that take C from the weight they are given).
    """

    num_classes: int | None = None
    generator: torch.Generator | None = None  # None: torch's global generator

    def step_buffers(self, rows: int, num_samples: int, num_classes: int, dim: int, free: int | None = None) -> dict[str, int]:
        """Bytes of the buffers larger than the (rows, m) draws that sampling for ``rows`` rows holds (as
        ``OutputHead.step_buffers``; d = ``dim``). None here."""
        return {}

    def seed(self, seed: int, device: torch.device) -> None:
        """Draw from now on from a generator of its own on ``device``, seeded with ``seed``."""
        self.generator = torch.Generator(device).manual_seed(seed)

    def sample(
        self,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        num_samples: int,
        exclude: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw ``num_samples`` classes per row, with replacement.

        Args:
            hidden: (N, d) query rows (only their number and device matter to fixed samplers).
            weight: (C, d) output embeddings.
            num_samples: m >= 1.
            exclude: optional (N,) class per row that must not be drawn (the target).
            bias: optional (C,) output bias; only samplers that use the logits read it.

        Returns:
            ids: (N, m) long class ids.
            log_q: (N, m) float log-probability of each drawn id under q (or q̃ with ``exclude``).
        """
        raise NotImplementedError

    def log_prob(
        self,
        hidden: torch.Tensor,
        weight: torch.Tensor,
        ids: torch.Tensor,
        exclude: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """(N, k) log q (or log q̃ with ``exclude``; −inf at an excluded id) of ``ids`` (N, k)."""
        raise NotImplementedError

    def refresh(self, weight: torch.Tensor) -> None:
        """Update internal state after ``weight`` changed (a no-op for stateless samplers)."""

    @staticmethod
    def check_num_samples(num_samples: int) -> None:
        """Draws are with replacement, so any m >= 1 is valid (the head asks for m < C)."""
        if num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {num_samples}")


def _excluded_log_q(log_q: torch.Tensor, log_q_target: torch.Tensor) -> torch.Tensor:
    """log q̃ = log q − log(1 − q_t) for (N, k) ``log_q`` and the (N,) target log-probability."""
    return log_q - torch.log1p(-log_q_target.exp())[:, None]


class UniformSampler(Sampler):
    """q_j = 1/C; with ``exclude`` q̃_j = 1/(C − 1), drawn exactly by shifting ids >= t up by one.

    Args:
        num_classes: C >= 2.
    """

    def __init__(self, num_classes: int) -> None:
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {num_classes}")
        self.num_classes = num_classes

    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        self.check_num_samples(num_samples)
        n, C = hidden.shape[0], self.num_classes
        if exclude is None:
            ids = torch.randint(0, C, (n, num_samples), device=hidden.device, generator=self.generator)
            return ids, torch.full((n, num_samples), -math.log(C), device=hidden.device)
        ids = torch.randint(0, C - 1, (n, num_samples), device=hidden.device, generator=self.generator)
        ids = ids + (ids >= exclude[:, None]).long()  # uniform on [0, C) \ {t}
        return ids, torch.full((n, num_samples), -math.log(C - 1), device=hidden.device)

    def log_prob(self, hidden, weight, ids, exclude=None, bias=None):
        if exclude is None:
            return torch.full(ids.shape, -math.log(self.num_classes), device=ids.device)
        out = torch.full(ids.shape, -math.log(self.num_classes - 1), device=ids.device)
        return out.masked_fill(ids == exclude[:, None], -math.inf)


class UnigramSampler(Sampler):
    """q_j ∝ counts_j ** power (power 0.75 as in word2vec; 1.0 = the empirical unigram).

    Draws by inverse CDF (float64 cumulative sums, ``searchsorted``). With ``exclude`` the uniform
    number is drawn on the mass without the target and shifted past the target's interval, which
    is exactly q̃; the rare draw that float rounding puts on the target is redrawn.

    Args:
        counts: (C,) non-negative class counts (e.g. from the prepared vocabulary), at least two
            of them positive (so that q̃ exists for every target).
        power: exponent >= 0 applied to the counts.
    """

    def __init__(self, counts: torch.Tensor, power: float = 1.0) -> None:
        counts = torch.as_tensor(counts, dtype=torch.float64)
        if counts.dim() != 1:
            raise ValueError(f"counts must be a 1-d tensor (C,), got shape {tuple(counts.shape)}")
        if bool((counts < 0).any()) or not bool(torch.isfinite(counts).all()):
            bad = counts[(counts < 0) | ~torch.isfinite(counts)][0].item()
            raise ValueError(f"counts must be finite and >= 0, got {bad}")
        if power < 0:
            raise ValueError(f"power must be >= 0, got {power}")
        mass = counts.pow(power)
        positive = int((mass > 0).sum())
        if positive < 2:
            raise ValueError(
                f"counts must have at least two positive entries (all zero or a single class "
                f"cannot be sampled without the target), got {positive}"
            )
        self.num_classes = counts.numel()
        self.power = power
        self.probs = mass / mass.sum()  # (C,) float64
        self.cdf = torch.cumsum(self.probs, 0)  # (C,) inclusive, float64

    def _to(self, device: torch.device) -> None:
        if self.cdf.device != device:
            self.probs, self.cdf = self.probs.to(device), self.cdf.to(device)

    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        self.check_num_samples(num_samples)
        self._to(hidden.device)
        n, total = hidden.shape[0], self.cdf[-1]
        if exclude is None:
            u = (1 - torch.rand(n, num_samples, dtype=torch.float64, device=hidden.device, generator=self.generator)) * total
            ids = torch.searchsorted(self.cdf, u).clamp_(max=self.num_classes - 1)
            return ids, self.probs[ids].log().float()
        q_t = self.probs[exclude][:, None]  # (n, 1)
        lo_t = self.cdf[exclude][:, None] - q_t  # start of the target's interval
        ids = torch.empty(n, num_samples, dtype=torch.long, device=hidden.device)
        todo = torch.ones(n, num_samples, dtype=torch.bool, device=hidden.device)
        while bool(todo.any()):  # one pass but for draws that rounding put on the target
            u = (1 - torch.rand(n, num_samples, dtype=torch.float64, device=hidden.device, generator=self.generator)) * (total - q_t)
            u = torch.where(u > lo_t, u + q_t, u)  # skip the target's interval
            new = torch.searchsorted(self.cdf, u).clamp_(max=self.num_classes - 1)
            ids = torch.where(todo, new, ids)
            todo = (ids == exclude[:, None]) | (self.probs[ids] == 0)
        return ids, _excluded_log_q(self.probs[ids].log(), q_t[:, 0].log()).float()

    def log_prob(self, hidden, weight, ids, exclude=None, bias=None):
        self._to(ids.device)
        log_q = self.probs[ids].log()
        if exclude is None:
            return log_q.float()
        out = _excluded_log_q(log_q, self.probs[exclude].log())
        return out.masked_fill(ids == exclude[:, None], -math.inf).float()


class SoftmaxSampler(Sampler):
    """The exact model distribution q = softmax(hidden @ weight.T + bias): O(C·d) per row.

    The oracle of Blanc & Rendle (2018), section 2: with it the sampled softmax loss equals the full
    cross-entropy for every draw and the expected gradient is the full gradient. Useful for bias
    studies and tests, never faster than the full softmax. Computed in float32 (float64 if an
    input is float64), outside autocast.
    """

    def _log_q(self, hidden, weight, bias, exclude):
        dtype = torch.float64 if torch.float64 in (hidden.dtype, weight.dtype) else torch.float32
        logits = torch.nn.functional.linear(hidden.to(dtype), weight.to(dtype), None if bias is None else bias.to(dtype))
        if exclude is not None:
            logits = logits.scatter(1, exclude[:, None], -math.inf)
        return torch.log_softmax(logits, dim=1)  # (N, C)

    def step_buffers(self, rows: int, num_samples: int, num_classes: int, dim: int, free: int | None = None) -> dict[str, int]:
        what = f"the softmax sampler's ({rows:,}, {num_classes:,}) logits x {memory.LOGIT_BUFFERS}"
        return {what: memory.logits_bytes(rows, num_classes)}

    @torch.no_grad()
    @outside_autocast
    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        self.check_num_samples(num_samples)
        log_q = self._log_q(hidden, weight, bias, exclude)
        ids = torch.multinomial(log_q.exp(), num_samples, replacement=True, generator=self.generator)
        return ids, log_q.gather(1, ids)

    @torch.no_grad()
    @outside_autocast
    def log_prob(self, hidden, weight, ids, exclude=None, bias=None):
        return self._log_q(hidden, weight, bias, exclude).gather(1, ids)
