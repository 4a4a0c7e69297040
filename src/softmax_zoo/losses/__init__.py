"""The shared losses module: every softmax variant as a pure function and as an output head.

Heads (``nn.Module``, interface in :mod:`softmax_zoo.losses.head`)::

    SoftmaxHead, StableSoftmaxHead, SparseSoftmaxHead, AdaptiveSoftmaxHead, SampledSoftmaxHead

``SoftmaxHead``, ``StableSoftmaxHead`` and ``SparseSoftmaxHead`` take ``chunk_size`` (an int or
"auto"): the loss and its gradients are then computed ``chunk_size`` rows at a time, never
holding the (N, C) logits (:mod:`softmax_zoo.losses.chunked`); their ``predict``,
``class_log_probs`` and ``topk_log_probs`` then run over blocks of classes
(:mod:`softmax_zoo.losses.lean_inference`, :mod:`softmax_zoo.losses.streaming`).

Functions on logits (N, C) and targets (N,)::

    softmax_cross_entropy, stable_cross_entropy, stable_kd_loss,
    sparse_softmax, sparse_softmax_cross_entropy

Every head takes the loss options ``z_loss``, ``return_lse``, ``class_weight``, ``softcap``,
``shift``, ``return_token_accuracy``, ``temperature``, ``return_entropy`` and
``return_target_log_prob`` (:mod:`softmax_zoo.losses.options`; with ``return_*`` it
returns a :class:`HeadOutput`), or refuses one it cannot give, by name.

The memory-lean linear + loss as a function (any logit-level variant, by its registered name)::

    linear_cross_entropy(hidden, weight, target, *, bias=None, loss="softmax", chunk_size="auto", ...)

Memory-lean distillation: forward KL (the expm1 form), reverse KL or JSD(β) of the student's
hidden @ weight.T and the teacher's logits, hidden states and weight, or top-K, streamed over
rows and classes::

    linear_kd_loss(student_hidden, student_weight, *, teacher_logits=... | teacher_hidden=..., teacher_weight=...
                   | teacher_topk=(ids, logits), divergence="forward_kl", beta=0.5, temperature=1.0, target=None, ...)

Vocabulary-parallel (each rank holds rows [start, stop) of the output weight; torch.distributed)::

    VocabParallelHead(head, VocabShard(start, stop, group)), vocab_parallel_cross_entropy,
    vocab_parallel_linear_cross_entropy, vocab_parallel_stable_kd_loss, vocab_parallel_linear_kd_loss

Every entry point names a variant and sets it the same way: its registered name and its head's
keywords (``SparseSoftmaxHead(d, C, k=20)``, ``sparse_softmax_cross_entropy(logits, target, k=20)``,
``linear_cross_entropy(..., loss="sparse_softmax", k=20)``,
``vocab_parallel_linear_cross_entropy(hidden, weight_rows, target, shard, C, loss="sparse_softmax", k=20)``);
the row-loss classes behind them are internal.

The registry of variants (:mod:`softmax_zoo.losses.registry`; a head registers where it is
defined, under its loss config's name)::

    register_variant, variants, variant, variant_label, variant_title

A new variant is a :class:`RowLoss` (its ``rows``, ``grad`` and ``log_probs``, computing in
``compute_dtype(z.dtype)``) and a ``SoftmaxHead`` subclass whose ``row_loss()`` returns it::

    RowLoss, compute_dtype

Samplers for :class:`SampledSoftmaxHead`::

    UniformSampler, UnigramSampler, QuadraticKernelSampler, SoftmaxSampler,
    CentredQuadraticKernelSampler (our extension: the kernel on logits centred on the mean row's)

Modules::

    head                    the interface every variant implements (OutputHead, LinearHead)
    registry                the one list of variants: each head registers where it is defined
    softmax                 full softmax cross-entropy, the baseline
    stable                  stable softmax cross-entropy, through the logit gaps to the target
    stable_kd               stable knowledge-distillation loss (the expm1 form)
    sparse                  sparse-softmax: softmax over the k largest logits
    adaptive                adaptive softmax (Grave et al. 2017)
    adaptive_cutoffs        adaptive-softmax cluster boundaries from the cost model of Grave et al. 2017
    sampled                 sampled softmax (Blanc & Rendle 2018)
    samplers                uniform, unigram and softmax negative samplers
    kernel_sampler          the quadratic-kernel sampler's divide-and-conquer tree (Blanc & Rendle 2018)
    centred_kernel_sampler  the centred quadratic-kernel sampler (our extension)
    distill                 knowledge-distillation losses: the KL form beside stable_kd_loss
    linear_kd               memory-lean distillation: forward/reverse KL and JSD of hidden @ W.T, over rows and classes
    row_loss                a logit-level loss written once: per-row values and their logit gradient
    options                 the loss options (z-loss, lse, softcap, temperature, entropy, ...), once for every path
    chunked                 linear + loss ``chunk_size`` rows at a time, never the (N, C) logits
    sparse_linear           the linear layer's backward for a logit gradient of a few nonzeros a row (sparse-softmax)
    memory                  the chunk budget per device, and the check that a buffer fits the free memory
    functional              linear_cross_entropy: the chunked linear + loss of any logit-level variant
    lean_inference          predict / class_log_probs / topk_log_probs of a chunked head over class blocks
    streaming               inference of a linear head over blocks of classes
    vocab_parallel          the output weight's rows split over ranks: VocabShard, the sharded row losses
    vocab_parallel_head     VocabParallelHead: any linear or sampled head on its shard of the vocabulary
    vocab_parallel_kd       the stable distillation loss on sharded student and teacher logits
    vocab_parallel_linear_kd  linear_kd with the classes split over ranks: its row statistics combined by collectives
    vocab_parallel_sampled  a sampled head's negatives drawn once over the whole split vocabulary
    _core                   input checks, the ignore mask and the reduction every loss shares
    reference               plain-torch references the losses are tested and benchmarked against
"""

