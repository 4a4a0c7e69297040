"""Every file the project writes, written atomically; fingerprints of files and keys; content-addressed caches.

Writing: :func:`atomic_write` hands a temporary sibling of the target to a writer (text, a
figure, ``torch.save``), fsyncs it and renames it onto the target, so a crash leaves the old file
or none, never half of one; :func:`write_text` and :func:`write_jsonl` are the text cases. The file
gets the mode a plain ``open(path, "w")`` would give it (:func:`file_mode`, 0644 under the usual
umask 022), not the owner-only 0600 of a temporary file, so a group sharing a results folder can
read it.

Fingerprints: :func:`sha256_file` of a file's bytes, :func:`json_key` of a JSON-able description
(the name of a cache entry). :func:`cached_tensors` loads a ``torch.save`` file named by such a key,
or computes and writes it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

KEY_CHARS = 16  # hex characters of a cache key: 64 bits, no collision among a folder's entries


@functools.cache
def file_mode() -> int:
    """The mode of a file created by ``open(path, "w")``: 0o666 less the process's umask, read on first use.

    The umask has no read-only call: it is set and restored at once, before any thread of ours writes.
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def atomic_write(path: str | Path, write: Callable[[Path], Any]) -> Path:
    """Create ``path`` atomically: ``write(tmp)`` fills a temporary sibling, then fsync and rename.

    Args:
        path: the file to create or replace (parent folders are made).
        write: fills the file it is given, e.g. ``lambda tmp: torch.save(obj, tmp)``.

    Returns:
        ``path``, with mode :func:`file_mode`. On any exception the temporary file is removed and
        ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0600
    os.close(fd)
    try:
        os.chmod(tmp, file_mode())
        write(Path(tmp))
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (:func:`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> Path:
    """Write ``rows`` as JSON Lines (UTF-8 kept as is, one object a line) atomically."""
    return write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks (bounded memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def json_key(what: Any) -> str:
    """The first :data:`KEY_CHARS` hex characters of the sha256 of ``what`` as sorted JSON (non-JSON values by ``str``)."""
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:KEY_CHARS]


def cached_tensors(path: Path, compute: Callable[[], Any], matches: Callable[[Any], bool] = lambda _: True,
                   what: str = "cache") -> tuple[Any, bool]:
    """``(value, hit)``: ``torch.load(path)`` if it exists and ``matches`` it, else ``compute()`` saved to ``path`` atomically.

    ``path`` names its content (a :func:`json_key` of everything the value depends on), so an
    existing file is reused as it is; ``matches`` guards against a file that is not what the key
    promises (one written by other code), which is logged and recomputed.
    """
    import torch

    if path.is_file():
        value = torch.load(path, weights_only=True)
        if matches(value):
            return value, True
        log.warning("%s %s does not match what it is keyed by; recomputing", what, path)
    value = compute()
    atomic_write(path, lambda tmp: torch.save(value, tmp))
    return value, False
