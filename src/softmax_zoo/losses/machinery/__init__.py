"""What every variant is built on: the head interface, the row loss, the options, chunking, memory, the registry.

Nothing here names a variant: a variant (``softmax_zoo.losses.methods``) is a row loss and a head on this machinery,
and the vocabulary-parallel forms (``softmax_zoo.losses.parallel``) split it over ranks.

Modules::

    head            the interface every variant implements (OutputHead, LinearHead)
    registry        the one list of variants: each head registers where it is defined
    row_loss        a logit-level loss written once: per-row values and their logit gradient
    options         the loss options (z-loss, lse, softcap, temperature, entropy, ...), once for every path
    chunked         linear + loss ``chunk_size`` rows at a time, never the (N, C) logits
    sparse_linear   the linear layer's backward for a logit gradient of a few nonzeros a row (sparse-softmax)
    lean_inference  predict / class_log_probs / topk_log_probs of a chunked head over class blocks
    streaming       inference of a linear head over blocks of classes
    memory          the chunk budget per device, and the check that a buffer fits the free memory
    _core           input checks, the ignore mask and the reduction every loss shares
"""
