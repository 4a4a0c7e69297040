"""The build step pyproject.toml cannot say: the repository's configs/ shipped inside the package.

A wheel carries every YAML file of configs/ as ``softmax_zoo/configs/`` (package data), where
``softmax_zoo.config.CONFIG_DIR`` finds it when the package is installed from a wheel; a checkout
and an editable install (``make setup``) read configs/ itself. Everything else is in pyproject.toml.
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

CONFIGS = Path("configs")  # relative to the project root, where the build runs
PACKAGED = Path("softmax_zoo", "configs")


class BuildPyWithConfigs(build_py):
    """build_py, then configs/**/*.yaml copied to <build>/softmax_zoo/configs/ (not for an editable install)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        for src in sorted(CONFIGS.rglob("*.yaml")):
            dest = Path(self.build_lib, PACKAGED, src.relative_to(CONFIGS))
            self.mkpath(str(dest.parent))
            self.copy_file(str(src), str(dest))


setup(cmdclass={"build_py": BuildPyWithConfigs})
