"""Models: an encoder and an output head from :mod:`softmax_zoo.losses`.

Every ``configs/model/*.yaml`` names a builder or class in ``_target_``; a task instantiates it
with :func:`build_model`, passing the sizes only the data know (vocabulary, classes) and the one
hook through which every model receives its output layer: ``make_head(in_features, weight=None)
-> OutputHead`` (:func:`head_factory`, which builds the composed ``cfg.loss`` with
:func:`build_head`), so that any softmax variant is swapped in by ``loss=<name>``.
"""

from .build import build_model, evaluating, head_factory
from .heads import build_head

__all__ = ["build_head", "build_model", "evaluating", "head_factory"]
