"""The package's layers: every import goes down, no cycle, no reach into another package's private modules.

A unit is a top-level module or package of softmax_zoo. :data:`LAYERS` lists them lowest first; a
unit imports only units of lower layers (any import form, at module level or inside a function,
read with ``ast``, nothing imported). So the building blocks (losses, data, models) never import
the layers built on them, diagnostics/ measures below the tasks that report its numbers, reports/
turn records into pages without the training stack, and studies/ sit on top, running the engine
and reading the pages' public modules. Beside the layers: no cycle between units, none between
modules (:func:`module_graph`: every import, at module level, in a function or under
``TYPE_CHECKING``, so a cycle inside one unit, such as reports/, fails too), and no module
imports another package's underscore module (``softmax_zoo.reports._pages`` from studies/).
Scripts (scripts/) build on the package only: one that imports from ``tests`` fails the test.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

from tests.data.test_data_layering import PACKAGE, _imported_modules, _package_of

LAYERS = (
    # leaves: import nothing of the package
    ("cli_args", "extras", "files", "hub", "markdown", "metrics", "progress", "rouge155", "run_identity", "timing", "tracking"),
    ("provenance",),  # a measurement's machine and date from timing's
    ("config",),  # run names read the run-identity table
    ("run_record",),  # the run record's schema, on config, files and provenance
    ("records", "dry_run"),  # records name runs by config's rule; dry_run reads config's family files
    ("losses",),
    ("data",),
    ("models",),
    # on models and heads: measurements, use_head, checks before a run (memory included), the vocabulary-parallel training setup
    ("diagnostics", "hf", "memory_plan", "preflight", "vocab_parallel_training"),
    ("parallelism",),  # data- or vocabulary-parallel training as one strategy, on memory_plan and vocab_parallel_training
    ("tasks", "reports"),  # evaluation of a trained model; pages from records (never the training stack)
    ("trainer",),
    ("engine",),
    ("studies",),  # chains of runs, checkpoint diagnostics: the engine and the pages' public modules
    ("train",),  # the @hydra.main entry point
)
LAYER = {unit: depth for depth, units in enumerate(LAYERS) for unit in units}
SCRIPTS = PACKAGE.parents[1] / "scripts"


def unit_of(path: Path) -> str:
    """The top-level module or package of softmax_zoo that ``path`` belongs to."""
    first = path.relative_to(PACKAGE).parts[0]
    return first.removesuffix(".py")


def units() -> set[str]:
    return {unit_of(p) for p in PACKAGE.rglob("*.py")} - {"__init__"}


def imports_of(path: Path, source: str | None = None) -> list[tuple[str, str]]:
    """(unit, module) for each softmax_zoo module that ``path`` (or ``source`` read as that file) imports from another unit.

    ``from . import __version__`` (an attribute of the package itself) names no unit and is left out.
    """
    own, out = unit_of(path), []
    source = path.read_text(encoding="utf-8") if source is None else source
    for name in _imported_modules(source, _package_of(path)):
        parts = name.split(".")
        if parts[0] == "softmax_zoo" and len(parts) > 1 and parts[1] in LAYER and parts[1] != own:
            out.append((parts[1], name))
    return out


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {unit: set() for unit in units()}
    for path in PACKAGE.rglob("*.py"):
        graph.setdefault(unit_of(path), set()).update(unit for unit, _ in imports_of(path))
    graph.pop("__init__", None)
    return graph


def cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (unit -> the units it imports), first unit repeated at the end; None if there is none."""
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def module_name(path: Path) -> str:
    """The dotted name of the module at ``path``: ``softmax_zoo.reports._pages``; a package's ``__init__`` is the package."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(("softmax_zoo", *(parts[:-1] if parts[-1] == "__init__" else parts)))


def module_imports(path: Path, source: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``source`` (read as the file ``path``) imports, by every import statement in it.

    ``import a.b`` and ``from a import name`` import the longest module ``a.b`` / ``a`` names; ``from a import b``
    where ``a.b`` is a module imports ``a.b`` (a package's own submodule does not re-run the package)."""
    def longest(name: str) -> str | None:
        parts = name.split(".")
        while parts and ".".join(parts) not in modules:
            parts.pop()
        return ".".join(parts) or None

    found: set[str | None] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {longest(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _package_of(path).rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            found |= {f"{module}.{a.name}" if f"{module}.{a.name}" in modules else longest(module) for a in node.names}
    return {name for name in found if name is not None} - {module_name(path)}


def module_graph(sources: dict[Path, str] | None = None) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, over every file of the package (``sources``: a file read as this text)."""
    files = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in files}
    sources = sources or {}
    return {module_name(path): module_imports(path, sources.get(path) or path.read_text(encoding="utf-8"), modules)
            for path in files}


def upward_imports(path: Path, source: str | None = None) -> list[str]:
    own = LAYER[unit_of(path)]
    return sorted({f"{path.relative_to(PACKAGE)} imports {name}" for unit, name in imports_of(path, source) if LAYER[unit] >= own})


def private_imports(path: Path, source: str | None = None) -> list[str]:
    """Imports of an underscore module (or name) of another unit: ``softmax_zoo.reports._pages``."""
    hits = set()
    for _, name in imports_of(path, source):
        if any(part.startswith("_") and not part.startswith("__") for part in name.split(".")[2:]):
            hits.add(f"{path.relative_to(PACKAGE)} imports {name}")
    return sorted(hits)


def test_every_unit_has_a_layer():
    assert units() == set(LAYER), f"unplaced: {sorted(units() - set(LAYER))}; gone: {sorted(set(LAYER) - units())}"


@pytest.mark.parametrize("unit", [u for units_ in LAYERS for u in units_])
def test_imports_go_down(unit):
    files = sorted((PACKAGE / unit).rglob("*.py")) if (PACKAGE / unit).is_dir() else [PACKAGE / f"{unit}.py"]
    offenders = [line for path in files for line in upward_imports(path)]
    assert not offenders, offenders


def test_no_cycle_between_units():
    graph = import_graph()
    assert set(graph) == units()
    found = cycle(graph)
    assert found is None, f"import cycle: {' -> '.join(found)}"


def test_no_cycle_between_modules():
    graph = module_graph()
    assert "softmax_zoo.reports._verdicts" in graph["softmax_zoo.reports._pages"]
    found = cycle(graph)
    assert found is None, f"import cycle: {' -> '.join(found)}"


@pytest.mark.parametrize("module, source", [
    ("_verdicts.py", "def verdict_words():\n    from ._pages import template_words\n"),  # a function-local import
    ("_stats.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._verdicts import VerdictKind\n"),
])
def test_the_module_graph_sees_a_cycle_inside_a_unit(module, source):
    found = cycle(module_graph({PACKAGE / "reports" / module: source}))
    assert found is not None and f"softmax_zoo.reports.{module.removesuffix('.py')}" in found


def test_a_package_importing_its_own_submodules_is_no_cycle():
    path, modules = PACKAGE / "losses" / "sparse.py", {"softmax_zoo.losses", "softmax_zoo.losses.registry"}
    assert module_imports(path, "from . import registry\n", modules) == {"softmax_zoo.losses.registry"}
    assert module_imports(path, "from . import registry, SoftmaxHead\n", modules) == {"softmax_zoo.losses.registry", "softmax_zoo.losses"}
    assert module_imports(path, "import softmax_zoo.losses.registry.x\n", modules) == {"softmax_zoo.losses.registry"}


def test_no_import_of_another_packages_private_modules():
    offenders = [line for path in sorted(PACKAGE.rglob("*.py")) for line in private_imports(path)]
    assert not offenders, offenders


def test_the_scan_sees_a_lazy_upward_import():
    source = "def f():\n    from ..engine import initialise_from\n"
    assert upward_imports(PACKAGE / "models" / "distill.py", source) == [
        "models/distill.py imports softmax_zoo.engine", "models/distill.py imports softmax_zoo.engine.initialise_from",
    ]


def test_the_checks_catch_a_cycle_an_upward_and_a_private_import():
    assert cycle({"tasks": {"diagnostics"}, "diagnostics": {"engine"}, "engine": {"tasks"}}) is not None
    assert cycle({"tasks": {"diagnostics"}, "diagnostics": set()}) is None
    page, study = PACKAGE / "reports" / "fig2.py", PACKAGE / "studies" / "sampler_bias.py"
    assert upward_imports(page, "from ..studies import seeds\n") == [
        "reports/fig2.py imports softmax_zoo.studies", "reports/fig2.py imports softmax_zoo.studies.seeds",
    ]
    assert upward_imports(page, "from ..tasks.lm import collate\n")  # tasks shares the layer of reports
    assert upward_imports(study, "from ..reports.kernel_bias import DIAGNOSTICS\n") == []
    assert private_imports(study, "from ..reports._pages import provenance\n") == [
        "studies/sampler_bias.py imports softmax_zoo.reports._pages",
        "studies/sampler_bias.py imports softmax_zoo.reports._pages.provenance",
    ]
    assert private_imports(study, "from ._jobs import study_parser\n") == []  # its own package's


def _test_imports(source: str) -> list[str]:
    return sorted({n for n in _imported_modules(source, "scripts") if n == "tests" or n.startswith("tests.")})


def test_scripts_never_import_from_tests():
    files = sorted(SCRIPTS.rglob("*.py"))
    assert SCRIPTS / "gpu_check.py" in files
    offenders = [f"scripts/{p.relative_to(SCRIPTS)} imports {name}" for p in files for name in _test_imports(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_the_script_scan_sees_every_import_form():
    source = "import tests.engine\ndef f():\n    from tests.lm.conftest import lm_corpus\n"
    assert _test_imports(source) == ["tests.engine", "tests.lm.conftest", "tests.lm.conftest.lm_corpus"]
    assert _test_imports("from softmax_zoo.data.prepare.generated import generated_data\n") == []
