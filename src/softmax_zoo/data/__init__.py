"""Runtime data: prepared folders as torch datasets, collators, tokenizers.

Preparation (release files or hub -> ``data/<task>/``) is the separate package
:mod:`softmax_zoo.data.prepare`, which runtime code never imports. Formats: data/README.md.

Modules::

    layout           the on-disk contract: split and file names, special tokens and ids, readers
    classification   prepared classification data as torch datasets, with a padding collator
    seq2seq          UniLM sequence-to-sequence examples: tokenisation with a token budget, collators
    lm_stream        truncated-BPTT segments streamed from a one-sentence-a-line corpus
    tokenizers       the character tokenizer, the LM word vocabulary, the pretrained tokenizers
    prepare          data preparation (python -m softmax_zoo.data.prepare)
"""
