"""A dataset's release folder: find its files by name and record every file read (with sha256)."""

from __future__ import annotations

import os
from pathlib import Path

from softmax_zoo.files import sha256_file


class RawDir:
    """Files of one dataset release below ``root``, found by file name at any depth.

    Releases nest their files differently (``sumdata/train/train.article.txt`` in the Gigaword
    tarball, ``train_first10k/train.article.txt`` here), so files are looked up by name anywhere
    under ``root``; the shallowest, then alphabetically first, match wins. Every file handed out
    is recorded so that meta.json can list its sha256.

    Args:
        root: the folder, e.g. ``$SOFTMAX_ZOO_RAW/clinc_oos``.
        task: task name, used in error messages.
    """

    def __init__(self, root: str | Path, task: str):
        self.root = Path(root)
        self.task = task
        if not self.root.is_dir():
            raise FileNotFoundError(
                f"{task}: raw folder {self.root} does not exist; put the release files there, "
                f"or pass raw_dir=<folder> (default $SOFTMAX_ZOO_RAW/<name>)"
            )
        self._by_name: dict[str, list[Path]] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            for name in filenames:
                self._by_name.setdefault(name, []).append(Path(dirpath) / name)
        for paths in self._by_name.values():
            paths.sort(key=lambda p: (len(p.relative_to(self.root).parts), str(p)))
        self.used: list[Path] = []

    def find(self, *names: str) -> Path | None:
        """First file found among ``names`` (in the order given), recorded as used; or None."""
        for name in names:
            if name in self._by_name:
                return self.use(self._by_name[name][0])
        return None

    def require(self, *names: str, what: str) -> Path:
        """Like :meth:`find`, but a missing file raises an error naming what was expected and where.

        Raises:
            FileNotFoundError: none of ``names`` is below ``root``.
        """
        path = self.find(*names)
        if path is None:
            raise FileNotFoundError(
                f"{self.task}: {what} not found: expected one of {list(names)} under {self.root}"
            )
        return path

    def matching(self, predicate) -> list[Path]:
        """Every file whose name satisfies ``predicate(name)``, sorted by name (not yet recorded)."""
        out = [p for name, paths in self._by_name.items() if predicate(name) for p in paths[:1]]
        return sorted(out, key=lambda p: p.name)

    def use(self, path: Path) -> Path:
        """Record ``path`` as read (listed with its sha256 in meta.json) and return it."""
        if path not in self.used:
            self.used.append(path)
        return path

    def sha256s(self) -> dict[str, str]:
        """``{path relative to root: sha256}`` of every file recorded, sorted by path."""
        return {str(p.relative_to(self.root)): sha256_file(p) for p in sorted(self.used)}
