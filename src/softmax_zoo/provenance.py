"""Where a run's numbers come from: the code's commit and its uncommitted changes, the CPU, the versions.

:func:`git_state` reads the checkout the package runs from (:data:`REPO_ROOT`); records, benchmarks
and pages keep what it returns, so that every number names the code that made it.
"""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout: src/softmax_zoo/ is two levels below it


# The files a run is made from: its code, its configs and its dependencies. Pages and records
# (results/) and every other file are not among them.
RUN_INPUTS = ("src", "configs", "pyproject.toml")
DIRTY_PATHS_KEPT = 20  # a record keeps the first 20 changed paths of RUN_INPUTS, and the count of the rest


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def git_state(repo: Path = REPO_ROOT, cap: int | None = DIRTY_PATHS_KEPT) -> dict[str, Any]:
    """The commit of the code: ``{"commit", "dirty", "dirty_paths", "dirty_paths_more"}`` of the git checkout ``repo``.

    ``dirty_paths``: the files under :data:`RUN_INPUTS` that are not the commit's, sorted: tracked
    files that differ from it (staged or not, deleted ones too) and untracked files that git does not
    ignore (a new module the code imports); the first ``cap`` (None: all), and ``dirty_paths_more``
    counts the rest. ``dirty``: there is one, so a dirty record always names its changed files;
    changes elsewhere (README, results/) change nothing a run computes and do not count. When
    ``repo`` is not the top of a git checkout (an installed package, a source tarball, or one
    inside somebody else's checkout): commit and dirty None, dirty_paths empty.
    """
    unknown = {"commit": None, "dirty": None, "dirty_paths": [], "dirty_paths_more": 0}
    try:
        if Path(_git(repo, "rev-parse", "--show-toplevel").strip()).resolve() != repo.resolve():
            return unknown
        commit = _git(repo, "rev-parse", "HEAD").strip()
        changed = _git(repo, "diff", "--name-only", "-z", "HEAD", "--", *RUN_INPUTS).split("\0")
        untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "-z", "--", *RUN_INPUTS).split("\0")
    except (OSError, subprocess.CalledProcessError):
        return unknown
    paths = sorted({p for p in (*changed, *untracked) if p})
    kept = paths if cap is None else paths[:cap]
    return {"commit": commit, "dirty": bool(paths), "dirty_paths": kept, "dirty_paths_more": len(paths) - len(kept)}


def cpu_info() -> dict[str, str]:
    """The CPU a run computed on: its model name and the instruction set torch's CPU kernels chose
    (``torch.backends.cpu.get_cpu_capability()``: "AVX2", "AVX512", ...). CPU results can depend on
    it: oneDNN picks its kernels, and so its rounding, by the instruction set."""
    import torch

    model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return {"model": model or "unknown", "capability": torch.backends.cpu.get_cpu_capability()}


def versions() -> dict[str, str]:
    """Python, torch, transformers and softmax_zoo versions."""
    import torch
    import transformers

    from . import __version__

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "softmax_zoo": __version__,
    }




def measurement_provenance(command: str, argv: list[str]) -> dict[str, Any]:
    """What a measurement file (not a run record) says of where it was made: machine, CPU, versions, torch threads,
    date, the command line that made it and the code's commit (``git``)."""
    import shlex

    import torch

    from .timing import machine, utc_now

    return {"machine": machine(), "cpu": cpu_info(), "versions": versions(), "torch_threads": torch.get_num_threads(),
            "date": utc_now(), "command": shlex.join([*command.split(), *argv]), "git": git_state()}
