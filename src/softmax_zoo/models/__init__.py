"""Models: an encoder and an output head from :mod:`softmax_zoo.losses`, built by :func:`build_head`.

Every model makes its output layer with :func:`softmax_zoo.models.heads.build_head` from the
composed ``cfg.loss``, so that any softmax variant can be swapped in by ``loss=<name>``.
"""

from .heads import build_head

__all__ = ["build_head"]
