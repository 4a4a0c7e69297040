"""The core installs on its own: the wheel in a fresh venv holding only torch and numpy runs a head;
and the wheel carries the Hydra configs (softmax_zoo/configs), which the pipelines compose from.

The venv is offline-made: ``python -m venv --without-pip``, the wheel installed into it by this
interpreter's pip (``--no-deps --no-index``), and torch and numpy made importable by a .pth file
naming a folder of links to exactly the distributions ``pip install torch numpy`` would bring
(their requirement closure, read from this environment's metadata) — so transformers, hydra, scipy
and the rest of the pipelines' packages cannot be imported there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
CORE = ("torch", "numpy")
# Packages of the extras that the core must neither need nor import.
NOT_CORE = ("transformers", "hydra", "omegaconf", "scipy", "matplotlib", "wandb", "accelerate")

HEAD_RUN = """
import importlib.util, json, torch
import softmax_zoo
from softmax_zoo import losses
torch.manual_seed(0)
head = losses.SparseSoftmaxHead(8, 50, k=5, chunk_size=4)
hidden = torch.randn(6, 8, requires_grad=True)
loss = head(hidden, torch.randint(0, 50, (6,)))
loss.backward()
print(json.dumps({
    "file": softmax_zoo.__file__,
    "loss": loss.item(),
    "grads_finite": bool(hidden.grad.isfinite().all() and head.weight.grad.isfinite().all()),
    "importable": {name: importlib.util.find_spec(name) is not None for name in %r},
}))
"""


def closure(names: tuple[str, ...]) -> list[metadata.Distribution]:
    """The installed distributions of ``names`` and of everything they require (markers evaluated, no extras)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        dist = seen[name] = metadata.distribution(name)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(seen.values())


def link_distributions(dists: list[metadata.Distribution], folder: Path) -> None:
    """Links in ``folder`` to the top-level files and folders of ``dists`` (their packages, .libs, dist-info)."""
    folder.mkdir()
    for dist in dists:
        site = Path(dist.locate_file(""))
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__", "bin"}:
            if (site / top).exists() and not (folder / top).exists():
                (folder / top).symlink_to(site / top)


def run(*cmd, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False, **kw)
    assert out.returncode == 0, f"{cmd}: {out.stdout[-2000:]}\n{out.stderr[-4000:]}"
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the project's packaging files (no build folders in the repository)."""
    src = tmp_path_factory.mktemp("project")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("src", "configs"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", dist, src)
    (found,) = dist.glob("softmax_zoo-*.whl")
    return found


@pytest.mark.slow
def test_wheel_declares_torch_and_numpy_only(wheel):
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        lines = z.read(name).decode().splitlines()
    required = [Requirement(x.split(":", 1)[1]) for x in lines if x.startswith("Requires-Dist:")]
    core = sorted(r.name for r in required if r.marker is None)
    assert core == sorted(CORE), core
    extras = {x.split(":", 1)[1].strip() for x in lines if x.startswith("Provides-Extra:")}
    assert {"hf", "pipelines", "test"} <= extras, extras


def core_venv(wheel: Path, tmp_path: Path) -> tuple[Path, Path]:
    """(the venv, its python): the wheel installed beside torch and numpy only."""
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    purelib = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))").stdout.strip())
    link_distributions(closure(CORE), tmp_path / "torch_numpy")
    (purelib / "torch_numpy.pth").write_text(str(tmp_path / "torch_numpy") + "\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index", wheel)
    return venv, python


@pytest.mark.slow
def test_wheel_runs_a_head_in_a_venv_with_only_torch_and_numpy(wheel, tmp_path):
    venv, python = core_venv(wheel, tmp_path)
    probe = NOT_CORE + CORE
    out = run(python, "-I", "-c", HEAD_RUN % (probe,), cwd=tmp_path)  # -I: no PYTHONPATH, no cwd on the path
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["file"].startswith(str(venv)), result["file"]  # the installed wheel, not the source tree
    assert result["grads_finite"] and result["loss"] > 0, result
    assert result["importable"] == {name: name in CORE for name in probe}, result["importable"]


@pytest.mark.slow
def test_without_an_extra_its_parts_name_it_in_one_line(wheel, tmp_path):
    """Only torch and numpy: softmax_zoo.hf names the hf extra, the pipelines' commands the pipelines extra."""
    _, python = core_venv(wheel, tmp_path)
    imported = subprocess.run([str(python), "-I", "-c", "from softmax_zoo.hf import use_head"], cwd=tmp_path,
                              capture_output=True, text=True)
    assert imported.returncode == 1
    last = imported.stderr.strip().splitlines()[-1]
    assert last.startswith('softmax_zoo.extras.MissingExtra: softmax_zoo.hf needs the hf extra: pip install "softmax_zoo[hf]" '
                           "(missing: transformers, hydra, omegaconf"), imported.stderr
    for command in ("softmax_zoo.train", "softmax_zoo.reports"):
        done = subprocess.run([str(python), "-I", "-m", command, "task=synthetic"], cwd=tmp_path, capture_output=True, text=True)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 1 and len(lines) == 1, done.stderr  # the line alone, no traceback
        assert lines[0].startswith(f'python -m {command} needs the pipelines extra: pip install "softmax_zoo[pipelines]" '
                                   "(missing: transformers, hydra, omegaconf, scipy"), done.stderr


def test_wheel_ships_the_configs(wheel):
    """Every YAML file of configs/ is in the wheel, at softmax_zoo/configs/<its path in configs/>."""
    with zipfile.ZipFile(wheel) as z:
        shipped = sorted(n.removeprefix("softmax_zoo/configs/") for n in z.namelist() if n.startswith("softmax_zoo/configs/"))
    expected = sorted(p.relative_to(ROOT / "configs").as_posix() for p in (ROOT / "configs").rglob("*.yaml"))
    assert "train.yaml" in expected and shipped == expected


def test_unpacked_wheel_composes_from_its_own_configs(wheel, tmp_path):
    """The wheel's files first on the path, run outside the repository: the Hydra config comes from the package."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    code = (f"import sys; sys.path.insert(0, {str(site)!r}); from softmax_zoo import config; "
            "print(config.CONFIG_DIR, config.compose(['task=synthetic']).task.name)")
    out = run(sys.executable, "-I", "-c", code, cwd=tmp_path)  # -I: no PYTHONPATH, no cwd on the path
    assert out.stdout.split() == [str(site / "softmax_zoo" / "configs"), "synthetic"], out.stdout


def test_importing_the_losses_imports_no_extra():
    """softmax_zoo.losses (and the package __init__ above it) import nothing from the extras."""
    code = f"import sys, softmax_zoo.losses; print([m for m in {NOT_CORE!r} if m in sys.modules])"
    out = run(sys.executable, "-c", code, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert out.stdout.strip() == "[]", out.stdout
