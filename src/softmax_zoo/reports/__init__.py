"""Result pages built from run records: one module per page, each with ``build(results_dir, out)``.

Pages: fig2 (Sparse-softmax Fig. 1/2), lm1b (One Billion Word heads), kernel_bias (Blanc & Rendle's
bias study), table5 (Gigaword-10k), table3 (SQuAD question generation), stable (softmax collapse and
cancellation), sparse_regime (sparse-softmax from starts of increasing strength). Each writes
``results/<page>.md`` (+ .png) and its rows of ``results/claims.md``. Shared pieces are private
modules: ``_stats`` (intervals, bootstraps), ``_pages`` (tables, figures, claims ledger, output
folder), ``_seq2seq`` (the softmax/sparse-softmax pairing of the UniLM tables), ``_sweep`` (any
sweep) and ``_fig2_*`` (the fig2 page's summary, claims and figures).

Build one with ``python -m softmax_zoo.reports <page>``; a new page is one module here (found by
name, :func:`softmax_zoo.reports.__main__.pages`) and its committed ``results/<page>.md``.
"""
