"""Runtime data: prepared folders as torch datasets, collators, tokenizers.

:mod:`.layout` owns the on-disk contract (split and file names, special tokens and ids, readers);
:mod:`.classification`, :mod:`.seq2seq` and :mod:`.lm_stream` load prepared data for their task
family; :mod:`.tokenizers` holds the character tokenizer, the LM word vocabulary and the
pretrained tokenizers. Preparation (release files or hub -> ``data/<task>/``) is the separate
package :mod:`softmax_zoo.data.prepare`, which runtime code never imports. Formats: data/README.md.
"""
