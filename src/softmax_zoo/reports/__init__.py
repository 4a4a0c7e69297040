"""Result pages built from run records: one module per page, each with ``build(results_dir, out)``.

Each page writes ``results/<page>.md`` (+ .png) and its rows of ``results/claims.md``; build one with
``python -m softmax_zoo.reports <page>``, check them all with ``--check``. A page is ``summarise(results_dir) ->
plain data`` (numbers, rows, :class:`._verdicts.Verdict` objects) plus its template ``templates/<page>.md.j2``,
which holds every word of the page and, as the macros claim / paper / ours / verdict, of its claims rows
(rendered into the ledger by ``templates/claims.md.j2``). A new page is its module here (found by name: every
module not starting with "_"), its template and its committed ``results/<page>.md``.
"""
