"""The preparation entry point: :func:`prepare_task`, :func:`prepare_all` and the command line (tasks: :mod:`.registry`).

Command line (``key=value`` arguments, no dashes, like Hydra overrides)::

    python -m softmax_zoo.data.prepare <task> [raw_dir=PATH | raw_root=PATH] [source=local|hub]
                                              [out_dir=PATH] [option=value ...]
    python -m softmax_zoo.data.prepare all [raw_root=PATH] [out_dir=PATH]
    python -m softmax_zoo.data.prepare list

- ``raw_dir``: the dataset's own release folder. Default ``<raw_root>/<name>`` with ``raw_root`` =
  ``$SOFTMAX_ZOO_RAW``, else :data:`DEFAULT_RAW_ROOT` (the release folders beside the checkout).
- ``out_dir``: the root of prepared data (the task goes to ``<out_dir>/<task>``). Default
  ``$SOFTMAX_ZOO_DATA``, else ``data``.
- ``source=hub`` loads the task's pinned hub dataset with ``datasets`` (the optional extra
  ``hub``) instead of release files; both give the same prepared format. A task whose module sets
  ``HUB_FALLBACK = True`` (gigaword) reads its hub dataset when its release folder is absent.
- ``all`` prepares every task whose release folder exists under ``raw_root`` and skips the others.
- Task options (``train_size=10000``, ``oos=false``, ...) are listed by ``list`` and in data/README.md.
- A preparer outside this package: ``SOFTMAX_ZOO_PREPARERS=my_module`` (its dotted module, on
  PYTHONPATH), which :func:`~.registry.preparers` imports beside this package's own.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from softmax_zoo.cli_args import ArgumentError, Arguments, Option, Parser
from softmax_zoo.data.layout import data_root
from softmax_zoo.data.prepare.raw import RawDir
from softmax_zoo.data.prepare.registry import PREPARER_MODULES, failed_modules, preparers
from softmax_zoo.data.prepare.writer import write_prepared

log = logging.getLogger(__name__)

DEFAULT_RAW_ROOT = "../shared/data"  # relative to the working directory: the release folders beside the checkout
PARSER = Parser("python -m softmax_zoo.data.prepare", [
    Option("raw_dir", None, "the dataset's release folder (default: <raw_root>/<name>)", kind=str),
    Option("raw_root", None, f"root of the release folders (default: $SOFTMAX_ZOO_RAW, else {DEFAULT_RAW_ROOT})", kind=str),
    Option("source", "local", "release files or the task's pinned hub dataset", choices=("local", "hub")),
    Option("out_dir", None, "root of prepared data (default: $SOFTMAX_ZOO_DATA, else data)", kind=str),
], synopsis="<task|all|list>", rest="task option=value", max_positional=1)


def raw_root() -> Path:
    """``$SOFTMAX_ZOO_RAW``, else :data:`DEFAULT_RAW_ROOT` (relative to the working directory)."""
    return Path(os.environ.get("SOFTMAX_ZOO_RAW") or DEFAULT_RAW_ROOT)


def out_root() -> Path:
    """``$SOFTMAX_ZOO_DATA``, else ``data`` (:func:`softmax_zoo.data.layout.data_root`)."""
    return data_root()


def _coerce(name: str, value: Any, default: Any) -> Any:
    """A command-line string as the type of the option's default (an integer when the default is None and it is one)."""
    if not isinstance(value, str):
        return value
    kind = int if default is None and value.lstrip("-").isdigit() else None
    return Option(name, default, kind=kind).convert(value)


def resolve_options(task: str, given: dict[str, Any]) -> dict[str, Any]:
    """The task's options with ``given`` applied; an unknown name raises listing the valid ones."""
    spec = _task(task)
    unknown = sorted(set(given) - set(spec.OPTIONS))
    if unknown:
        raise ValueError(f"{task}: unknown option(s) {unknown}; valid options: {sorted(spec.OPTIONS)}")
    return {k: _coerce(k, given.get(k, d), d) for k, d in spec.OPTIONS.items()}


def _task(task: str):
    tasks = preparers()  # task name -> preparer (each module in this package registers its own)
    if task not in tasks:
        failed = "".join(f"; preparer module {m} failed to import: {e}" for m, e in failed_modules().items())
        hint = f" (a preparer outside softmax_zoo: name its module in ${PREPARER_MODULES})" if not failed else ""
        raise ValueError(f"task must be one of {sorted(tasks)}, got {task!r}{hint}{failed}")
    return tasks[task]


