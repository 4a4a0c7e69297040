"""Seeded stratified train/validation/test split, for releases that define none (WoS)."""

from __future__ import annotations

import math
import random
from typing import Sequence


def stratified_split(labels: Sequence[str], val_frac: float, test_frac: float, seed: int) -> list[str]:
    """Assign each example to "train", "validation" or "test", class by class.

    For each label (in sorted order) its examples are shuffled with one ``random.Random(seed)``;
    the first ``round(n * test_frac)`` go to test, the next ``round(n * val_frac)`` to validation
    (round half up), the rest to train; a class always keeps at least one training example, so a
    class seen once is train-only. The same labels and seed always give the same split.

    Args:
        labels: label of each example, in file order.
        val_frac: fraction per class for validation, in [0, 1).
        test_frac: fraction per class for test, in [0, 1).
        seed: the shuffle seed.

    Returns:
        the split name of each example, aligned with ``labels``.
    """
    for name, frac in (("val_frac", val_frac), ("test_frac", test_frac)):
        if not 0 <= frac < 1:
            raise ValueError(f"{name} must be in [0, 1), got {frac}")
    if val_frac + test_frac >= 1:
        raise ValueError(f"val_frac + test_frac must be < 1, got {val_frac} + {test_frac}")
    by_label: dict[str, list[int]] = {}
    for i, label in enumerate(labels):
        by_label.setdefault(label, []).append(i)
    rng = random.Random(seed)
    out = ["train"] * len(labels)
    for label in sorted(by_label):
        idx = by_label[label]
        rng.shuffle(idx)
        n = len(idx)
        n_test = math.floor(n * test_frac + 0.5)
        n_val = math.floor(n * val_frac + 0.5)
        while n_test + n_val > n - 1 and n_test + n_val > 0:  # keep >= 1 training example
            if n_val >= n_test:
                n_val -= 1
            else:
                n_test -= 1
        for i in idx[:n_test]:
            out[i] = "test"
        for i in idx[n_test : n_test + n_val]:
            out[i] = "validation"
    return out
