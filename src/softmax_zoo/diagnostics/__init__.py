"""Diagnostics of trained models: :mod:`.topk` (where the targets sit among the logits)."""
