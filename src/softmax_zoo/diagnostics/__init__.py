"""Diagnostics of trained models: :mod:`.topk` (where the targets sit among the logits) and
:mod:`.sampler_bias` (a sampled softmax's bias at a fixed checkpoint, no training)."""
