"""Diagnostics of trained models and of the sampled-softmax heads.

Modules::

    topk              where the targets sit among the logits: sparse-softmax's top-k regime
    sampler_bias      a sampled softmax's bias at a fixed language-model checkpoint, no training
    bias_measures     how far a sampled softmax is from the full one at fixed output-layer inputs
    sampled_uniform   why the lm1b sampled softmax with the uniform sampler ends near perplexity = vocabulary size
"""
