"""Plain-torch definitions the package's losses are checked and benchmarked against.

Slow on purpose (autograd of the textbook formula, torch's own modules, O(N·C·d) closed forms);
never a training path. The tests and ``scripts/bench_losses.py`` import them from here.

Modules::

    logits     cross_entropy_ref, sparse_cross_entropy_ref, sparse_options_ref, kd_ref, ...
    adaptive   torch.nn.AdaptiveLogSoftmaxWithLoss as the reference head (make_pair, reference_loss)
    sampled    closed-form sampler distributions and the naive multinomial sampler
    distill    materialised distillation divergences (divergence_ref) and the whole-matrix KD (materialised_kd)
"""
