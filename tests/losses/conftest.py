"""The heads every shared head test runs on, read from the registry (``softmax_zoo.losses.registry``).

A variant registered anywhere before collection (its module imported, e.g. ``pytest -p
my_variant``) is among them: the logit-level ones (``SoftmaxHead`` subclasses, which take
``chunk_size``) in test_chunked, test_lean_inference and test_head_common, every head in
test_edge_inputs. Each case is a variant's registered ``examples`` at the test's number of classes.
"""

from __future__ import annotations

from softmax_zoo.losses import SoftmaxHead, variants


def head_cases(num_classes: int, *, logit_level: bool = False) -> dict[str, tuple[type, dict]]:
    """case id -> (head class, constructor options) of every registered variant's examples.

    Args:
        logit_level: only the variants on logits (``SoftmaxHead`` subclasses: chunk_size, lean inference).
    """
    return {
        case: (v.head, options)
        for v in variants().values()
        if not logit_level or issubclass(v.head, SoftmaxHead)
        for case, options in v.examples(num_classes).items()
    }


def logit_cases(num_classes: int) -> dict[str, tuple[type, dict]]:
    """:func:`head_cases` of the logit-level variants."""
    return head_cases(num_classes, logit_level=True)
