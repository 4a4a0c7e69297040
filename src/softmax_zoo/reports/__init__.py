"""Result pages built from run records: one module per page, each with ``build(results_dir, out)``.

A page is ``summarise(results_dir) -> plain data`` plus its template ``templates/<page>.md.j2``, which holds every
word of the page and, as the macros claim / paper / ours / verdict, of its rows of the claims ledger. A new page is
its module here (every module not starting with "_"; its ``HEADLINES`` name the claims row that heads each of its
experiments in README.md's status table), its template and its committed ``results/<page>.md``.

Modules::

    fig2            Sparse-softmax Fig. 1 and Fig. 2 (Sun et al. 2021): classification micro-F1 against k
    table5          Sparse-softmax Table 5: Gigaword-10k ROUGE, UniLM with softmax vs sparse-softmax
    table3          Sparse-softmax Table 3: SQuAD 1.1 question generation, softmax vs sparse-softmax
    sparse_regime   the sparse-softmax regime study: Δ ROUGE against the start's share of targets in the top k
    sparse_helps    when sparse-softmax helps: the controlled teacher study's Δ against the share of targets in Ω_k, the real runs on it
    lm1b            One Billion Word head comparison (Grave et al. 2017)
    kernel_bias     Blanc & Rendle 2018's sampler bias study on Penn Treebank, and its figures
    stable          softmax collapse and KD cancellation in training, its figures, the fix paper's minimal examples
    sampled_uniform why the lm1b uniform-sampler arm ends near perplexity V: the diagnostic's page, from its measurement
    grad_precision  cross-entropy's logit gradient against float64 at confident predictions, per head and precision
    __main__        the command line: ``python -m softmax_zoo.reports <page> [results_dir=DIR] [out=DIR]``, and README.md's status table
    _pages          what every page shares: Jinja2 over templates/ and its number formats, folders, provenance, figures, the ledger
    _compare        the comparison engine: arms, metric, design -> Δ, interval, method; margins (TOST), grids (Holm)
    _stats          Student-t intervals over seeds, paired bootstraps over items, paired t, Welch, TOST, Holm
    _verdicts       the claims ledger's verdicts: kind, form and numbers (templates/_verdicts.j2 words them)
    _forms          each claim's logical form (non-inferiority, equivalence, every member of a set...), which fixes its test
    _regime         regime gates: a verdict from a setting out of the claim's regime is "not comparable (regime)"
    _fig1           fig2's Fig. 1: the curves of the softmax and k=20 arms, the measures of "faster" and "smoother", the figure
    _fig2_speed     fig2's "Faster" from the committed benchmarks: the loss on given logits and the output layer's step
    _fig2_constants what fig2's modules share: the arms' config names, Sun et al. 2021's k and task names, the metric
    _kernel_grid    kernel_bias's records as a grid, sampler x m: each sampler's gap to the full softmax, the rows read off it
    _kernel_diagnostics kernel_bias's rows from fixed-checkpoint diagnostics: bias against KL(p ‖ q), the kernel's KL over training
    _stable_examples stable's deterministic rows: the fix paper's minimal examples and equivalence checks, from a measured file
    _stable_figures stable's figures: a row of panels, each arm's mean curve over seeds in its own style
    _lm1b_heads     lm1b's table of heads: each head's runs over seeds, its speed-up, its trivial and ablation flags
    _sweep          any sweep as a table and a plot (``python -m softmax_zoo.reports sweep ...``)
    _settings       a page's table of the paper's stated settings beside ours (read from the records) and why
    _seq2seq        the UniLM pages (table5, table3) as declarations of one :class:`Table`, and their settings beside Sun et al. 2021's
"""
