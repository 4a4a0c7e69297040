"""The interface every softmax variant implements.

A head owns the output projection (or is handed a tied weight, e.g. the input embeddings), so
that variants that need the hidden states (adaptive, sampled) and variants that need only the
logits (softmax, stable, sparse) swap freely in any model::

    head = SparseSoftmaxHead(d, C, k=10)       # or hydra.utils.instantiate(cfg.loss, in_features=d, num_classes=C)
    loss = head(hidden, target)                # (..., d), (...) -> scalar (reduction="mean")
    logp = head.log_probs(hidden)              # (..., C): the distribution the variant defines at inference
    pred = head.predict(hidden)                # (...,)
    logp_t = head.class_log_probs(hidden, ids) # (..., K): log p of the classes ids (K,) or (..., K)
    top, ids = head.topk_log_probs(hidden, k)  # (..., k) each: the k most probable classes

:class:`OutputHead` is the interface (adaptive softmax implements it with its own clusters);
:class:`LinearHead` adds the single (C, d) projection that the logit-level variants and the
sampled head share.
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from ..machinery import memory
from ..machinery._core import check_k, check_reduction, check_target_dtype, compute_dtype
from ..machinery.options import LossOptions, check_loss_options, class_weight_tensor, reshape_output, shift_steps, shift_target
from ..machinery.streaming import topk_lowest_index


def nan_rows_to_ignore(scores: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """scores (..., C) -> (...,) argmax, with ``ignore_index`` in the rows holding a NaN.

    ``argmax`` alone would return the first NaN's column, a class that is no more probable than
    any other.
    """
    return scores.argmax(dim=-1).masked_fill_(scores.isnan().any(dim=-1), ignore_index)


def check_classes(classes, lead_shape: torch.Size, num_classes: int) -> torch.Tensor:
    """Validate class ids for :meth:`OutputHead.class_log_probs`; return them as long.

    Args:
        classes: (K,) ids shared by every row, or (*lead_shape, K) ids per row.
        lead_shape: the hidden states' leading shape (...,).
    """
    classes = torch.as_tensor(classes)
    check_target_dtype(classes)
    if classes.dim() != 1 and tuple(classes.shape[:-1]) != tuple(lead_shape):
        raise ValueError(
            f"classes must be (K,) or (*{tuple(lead_shape)}, K) to match hidden, got {tuple(classes.shape)}"
        )
    bad = (classes < 0) | (classes >= num_classes)
    if bool(bad.any()):
        raise ValueError(f"class {int(classes[bad][0])} is outside [0, {num_classes})")
    return classes.long()


def exclusion_mask(exclude, num_classes: int, device: torch.device) -> torch.Tensor | None:
    """Class ids (a sequence or 1-D integer tensor) -> (C,) bool mask, or None for None/empty."""
    if exclude is None or len(exclude) == 0:
        return None
    ids = check_classes(exclude, torch.Size(), num_classes)
    if ids.dim() != 1:
        raise ValueError(f"exclude must be a 1-D list of class ids, got shape {tuple(ids.shape)}")
    return torch.zeros(num_classes, dtype=torch.bool, device=device).index_fill_(0, ids.to(device), True)


class OutputHead(nn.Module):
    """Interface of an output layer with its loss.

    Args:
        in_features: d, the hidden size.
        num_classes: C, the number of classes (vocabulary size for language models).
        ignore_index: target value whose rows contribute nothing.
        reduction: "mean" (over non-ignored rows), "sum" or "none".
        z_loss, return_lse, class_weight, softcap, shift, return_token_accuracy, temperature,
            return_entropy, return_target_log_prob: the loss options, defined in
            :mod:`softmax_zoo.losses.machinery.options`; a head refuses those in its
            :attr:`refused_options`, naming the option and why.
    """

    #: option name -> why this head cannot give it (``options.OPTIONS`` lists them all).
    refused_options: ClassVar[dict[str, str]] = {}

    def __init__(
        self, in_features: int, num_classes: int, *, ignore_index: int = -100, reduction: str = "mean",
        z_loss: float = 0.0, return_lse: bool = False, class_weight=None, softcap: float | None = None,
        shift: bool | int = False, return_token_accuracy: bool = False, temperature: float = 1.0,
        return_entropy: bool = False, return_target_log_prob: bool = False,
    ) -> None:
        super().__init__()
        if in_features < 1:
            raise ValueError(f"in_features must be >= 1, got {in_features}")
        if num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, got {num_classes}")
        check_reduction(reduction)
        self.in_features = in_features
        self.num_classes = num_classes
        self.ignore_index = ignore_index
        self.reduction = reduction
        check_loss_options(z_loss=z_loss, softcap=softcap, class_weight=class_weight, num_classes=num_classes,
                           temperature=temperature, shift=shift)
        self.options = LossOptions(
            z_loss=float(z_loss), softcap=None if softcap is None else float(softcap), shift=shift_steps(shift),
            return_lse=bool(return_lse), return_token_accuracy=bool(return_token_accuracy),
            temperature=float(temperature), return_entropy=bool(return_entropy),
            return_target_log_prob=bool(return_target_log_prob),
        )
        self.register_buffer("class_weight", class_weight_tensor(class_weight))
        for name in self.options.given(class_weight):
            if name in self.refused_options:
                raise ValueError(f"{type(self).__name__} does not support {name}: {self.refused_options[name]}")

    @classmethod
    def check_options(cls, *, reduction: str = "mean", **options) -> None:
        """Raise ``ValueError`` for a constructor option that is bad whatever the sizes (``k=0``), so that
        a loss config is checked before any data or model is built (the constructor checks them too).

        Each head checks its own options and passes the rest on to its base class; options this
        check does not know are left to the constructor.
        """
        check_reduction(reduction)
        check_loss_options(**options)

    def step_buffers(self, rows: int, free: int | None = None) -> dict[str, int]:
        """Bytes of the largest buffers one training step of ``rows`` rows allocates in this head, by what they hold.

        ``free``: the device's free bytes (None: a CPU), for heads whose chunks follow it. Read by the
        memory plan before training (``softmax_zoo.memory_plan``). This default: a head that computes
        the whole (rows, C) logits (``memory.logits_bytes``).
        """
        return {f"({rows:,}, {self.num_classes:,}) logits x {memory.LOGIT_BUFFERS}": memory.logits_bytes(rows, self.num_classes)}

    def shifted(self, target: torch.Tensor) -> torch.Tensor:
        """``target`` as the loss reads it: shifted by ``shift`` positions (``options.shift_target``)."""
        return shift_target(target, self.ignore_index, self.options.shift) if self.options.shift else target

    def check_hidden(self, hidden: torch.Tensor, weight: torch.Tensor) -> None:
        """Raise ``ValueError`` if ``hidden`` (..., d) does not fit ``weight`` (·, d)."""
        if hidden.shape[-1] != weight.shape[-1]:
            raise ValueError(f"hidden has {hidden.shape[-1]} features but the head expects {weight.shape[-1]}")
        if hidden.device != weight.device:
            raise ValueError(f"hidden is on {hidden.device} but the weight on {weight.device}")
        # Under autocast a bf16/fp16 hidden meets an fp32 weight by design; elsewhere it is a bug.
        if hidden.dtype != weight.dtype and not torch.is_autocast_enabled(hidden.device.type):
            raise ValueError(f"hidden is {hidden.dtype} but the weight is {weight.dtype}")

    def forward(self, hidden: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """hidden (..., d), target (...) -> loss (scalar, or target's shape for reduction="none")."""
        raise NotImplementedError

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> (..., C) log-probabilities of the distribution used at inference."""
        raise NotImplementedError

    def predict(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> (...,) most probable class; ``ignore_index`` where a row holds a NaN."""
        return nan_rows_to_ignore(self.log_probs(hidden), self.ignore_index)

    def class_log_probs(self, hidden: torch.Tensor, classes) -> torch.Tensor:
        """hidden (..., d), classes (K,) or (..., K) -> (..., K) log-probabilities of those classes.

        Entries of :meth:`log_probs` (e.g. ``classes = target[..., None]`` for the likelihood).
        This default builds the full matrix; heads with a lean path override it.
        """
        classes = check_classes(classes, hidden.shape[:-1], self.num_classes).to(hidden.device)
        logp = self.log_probs(hidden)  # (..., C)
        return logp[..., classes] if classes.dim() == 1 else logp.gather(-1, classes)

    def topk_log_probs(self, hidden: torch.Tensor, k: int, exclude=None) -> tuple[torch.Tensor, torch.Tensor]:
        """The k most probable classes of :meth:`log_probs`, leaving out the ids in ``exclude``.

        ``exclude`` only removes classes from the choice; the log-probabilities stay normalised
        over the head's whole distribution (renormalise over the k with ``logsumexp`` if wanted).

        Returns:
            (log-probabilities (..., k), class ids (..., k)), most probable first; among equal
            values the lowest class id first (``streaming.topk_lowest_index``). A row holding a
            NaN gets NaN values (its ids are then unspecified). Fewer than k classes with a
            finite log-probability: the rest are −inf, their ids unspecified.
        """
        check_k(k, self.num_classes)
        logp = self.log_probs(hidden).reshape(-1, self.num_classes)  # (N, C)
        mask = exclusion_mask(exclude, self.num_classes, logp.device)
        nan = logp.isnan().any(dim=1, keepdim=True)  # (N, 1)
        values, ids = topk_lowest_index(logp if mask is None else logp.masked_fill(mask, float("-inf")), k)
        shape = (*hidden.shape[:-1], k)
        return values.masked_fill(nan, float("nan")).reshape(shape), ids.reshape(shape)

    def extra_repr(self) -> str:
        given = self.options.given(self.class_weight)
        extra = "".join(f", {name}={getattr(self.options, name, True)!r}" for name in given if name != "class_weight")
        extra += ", class_weight=(C,)" if "class_weight" in given else ""
        return f"in_features={self.in_features}, num_classes={self.num_classes}, reduction={self.reduction!r}" + extra


class LinearHead(OutputHead):
    """An :class:`OutputHead` with one projection ``logits = hidden @ weight.T + bias``.

    Subclasses working on logits implement :meth:`loss_from_logits`.

    Args:
        weight: optional (C, d) parameter to tie the projection to (e.g. input embeddings); it
            stays the same Parameter, so it is trained by both users.
        bias: add a learnt (C,) bias.
        **kwargs: ``ignore_index``, ``reduction`` (see :class:`OutputHead`).
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        weight: torch.Tensor | None = None,
        bias: bool = True,
        **kwargs,
    ) -> None:
        super().__init__(in_features, num_classes, **kwargs)
        if weight is None:
            weight = nn.Parameter(torch.empty(num_classes, in_features))
            nn.init.kaiming_uniform_(weight, a=math.sqrt(5))  # nn.Linear's initialisation
        elif tuple(weight.shape) != (num_classes, in_features):
            raise ValueError(
                f"tied weight must be (num_classes, in_features) = ({num_classes}, {in_features}), "
                f"got {tuple(weight.shape)}"
            )
        self.weight = weight
        self.bias = nn.Parameter(torch.zeros(num_classes)) if bias else None

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """hidden (..., d) -> logits (..., C)."""
        self.check_hidden(hidden, self.weight)
        return F.linear(hidden, self.weight, self.bias)

    def loss_from_logits(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """logits (N, C), target (N,) -> loss reduced by ``self.reduction``."""
        raise NotImplementedError

    def forward(self, hidden: torch.Tensor, target: torch.Tensor):
        """hidden (..., d), target (...) -> the loss, or ``options.HeadOutput`` with ``return_lse``/``return_token_accuracy``."""
        target = self.shifted(target)
        logits = self.logits(hidden).reshape(-1, self.num_classes)  # (..., C) -> (N, C)
        return reshape_output(self.loss_from_logits(logits, target.reshape(-1)), target.shape, self.reduction)

    def log_probs(self, hidden: torch.Tensor) -> torch.Tensor:
        """Full softmax in the logits' compute dtype (float32 for float16/bfloat16, else theirs)."""
        logits = self.logits(hidden)
        return torch.log_softmax(logits.to(compute_dtype(logits.dtype)), dim=-1)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", bias={self.bias is not None}"