from ._core import compute_dtype
from .adaptive import AdaptiveSoftmaxHead, optimal_cutoffs
from .centred_kernel_sampler import CentredQuadraticKernelSampler
from .functional import linear_cross_entropy
from .head import LinearHead, OutputHead
from .kernel_sampler import QuadraticKernelSampler
from .linear_kd import linear_kd_loss
from .options import HeadOutput
from .registry import register_variant, variant, variant_label, variant_title, variants
from .row_loss import RowLoss
from .sampled import SampledSoftmaxHead
from .samplers import Sampler, SoftmaxSampler, UniformSampler, UnigramSampler
from .softmax import SoftmaxHead, softmax_cross_entropy
from .sparse import SparseSoftmaxHead, sparse_softmax, sparse_softmax_cross_entropy
from .stable import StableSoftmaxHead, stable_cross_entropy
from .stable_kd import stable_kd_loss
from .vocab_parallel import VocabShard, vocab_parallel_cross_entropy, vocab_parallel_linear_cross_entropy
from .vocab_parallel_head import VocabParallelHead
from .vocab_parallel_kd import vocab_parallel_stable_kd_loss
from .vocab_parallel_linear_kd import vocab_parallel_linear_kd_loss

__all__ = [
    "OutputHead",
    "LinearHead",
    "HeadOutput",
    "SoftmaxHead",
    "StableSoftmaxHead",
    "SparseSoftmaxHead",
    "AdaptiveSoftmaxHead",
    "SampledSoftmaxHead",
    "Sampler",
    "UniformSampler",
    "UnigramSampler",
    "QuadraticKernelSampler",
    "CentredQuadraticKernelSampler",
    "SoftmaxSampler",
    "softmax_cross_entropy",
    "stable_cross_entropy",
    "stable_kd_loss",
    "linear_kd_loss",
    "sparse_softmax",
    "sparse_softmax_cross_entropy",
    "optimal_cutoffs",
    "linear_cross_entropy",
    "register_variant",
    "RowLoss",
    "compute_dtype",
    "variants",
    "variant",
    "variant_label",
    "variant_title",
    "VocabShard",
    "VocabParallelHead",
    "vocab_parallel_cross_entropy",
    "vocab_parallel_linear_cross_entropy",
    "vocab_parallel_stable_kd_loss",
    "vocab_parallel_linear_kd_loss",
]
