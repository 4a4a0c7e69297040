"""Numerical studies with their own small training loops, and chains of resumable runs (records -> reports/).

Modules::

    stable              softmax collapse and cancellation measured in training (-> reports.stable)
    grad_precision      cross-entropy's logit gradient against float64 per head, precision and p_t (-> reports.grad_precision)
    loss_forms          the stable forms' precision (the fix paper's examples, near-identical KD) into a file (-> reports.stable)
    lm_speed            training-step speed of the lm1b heads, side by side in one process
    unigram_baseline    the unigram frequency predictor's perplexity on an LM corpus (the floor lm1b's heads must beat)
    kernel_bias_paper   Blanc & Rendle 2018's bias study in a paper-like setting (ours), chained and resumable
    sparse_regime       the sparse-softmax regime study's runs, chained and resumable
    sparse_helps        when sparse-softmax helps: a teacher's mass inside Ω_k as the dial, softmax vs sparse students
    seeds               paired arms over training seeds, seed by seed, chained and resumable
    sampler_bias        a sampled softmax's bias at a fixed language-model checkpoint, no training
    sampled_uniform     why the lm1b sampled softmax with the uniform sampler ends near perplexity = vocabulary size
    _jobs               chains of training runs that resume: a job with a record is skipped
    _stable_runs        the stable study's training loops, arm forms and regimes
"""
