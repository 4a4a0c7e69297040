"""The on-disk and in-batch contract between data preparation and the runtime loaders.

``data/<task>/`` holds one file per split plus ``meta.json`` (counts, labels, source, sha256 of
the raw files); the preparers (:mod:`softmax_zoo.data.prepare`) write it and the task loaders read
it. Label positions that carry no target are ``IGNORE_INDEX``, the losses' default ignore_index.
"""

from __future__ import annotations

SPLITS = ("train", "validation", "test")
IGNORE_INDEX = -100
