"""Models: an encoder and an output head from :mod:`softmax_zoo.losses`.

Every ``configs/model/*.yaml`` names a builder or class in ``_target_``; a task instantiates it
with :func:`build_model`, passing the sizes only the data know (vocabulary, classes) and the one
hook through which every model receives its output layer: ``make_head(in_features, weight=None)
-> OutputHead`` (:func:`head_factory`, which builds the composed ``cfg.loss`` with
:func:`build_head`), so that any softmax variant is swapped in by ``loss=<name>``.

Modules::

    build        build_model, head_factory (the ``make_head`` hook) and the evaluation-mode helper
    contracts    what each task family reads of its model: one Protocol per family, checked when the model is built
    heads        build_head: a model's output head from the ``loss`` config (auto counts and cutoffs); its options checked early
    classifier   text classifier: a BERT-style encoder, pooling, an optional MLP and any head
    unilm        a BERT encoder used as a UniLM sequence-to-sequence model
    decoding     UniLM incremental decoding: beam search with a key/value cache
    stream_lm    what the LM pipelines' models share: the carried context, the head, tokens/second
    lstm_lm      an LSTM language model with any head
    transformer_lm   a transformers causal decoder (Llama or GPT-2, random init) with any head
    mlp          an MLP encoder with any head (the generated classification task)
    distill      knowledge distillation from a finished run (``distill=stable|standard``)
"""

from .build import build_model, evaluating, head_factory, model_target
from .heads import build_head

__all__ = ["build_head", "build_model", "evaluating", "head_factory", "model_target"]
