"""Data preparation (release files or hub -> ``data/<task>/``), tokenizers and vocabularies.

Entry points: :func:`softmax_zoo.data.prepare.prepare_task` (and the CLI
``python -m softmax_zoo.data.prepare``), :mod:`softmax_zoo.data.tokenizers`. The prepared
formats are described in data/README.md.
"""
