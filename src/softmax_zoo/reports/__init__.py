"""Result pages built from run records: one module per page, each with ``build(results_dir, out)``.

Pages: fig2 (Sparse-softmax Fig. 1/2), lm1b (One Billion Word heads), kernel_bias (Blanc & Rendle's
bias study), table5 (Gigaword-10k), table3 (SQuAD question generation). Each writes
``results/<page>.md`` (+ .png) and its rows of ``results/claims.md``. Shared pieces are private
modules: ``_stats`` (intervals, bootstraps), ``_pages`` (tables, figures, claims ledger, output
folder) and ``_seq2seq`` (the softmax/sparse-softmax pairing of the UniLM tables).

Build one with ``python -m softmax_zoo.reports <page>`` (alias: ``python -m softmax_zoo.results <page>``).
"""
