"""Device memory of the heads: the chunk budget per device, and the check that a buffer fits.

The chunk budget (:func:`chunk_logits`) is the number of logits a chunked head holds at once. Each
chunk re-reads the whole (C, d) weight and adds into its (C, d) gradient, so chunks of few rows
are slow. On a CPU the budget is ``_core.CHUNK_LOGITS`` (2^24) or the weight's C·d logits,
whichever is more: chunks of at least d rows, whose buffer is at most the size of the (C, d)
gradient the pass holds anyway. On a GPU the budget is 1/16 of the free memory in float32 logits (a chunk holds
one or two (rows, C) buffers: one for softmax, stable and sparse, one more with the
softcap), between 2^24 and 2^30 logits, e.g. the 8,192 rows of a C = 128,000 batch in one chunk
and 7 chunks of 1,171 rows (1,353 fit) at C = 793,471 on an empty 141 GB GPU.

:func:`check_fits` refuses a buffer larger than the device's free memory before it is allocated,
naming the sizes; on a CPU nothing is checked (the host's memory is not the limit this guards).

Each head states the bytes of its largest per-step buffers (``OutputHead.step_buffers``, with
:func:`logits_bytes` for (rows, C) logits); its own ``check_fits`` calls and the run's memory plan
before training (``softmax_zoo.memory_plan``) both read those sizes.
"""

from __future__ import annotations

import torch

from ..machinery._core import CHUNK_LOGITS

GPU_FREE_SHARE = 16  # a chunk's float32 logits take at most 1/16 of the free memory ...
GPU_CHUNK_LOGITS_MAX = 1 << 30  # ... and at most 2^30 logits (4 GiB in float32)
LOGIT_BUFFERS = 4  # (rows, C) float32 buffers a head holds at once: logits, their softmax, its gradient, a temporary


def free_bytes(device: torch.device) -> int | None:
    """Free memory of a CUDA ``device`` in bytes (``torch.cuda.mem_get_info``); None elsewhere."""
    if device.type != "cuda":
        return None
    return torch.cuda.mem_get_info(device)[0]


def chunk_logits(device: torch.device, weight_numel: int = 0) -> int:
    """Logits per chunk of a chunked head with a (C, d) weight of ``weight_numel`` elements on ``device``
    (module docstring)."""
    return budget_logits(free_bytes(device), weight_numel)


def budget_logits(free: int | None, weight_numel: int = 0) -> int:
    """Logits per chunk on a device with ``free`` bytes free (None: a CPU, CHUNK_LOGITS or
    ``weight_numel`` = C·d if more)."""
    if free is None:
        return max(CHUNK_LOGITS, weight_numel)
    return max(CHUNK_LOGITS, min(GPU_CHUNK_LOGITS_MAX, free // (4 * GPU_FREE_SHARE)))


def logits_bytes(rows: int, classes: int) -> int:
    """Bytes of the LOGIT_BUFFERS float32 (rows, classes) buffers a head computing those logits holds at once."""
    return 4 * LOGIT_BUFFERS * rows * classes


def gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


def check_fits(nbytes: int, device: torch.device, what: str, hint: str = "") -> None:
    """Raise ``torch.OutOfMemoryError`` naming ``what``, its size and the free memory if ``nbytes``
    exceeds the free memory of ``device`` (CUDA only)."""
    free = free_bytes(device)
    if free is not None and nbytes > free:
        raise torch.OutOfMemoryError(f"{what} needs {gib(nbytes)}, {device} has {gib(free)} free{hint}")
