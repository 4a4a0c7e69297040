"""The torch bounds of environment.yml, pyproject.toml and the Makefile against the installed
transformers' own minimum (below it transformers disables PyTorch and ``Trainer`` cannot be imported)."""

from __future__ import annotations

import re
from importlib.metadata import requires
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
ROOT = Path(__file__).resolve().parents[1]


def transformers_torch_minimum() -> Version:
    """The lowest torch the installed transformers accepts (its ``torch`` extra: ``torch>=X``)."""
    for line in requires("transformers") or []:
        req = Requirement(line)
        if req.name == "torch" and req.marker is not None and 'extra == "torch"' in str(req.marker):
            lows = [Version(s.version) for s in req.specifier if s.operator == ">="]
            if lows:
                return max(lows)
    raise AssertionError("the installed transformers declares no torch>=X requirement")


def torch_requirement(lines: list[str], where: str) -> Requirement:
    found = [Requirement(x) for x in lines if isinstance(x, str) and re.match(r"torch\b", x)]
    assert len(found) == 1, f"{where}: expected one torch requirement, got {found}"
    return found[0]


def test_pyproject_torch_lower_bound_is_transformers_minimum():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_req = torch_requirement(project["dependencies"], "pyproject.toml")
    lows = [Version(s.version) for s in torch_req.specifier if s.operator == ">="]
    assert lows == [transformers_torch_minimum()], f"pyproject {torch_req} vs transformers' torch>={transformers_torch_minimum()}"


def test_environment_yml_torch_meets_transformers_minimum_and_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert not any(str(d).startswith(("pytorch", "torch")) for d in env["dependencies"] if isinstance(d, str)), (
        "torch must come from pip (the pytorch conda channel ends below transformers' minimum)"
    )
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pinned = [Version(s.version) for s in torch_requirement(pip, "environment.yml").specifier if s.operator == "=="]
    assert len(pinned) == 1, "environment.yml pins one torch version"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert pinned[0] >= transformers_torch_minimum()
    assert pinned[0] in torch_requirement(project["dependencies"], "pyproject.toml").specifier
    makefile = (ROOT / "Makefile").read_text()
    assert f"TORCH_VERSION := {pinned[0]}" in makefile, "make setup installs the torch version environment.yml pins"
