"""Reports: one module per table/figure, each with ``build() -> None`` that reads run records and
writes results/<name>.md (+ .png) and its rows of results/claims.md (see :mod:`softmax_zoo.results`).
"""
