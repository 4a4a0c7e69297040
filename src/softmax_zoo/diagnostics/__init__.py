"""Measurements of output layers and their losses: pure functions of tensors and heads.

A layer below the tasks: it imports only losses/, and tasks/ call it while they evaluate (the
top-k regime metrics every classification and seq2seq record carries). The commands that train or
load a model and then measure it sit above the engine, in studies/ (``studies.sampler_bias``,
``studies.sampled_uniform``); tests/test_layering.py holds both sides to their layer.

Modules::

    topk            where the targets sit among the logits: sparse-softmax's top-k regime
    bias_measures   how far a sampled softmax is from the full one at fixed output-layer inputs
    loss_forms      how exactly the standard and stable CE and KD forms compute on fixed logits
"""