def _load_hub(spec: dict) -> Any:
    try:
        import datasets
    except ImportError:
        raise ImportError("source=hub needs the `datasets` package: pip install -e '.[hub]'") from None
    args = [spec["id"]] + ([spec["config"]] if spec.get("config") else [])
    return datasets.load_dataset(*args, revision=spec["revision"])


def prepare_task(
    task: str,
    raw_dir: str | Path | None = None,
    source: str = "local",
    out_dir: str | Path | None = None,
    raw_root_dir: str | Path | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Prepare one task into ``<out_dir>/<task>/`` and return its meta.json content.

    Args:
        task: one of :func:`~.registry.preparers`.
        raw_dir: the release folder; default ``<raw_root_dir>/<name>``.
        source: "local" (release files) or "hub".
        out_dir: root of prepared data; default :func:`out_root`.
        raw_root_dir: root of release folders; default :func:`raw_root`.
        **options: task options (see ``OPTIONS`` in the task's module).

    Raises:
        FileNotFoundError: the release folder or an expected file is missing (the message names
            the files and where they were looked for).
        ValueError: bad option, malformed file, unknown label, mismatched line counts.
    """
    spec = _task(task)
    opts = resolve_options(task, options)
    dest = Path(out_dir or out_root()) / task
    raw_path = Path(raw_dir) if raw_dir else Path(raw_root_dir or raw_root()) / spec.RAW_NAME
    if source == "local" and not raw_path.is_dir() and getattr(spec, "HUB_FALLBACK", False):
        log.info("%s: no release folder %s; reading the task's hub dataset instead (source=hub)", task, raw_path)
        source = "hub"
    if source == "local":
        raw = RawDir(raw_path, task)
        prep = spec.load_local(raw, opts)
        src = {"type": "local", "path": str(raw.root.resolve())}
    elif source == "hub":
        hub = spec.hub_spec(opts)
        # Some hub datasets lack a piece of the task (the Du doclists): read it from raw_dir if there.
        raw = RawDir(raw_path, task) if raw_path.is_dir() else None
        prep = spec.from_hub(_load_hub(hub), opts, raw)
        src = {"type": "hub", **hub}
    else:
        raise ValueError(f"source must be 'local' or 'hub', got {source!r}")
    sha = raw.sha256s() if raw is not None else {}
    meta = write_prepared(task, prep, dest, src, sha, opts)
    log.info("%s: wrote %s %s", task, dest, meta["splits"])
    return meta


def prepare_all(raw_root_dir: str | Path | None = None, out_dir: str | Path | None = None) -> dict[str, dict]:
    """Prepare every task whose release folder exists under ``raw_root_dir``; skip (log) the others.

    Raises:
        FileNotFoundError: no task could be prepared; the message names each missing release folder.
    """
    root = Path(raw_root_dir or raw_root())
    metas, missing = {}, []
    for task, spec in preparers().items():
        if not (root / spec.RAW_NAME).is_dir():
            log.warning("%s: skipped, no release folder %s", task, root / spec.RAW_NAME)
            missing.append(f"{task}: {root / spec.RAW_NAME}")
            continue
        metas[task] = prepare_task(task, raw_root_dir=root, out_dir=out_dir)
    if not metas:
        raise FileNotFoundError(
            f"nothing prepared: no release folder under {root.resolve()} (set SOFTMAX_ZOO_RAW or raw_root=); "
            f"missing: {'; '.join(missing)}"
        )
    return metas


def parse_args(argv: list[str]) -> Arguments:
    """The command line: ``positional`` = [task], the options of :data:`PARSER`, ``rest`` = the task options (``key=value``)."""
    args = PARSER.parse(argv)
    if len(args.positional) != 1:
        raise ArgumentError(PARSER.usage())
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the command line (``argv`` defaults to ``sys.argv[1:]``); returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        task, kv = args.positional[0], dict(a.split("=", 1) for a in args.rest)
        raw_dir, out_dir, root = args["raw_dir"], args["out_dir"], args["raw_root"]
        start = time.perf_counter()
        if task == "list":
            for name, spec in preparers().items():
                print(f"{name:10s} raw: <raw_root>/{spec.RAW_NAME:10s} options: {spec.OPTIONS}")
        elif task == "all":
            if kv or raw_dir:
                raise ValueError(f"'all' takes only raw_root= and out_dir=, got {sorted(kv) + (['raw_dir'] if raw_dir else [])}")
            prepare_all(root, out_dir)
        else:
            prepare_task(task, raw_dir=raw_dir, source=args["source"], out_dir=out_dir, raw_root_dir=root, **kv)
        log.info("done in %.1f s", time.perf_counter() - start)
    except (FileNotFoundError, ValueError, ImportError) as e:
        log.error("%s", e)
        return 1
    return 0
