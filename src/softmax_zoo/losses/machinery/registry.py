"""The one list of loss variants: each head class registers itself where it is defined.

::

    @register_variant("sparse_softmax", label="sparse", title="sparse-softmax",
                      examples=lambda num_classes: {"sparse": {"k": 4}, "sparse-k=C": {"k": num_classes}})
    class SparseSoftmaxHead(SoftmaxHead): ...

The name is the loss config's: ``configs/loss/<name>.yaml`` (any config dir on Hydra's search
path), whose ``_target_`` is the class, and the Hydra choice ``loss=<name>`` that run records
keep. ``build_head`` imports the ``_target_``, so a variant defined outside this package
registers when its config is used. Read by:

- ``models.build_head``: which constructor options may be written ``auto`` (:func:`auto_options`);
- the pages (``softmax_zoo.reports``): :func:`variant_label`, :func:`variant_title`;
- the shared head tests (``tests/losses/conftest.py``) and the benchmark: :func:`variants`, each
  variant's ``examples``.
"""

from __future__ import annotations

import importlib
import string
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Variant:
    """A registered loss variant.

    Args:
        name: the loss config's name (``loss=<name>``).
        head: the :class:`~softmax_zoo.losses.machinery.head.OutputHead` subclass.
        label: short name on pages and in legends, e.g. "sparse"; may name loss options in braces,
            "sampled ({sampler}, m={num_samples})", filled by :func:`variant_label`.
        title: the variant in prose, e.g. "sparse-softmax".
        auto: constructor options that may be written ``auto`` in the config, e.g. ("chunk_size",)
            (``num_classes`` and ``counts`` are filled for every head).
        examples: num_classes -> {case id: constructor options}, small settings (k < num_classes, ...)
            that the shared head tests and the benchmark build the head with.
    """

    name: str
    head: type
    label: str
    title: str
    auto: tuple[str, ...]
    examples: Callable[[int], dict[str, dict[str, Any]]]


_VARIANTS: dict[str, Variant] = {}


def register_variant(
    name: str,
    *,
    label: str | None = None,
    title: str | None = None,
    auto: tuple[str, ...] | None = None,
    examples: Callable[[int], dict[str, dict[str, Any]]] | None = None,
):
    """Class decorator registering a head as the variant ``name`` (see :class:`Variant`).

    ``label`` and ``title`` default to ``name``, ``examples`` to one case ``{name: {}}``, and
    ``auto`` to that of the nearest registered base class (a subclass of ``SoftmaxHead`` keeps
    ``chunk_size: auto``). Registering a name again replaces it only for the same class (a module
    imported twice); another class under a taken name is an error.
    """

    def register(cls: type) -> type:
        old = _VARIANTS.get(name)
        if old is not None and _qualified(old.head) != _qualified(cls):
            raise ValueError(f"loss variant {name!r} is already registered for {_qualified(old.head)}")
        _VARIANTS[name] = Variant(
            name=name,
            head=cls,
            label=label or name,
            title=title or label or name,
            auto=tuple(auto) if auto is not None else auto_options(cls.__mro__[1]),
            examples=examples or (lambda num_classes: {name: {}}),
        )
        return cls

    return register


def variants() -> dict[str, Variant]:
    """name -> :class:`Variant`, every registered variant in registration order."""
    return dict(_VARIANTS)


def variant(name: str) -> Variant:
    """The variant registered as ``name``; ``KeyError`` listing the registered names otherwise."""
    if name not in _VARIANTS:
        raise KeyError(f"no loss variant {name!r} is registered; registered: {sorted(_VARIANTS)}")
    return _VARIANTS[name]


def variant_of(head: type) -> Variant | None:
    """The variant ``head`` (a class) is registered as, or None."""
    return next((v for v in _VARIANTS.values() if v.head is head), None)


def auto_options(head: type) -> tuple[str, ...]:
    """Constructor options of ``head`` that may be ``auto``: its own variant's, else its nearest
    registered base class's, else none."""
    for cls in getattr(head, "__mro__", ()):
        found = variant_of(cls)
        if found is not None:
            return found.auto
    return ()


def variant_title(name: str) -> str:
    """The registered prose name of loss ``name`` ("sparse-softmax"); ``name`` itself if unregistered."""
    return _VARIANTS[name].title if name in _VARIANTS else name


def variant_label(name: str, options: Mapping[str, Any] | None = None, choices: Mapping[str, str] | None = None) -> str:
    """The registered label of loss ``name``, its braces filled from the run's loss options.

    Args:
        name: the loss config name (a record's Hydra choice of ``loss``).
        options: the run's loss config (``config.loss``), for the fields that are loss options.
        choices: the run's Hydra choices, {group: option name}; a field naming a group (e.g.
            ``sampler``, the loss/sampler group) is filled with its choice.

    Returns:
        e.g. "sparse", "sampled (quadratic, m=64)"; ``name`` itself if no variant is registered as
        it, even after importing the options' ``_target_`` (where a variant defined outside this
        package registers). A ``_target_`` whose module does not import warns, naming the module
        and the error.
    """
    if name not in _VARIANTS and (options or {}).get("_target_"):
        _import_module_of(options["_target_"])
    if name not in _VARIANTS:
        return name
    label = _VARIANTS[name].label
    fields = [f for _, f, _, _ in string.Formatter().parse(label) if f]
    options, choices = options or {}, choices or {}
    return label.format(**{f: choices[f] if f in choices else options.get(f) for f in fields})


def _import_module_of(target: str) -> None:
    """Import the module of a dotted class path, which registers its variants; one that cannot be
    imported here warns, naming the module and its error (a page then shows the config name)."""
    module = target.rpartition(".")[0]
    try:
        importlib.import_module(module)
    except (ImportError, ValueError) as error:  # ValueError: no module part
        warnings.warn(
            f"loss target {target!r}: cannot import module {module!r} ({type(error).__name__}: {error}), so its "
            "variant's label is unknown and pages show the loss config's name (put the module on PYTHONPATH)",
            stacklevel=3,
        )


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
