"""The softmax variants, each where its paper's equation is implemented: a row loss and a head, registered by name.

The folder is ``methods``, not ``variants``: ``softmax_zoo.losses.variants`` is the registry's function listing them.

Modules::

    softmax                 full softmax cross-entropy, the baseline (and the base head of every logit-level variant)
    stable                  stable softmax cross-entropy, through the logit gaps to the target
    stable_kd               stable knowledge-distillation loss (the expm1 form)
    distill                 knowledge-distillation losses: the KL form beside stable_kd_loss
    linear_kd               memory-lean distillation: forward/reverse KL and JSD of hidden @ W.T, over rows and classes
    sparse                  sparse-softmax: softmax over the k largest logits
    adaptive                adaptive softmax (Grave et al. 2017)
    adaptive_cutoffs        adaptive-softmax cluster boundaries from the cost model of Grave et al. 2017
    sampled                 sampled softmax (Blanc & Rendle 2018)
    samplers                uniform, unigram and softmax negative samplers
    kernel_sampler          the quadratic-kernel sampler's divide-and-conquer tree (Blanc & Rendle 2018)
    centred_kernel_sampler  the centred quadratic-kernel sampler (our extension)
"""
