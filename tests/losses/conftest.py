"""The heads every shared head test runs on, read from the registry (``softmax_zoo.losses.machinery.registry``).

A variant registered anywhere before collection is among them: the logit-level ones
(``SoftmaxHead`` subclasses, which take ``chunk_size``) in test_chunked, test_lean_inference and
test_head_common, every head in test_edge_inputs. Each case is a variant's registered
``examples`` at the test's number of classes.

A variant defined outside the package: ``SOFTMAX_ZOO_VARIANTS=my_module[,other] pytest tests/losses``
imports those modules (importable, e.g. on PYTHONPATH) before collection and runs only the shared
tests' cases of the variants they register (:func:`pytest_collection_modifyitems`).
"""

from __future__ import annotations

import importlib
import os

from softmax_zoo.losses import SoftmaxHead, variants

VARIANT_MODULES = "SOFTMAX_ZOO_VARIANTS"


def _import_variant_modules() -> dict[str, type]:
    """Import the modules named in $SOFTMAX_ZOO_VARIANTS; case id -> head class of the variants they registered."""
    modules = [m.strip() for m in os.environ.get(VARIANT_MODULES, "").split(",") if m.strip()]
    before = set(variants())
    for module in modules:
        importlib.import_module(module)
    new = [v for name, v in variants().items() if name not in before]
    if modules and not new:
        raise RuntimeError(f"{VARIANT_MODULES}={','.join(modules)} registered no loss variant (register_variant)")
    return {case: v.head for v in new for case in v.examples(2)}


EXTERNAL_CASES = _import_variant_modules()


def _is_external_case(item) -> bool:
    """Whether a collected test is parametrised with one of :data:`EXTERNAL_CASES` (its head class or case id)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    heads = set(EXTERNAL_CASES.values())
    return any(v in heads if isinstance(v, type) else isinstance(v, str) and v.removesuffix("-chunked") in EXTERNAL_CASES
               for v in params.values())


def pytest_collection_modifyitems(config, items):
    """With $SOFTMAX_ZOO_VARIANTS set, keep only the tests of its variants' cases."""
    if EXTERNAL_CASES:
        keep = [item for item in items if _is_external_case(item)]
        config.hook.pytest_deselected(items=[item for item in items if item not in keep])
        items[:] = keep


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
