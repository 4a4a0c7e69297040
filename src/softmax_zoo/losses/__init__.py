"""The shared losses module: every softmax variant as a pure function and as an output head.

Heads (``nn.Module``, interface in :mod:`softmax_zoo.losses.machinery.head`)::

    SoftmaxHead, StableSoftmaxHead, SparseSoftmaxHead, AdaptiveSoftmaxHead, SampledSoftmaxHead

``SoftmaxHead``, ``StableSoftmaxHead`` and ``SparseSoftmaxHead`` take ``chunk_size`` (an int or
"auto"): the loss and its gradients are then computed ``chunk_size`` rows at a time, never
holding the (N, C) logits (:mod:`softmax_zoo.losses.machinery.chunked`); their ``predict``,
``class_log_probs`` and ``topk_log_probs`` then run over blocks of classes
(:mod:`softmax_zoo.losses.machinery.lean_inference`, :mod:`softmax_zoo.losses.machinery.streaming`).

Functions on logits (N, C) and targets (N,)::

    softmax_cross_entropy, stable_cross_entropy, stable_kd_loss,
    sparse_softmax, sparse_softmax_cross_entropy

Every head takes the loss options ``z_loss``, ``return_lse``, ``class_weight``, ``softcap``,
``shift``, ``return_token_accuracy``, ``temperature``, ``return_entropy`` and
``return_target_log_prob`` (:mod:`softmax_zoo.losses.machinery.options`; with ``return_*`` it
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

The registry of variants (:mod:`softmax_zoo.losses.machinery.registry`; a head registers where it is
defined, under its loss config's name)::

    register_variant, variants, variant, variant_label, variant_title

A new variant is a :class:`RowLoss` (its ``rows``, ``grad`` and ``log_probs``, computing in
``compute_dtype(z.dtype)``) and a ``SoftmaxHead`` subclass whose ``row_loss()`` returns it::

    RowLoss, compute_dtype

Samplers for :class:`SampledSoftmaxHead`::

    UniformSampler, UnigramSampler, QuadraticKernelSampler, SoftmaxSampler,
    CentredQuadraticKernelSampler (our extension: the kernel on logits centred on the mean row's)

Modules::

    methods     the variants, one module each: softmax, stable, stable_kd, sparse, adaptive, sampled and its samplers, ...
    machinery   what every variant is built on: the head interface, the row loss, options, chunking, memory, the registry
    parallel    the vocabulary-parallel forms: the output weight's rows split over ranks
    functional  linear_cross_entropy: the chunked linear + loss of any logit-level variant
    _moved      the modules' import paths before the split into methods/, machinery/ and parallel/: they warn once
    reference   plain-torch references the losses are tested and benchmarked against
"""

from ._moved import keep_old_paths
from .functional import linear_cross_entropy
from .machinery._core import compute_dtype
from .machinery.head import LinearHead, OutputHead
from .machinery.options import HeadOutput
from .machinery.registry import register_variant, variant, variant_label, variant_title, variants
from .machinery.row_loss import RowLoss
from .methods.adaptive import AdaptiveSoftmaxHead, optimal_cutoffs
from .methods.centred_kernel_sampler import CentredQuadraticKernelSampler
from .methods.kernel_sampler import QuadraticKernelSampler
from .methods.linear_kd import linear_kd_loss
from .methods.sampled import SampledSoftmaxHead
from .methods.samplers import Sampler, SoftmaxSampler, UniformSampler, UnigramSampler
from .methods.softmax import SoftmaxHead, softmax_cross_entropy
from .methods.sparse import SparseSoftmaxHead, sparse_softmax, sparse_softmax_cross_entropy
from .methods.stable import StableSoftmaxHead, stable_cross_entropy
from .methods.stable_kd import stable_kd_loss
from .parallel.vocab_parallel import VocabShard, vocab_parallel_cross_entropy, vocab_parallel_linear_cross_entropy
from .parallel.vocab_parallel_head import VocabParallelHead
from .parallel.vocab_parallel_kd import vocab_parallel_stable_kd_loss
from .parallel.vocab_parallel_linear_kd import vocab_parallel_linear_kd_loss

keep_old_paths()  # softmax_zoo.losses.<module> as before the split: the moved module, with a warning

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
