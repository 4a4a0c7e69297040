"""The functional core every loss shares: input checks, the ignore mask and the reduction.

Conventions (every loss and head in this package):
    logits: (N, C) float; target: (N,) of any integer dtype (int8 ... int64, uint8), used as
    long; ``ignore_index=-100`` rows contribute nothing.

    ``reduction``: "none" -> (N,) with 0 at ignored rows, "sum", or "mean" over the non-ignored
    rows. A batch whose rows are all ignored gives "none": zeros, "sum": 0, "mean": nan (0/0, as
    ``torch.nn.functional.cross_entropy``), and in every case finite zero gradients.

    Dtypes (:func:`compute_dtype`): float16/bfloat16 logits are normalised in float32, float32
    and float64 as they are. The loss is returned in that compute dtype (float32 for
    float16/bfloat16 logits), the gradient w.r.t. the logits has the logits' dtype, and a head's
    ``log_probs`` is in the compute dtype of its logits (a float64 model keeps float64).

    NaN: a row whose hidden state or logits hold a NaN gets NaN log-probabilities in every
    column, and ``predict`` returns ``ignore_index`` for it (no class is more probable than
    another in such a row).
"""

from __future__ import annotations

import numbers

import torch

REDUCTIONS = ("mean", "sum", "none")

# The memory budget of every chunked path, in logits held at once: 2^24, 64 MiB in float32. A
# chunked head's chunk_size="auto" rows (``chunked.py``), its inference's class blocks
# (``streaming.py``) and the adaptive softmax's chunks (``adaptive.py``) are sized to it. Few
# chunks keep the per-op overhead small; the cap keeps the footprint independent of N.
CHUNK_LOGITS = 1 << 24


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float16/bfloat16 are computed in float32; float32 and float64 as they are."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def matmul_dtypes(hidden: torch.Tensor, weight: torch.Tensor) -> tuple[torch.dtype, torch.dtype]:
    """(matmul dtype, softmax dtype) of a fused linear + loss: autocast's dtype when it is on (as
    ``F.linear`` would use), else the weight's; the softmax in float32 (float64 for float64)."""
    mm = weight.dtype
    if torch.is_autocast_enabled(hidden.device.type) and mm != torch.float64:
        mm = torch.get_autocast_dtype(hidden.device.type)
    return mm, torch.float64 if mm == torch.float64 else torch.float32


def check_positive(**sizes: int) -> None:
    """Raise ``ValueError`` naming the first size below 1: ``check_positive(k=k, batch_size=b)``."""
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")


def check_k(k: int, num_classes: int | None) -> None:
    """Raise ``ValueError`` unless 1 <= k <= num_classes (None: the classes are not known yet, k >= 1)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise ValueError(f"k must be an int, got {k!r}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if num_classes is not None and k > num_classes:
        raise ValueError(f"k must be <= the number of classes {num_classes}, got {k}")


def check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


def check_label_smoothing(label_smoothing: float) -> None:
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")


def check_logits_target(logits: torch.Tensor, target: torch.Tensor, ignore_index: int) -> torch.Tensor:
    """Validate ``logits`` (N, C) and ``target`` (N,); return the (N,) bool mask of kept rows.

    Raises:
        ValueError: naming the bad shape, dtype or target value. Nothing is clamped.
    """
    if logits.dim() != 2:
        raise ValueError(f"logits must be (N, C), got shape {tuple(logits.shape)}")
    if not logits.is_floating_point():
        raise ValueError(f"logits must be floating point, got {logits.dtype}")
    if target.dim() != 1 or target.shape[0] != logits.shape[0]:
        raise ValueError(
            f"target must be (N,) = ({logits.shape[0]},) to match logits {tuple(logits.shape)}, "
            f"got {tuple(target.shape)}"
        )
    check_target_dtype(target)
    if target.device != logits.device:
        raise ValueError(f"target is on {target.device} but logits on {logits.device}")
    return check_target_range(target, logits.shape[1], ignore_index)


def check_target_dtype(target: torch.Tensor) -> None:
    """Raise ``ValueError`` unless ``target`` has an integer dtype (bool is not one)."""
    if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
        raise ValueError(f"target must be an integer tensor, got {target.dtype}")


def check_target_range(target: torch.Tensor, num_classes: int, ignore_index: int) -> torch.Tensor:
    """Return the (N,) mask of non-ignored rows; raise if a kept target is outside [0, C)."""
    keep = target != ignore_index
    bad = keep & ((target < 0) | (target >= num_classes))
    if bool(bad.any()):
        value = int(target[bad][0])
        raise ValueError(
            f"target {value} is outside [0, {num_classes}) and is not ignore_index={ignore_index}"
        )
    return keep


def check_ce_inputs(
    logits: torch.Tensor, target: torch.Tensor, ignore_index: int, reduction: str, label_smoothing: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every check a cross-entropy variant makes on its arguments, in one call.

    Returns:
        ``keep`` (N,) bool, the non-ignored rows, and ``safe_target`` (N,) long, the target with
        ignored rows pointed at class 0 (so that gathers stay in range; their loss is masked).
    """
    check_reduction(reduction)
    check_label_smoothing(label_smoothing)
    keep = check_logits_target(logits, target, ignore_index)
    return keep, target.long().masked_fill(~keep, 0)


def reduce_loss(loss: torch.Tensor, keep: torch.Tensor, reduction: str, count: torch.Tensor | None = None) -> torch.Tensor:
    """Reduce per-row ``loss`` (N,) whose ignored rows are already 0, with ``keep`` (N,) bool.

    ``count``: the "mean"'s denominator, the number of kept rows unless given (with class weights,
    Σ of the kept rows' weights, ``options.py``). "mean" over a zero count is nan, through ``where``
    so that the gradient is 0, not 0 · (1/0).
    """
    if reduction == "none":
        return loss
    total = loss.sum()
    if reduction == "sum":
        return total
    count = keep.sum() if count is None else count
    return torch.where(count > 0, total / torch.where(count > 0, count, 1), float("nan"))


def reduction_scale(keep: torch.Tensor, reduction: str, dtype: torch.dtype, count: torch.Tensor | None = None) -> torch.Tensor:
    """(N,) weight d loss / d row-loss for a reduction: what a custom backward multiplies by
    (``count`` as in :func:`reduce_loss`)."""
    scale = keep.to(dtype)
    if reduction == "mean":
        count = keep.sum() if count is None else count
        scale = scale / torch.where(count > 0, count, 1).to(dtype)  # a zero count: all 0, not 0/0
    return scale
