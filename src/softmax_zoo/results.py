"""Run records, and the tables and claims ledger built from them.

Records: each run writes ``<results_dir>/runs/<experiment_name>/<run_name>.json`` atomically
(a temporary file in the same folder, then ``os.replace``; a crash leaves no record). A record
holds the resolved config, git commit and dirty flag, seed, data checksums, metrics, the heads
as built and the parameter count, per-step training loss, timings (wall, train, examples/s for
training and each evaluated split), device, versions and command line (:func:`make_record`).

Reports (``src/softmax_zoo/reports/<name>.py``) expose ``build() -> None`` and use the helpers
here: :func:`load_records`, :func:`group_by`, :func:`mean_ci`, :func:`paired_bootstrap`,
:func:`markdown_table`, :func:`provenance` and :func:`update_claims`. Build one with::

    python -m softmax_zoo.results <report-name>      # or: python scripts/make_tables.py <report-name>
"""

from __future__ import annotations

import importlib
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf
from scipy import stats

RECORD_SCHEMA = 1
REPO_ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- records


def runs_dir(results_dir: str | Path = "results") -> Path:
    """Folder of the run records: ``<results_dir>/runs``."""
    return Path(results_dir) / "runs"


def git_state(repo: Path = REPO_ROOT) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the repository holding the code."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(status.strip())}


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


def train_loss_curve(log_history: Iterable[dict[str, Any]]) -> dict[str, list]:
    """``{"step": [...], "loss": [...]}`` from the Trainer's ``state.log_history``.

    Each entry is the mean loss over the optimiser steps since the previous log (every step with
    ``train.logging_steps=1``).
    """
    entries = [h for h in log_history if "loss" in h and "step" in h]
    return {"step": [int(h["step"]) for h in entries], "loss": [float(h["loss"]) for h in entries]}


def make_record(
    cfg: DictConfig,
    *,
    metrics: dict[str, float],
    train_loss: dict[str, list],
    history: list[dict[str, Any]],
    data_meta: dict[str, Any],
    task_info: dict[str, Any],
    model_info: dict[str, Any],
    timing: dict[str, Any],
    device: dict[str, Any],
    command: Sequence[str],
) -> dict[str, Any]:
    """Assemble a run record (JSON-serialisable; see the module docstring)."""
    return _finite({
        "schema": RECORD_SCHEMA,
        "experiment": cfg.experiment_name,
        "run_name": cfg.run_name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "seed": cfg.seed,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "git": git_state(),
        "data": data_meta,
        "metrics": metrics,
        "model": model_info,
        "train_loss": train_loss,
        "history": history,
        "timing": timing,
        "device": device,
        "versions": versions(),
        "command": shlex.join(command),  # quoted so that it can be pasted into a shell
        "task_info": _jsonable(task_info),
    })


def _jsonable(value: Any) -> Any:
    """``value`` if JSON can hold it, else its ``repr`` (task.info may hold tokenizers etc.)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _finite(value: Any) -> Any:
    """``value`` with each non-finite float replaced by its string ("inf", "-inf", "nan")."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def write_record(record: dict[str, Any], runs: str | Path) -> Path:
    """Write ``record`` to ``runs/<experiment>/<run_name>.json`` atomically; return the path.

    Strict JSON: non-finite floats (a sparse head's NLL of a gold class outside its top-k is
    inf) are written as the strings "inf", "-inf", "nan"; ``float()`` reads them back.
    """
    record = _finite(record)
    text = json.dumps(record, indent=1, allow_nan=False)  # raises before anything is written
    return write_text(Path(runs) / record["experiment"] / f"{record['run_name']}.json", text)


def load_records(runs: str | Path = "results/runs", experiment: str | None = None) -> list[dict[str, Any]]:
    """Every record under ``runs`` (only ``runs/<experiment>/`` if given), sorted by path."""
    root = Path(runs) / experiment if experiment else Path(runs)
    return [json.loads(p.read_text()) for p in sorted(root.rglob("*.json"))]


def get(record: dict[str, Any], key: str) -> Any:
    """A dotted key of a record: ``"config.loss.k"``, ``"metrics.test/micro_f1"``, ``"seed"``.

    Metric names contain "/", so only "." separates levels. A missing key gives None.
    """
    value: Any = record
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def group_by(records: Iterable[dict[str, Any]], keys: Sequence[str]) -> dict[tuple, list[dict[str, Any]]]:
    """Records grouped by the values of dotted ``keys`` (e.g. ``["config.loss._target_", "config.loss.k"]``)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(tuple(get(r, k) for k in keys), []).append(r)
    return groups


# ---------------------------------------------------------------- statistics


def mean_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, int]:
    """Mean and half-width of the Student-t confidence interval over seeds.

    half = t_{(1+confidence)/2, n-1} * s / sqrt(n), s the sample standard deviation (ddof=1).

    Returns:
        (mean, half_width, n); half_width is nan for a single value.
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("mean_ci needs at least one value, got none")
    if x.size == 1:
        return float(x[0]), math.nan, 1
    half = stats.t.ppf((1 + confidence) / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(half), int(x.size)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    *,
    num_samples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    statistic: Callable[[np.ndarray], np.ndarray] | None = None,
) -> dict[str, float]:
    """Paired bootstrap of the difference of per-example scores ``b - a`` (e.g. sparse - softmax).

    Examples are resampled with replacement (the same indices for both systems); ``statistic``
    maps a (num_samples, n) array of resampled differences to (num_samples,) (default: mean).

    Returns:
        ``{"delta": observed statistic, "low", "high": percentile interval, "p_le_0": fraction of
        resamples with delta <= 0}``.
    """
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError(f"a and b must be equal-length non-empty 1-d score lists, got {a.shape} and {b.shape}")
    stat = statistic or (lambda d: d.mean(axis=-1))
    diff = b - a
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(num_samples, diff.size))
    boot = stat(diff[idx])
    alpha = (1 - confidence) / 2
    return {
        "delta": float(stat(diff[None])[0]),
        "low": float(np.quantile(boot, alpha)),
        "high": float(np.quantile(boot, 1 - alpha)),
        "p_le_0": float((boot <= 0).mean()),
    }


def format_mean_ci(values: Sequence[float], scale: float = 1.0, digits: int = 2) -> str:
    """"mean ± half (n=k)" of ``values * scale``; a single value prints as "x (n=1)"."""
    mean, half, n = mean_ci([v * scale for v in values])
    if n == 1:
        return f"{mean:.{digits}f} (n=1)"
    return f"{mean:.{digits}f} ± {half:.{digits}f} (n={n})"


# ---------------------------------------------------------------- tables and claims


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table (cells converted with ``str``, "|" escaped)."""
    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        row = list(row)
        if len(row) != len(header):
            raise ValueError(f"row {row} has {len(row)} cells but the header has {len(header)}")
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` atomically: a temporary sibling, fsync, then rename (nothing on failure)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def save_figure(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Lay out, save atomically (format from the suffix) and close a matplotlib figure."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        fig.savefig(tmp, format=path.suffix.lstrip("."), dpi=dpi)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        plt.close(fig)
    return path


CLAIMS_HEADER = ("id", "claim", "paper", "ours", "verdict", "source")
CLAIMS_INTRO = (
    "# Claims ledger\n\n"
    "Each paper claim we test, the paper's number, ours and a verdict. Rows are keyed by id and "
    "owned by the report named in `source` (`python -m softmax_zoo.results <source>` rebuilds them).\n\n"
)


def read_claims(path: str | Path) -> dict[str, dict[str, str]]:
    """Rows of the claims ledger keyed by id (empty if the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return {}
    rows = {}
    for line in path.read_text().splitlines():
        if not line.startswith("| ") or line.startswith("| id |"):
            continue
        cells = [c.strip().replace("\\|", "|") for c in _split_row(line)]
        if len(cells) == len(CLAIMS_HEADER):
            rows[cells[0]] = dict(zip(CLAIMS_HEADER, cells))
    return rows


def _split_row(line: str) -> list[str]:
    """Cells of a Markdown table row ("| a | b |"), honouring escaped pipes."""
    return re.split(r"(?<!\\)\|", line.strip()[1:-1])


def update_claims(rows: Iterable[dict[str, str]], path: str | Path = "results/claims.md") -> Path:
    """Add or replace claims by id, leaving every other row as it is.

    Args:
        rows: dicts with the keys of ``CLAIMS_HEADER`` (id, claim, paper, ours, verdict, source).
        path: the ledger (results/claims.md).
    """
    ledger = read_claims(path)
    for row in rows:
        missing = [k for k in CLAIMS_HEADER if k not in row]
        if missing:
            raise ValueError(f"claim row {row.get('id', row)} lacks {missing}")
        ledger[str(row["id"])] = {k: str(row[k]) for k in CLAIMS_HEADER}
    table = markdown_table(CLAIMS_HEADER, ([r[k] for k in CLAIMS_HEADER] for _, r in sorted(ledger.items())))
    return write_text(path, CLAIMS_INTRO + table)


def provenance(report: str, records: Sequence[dict[str, Any]]) -> str:
    """The line every report prints under its table: the command, record count and commits."""
    commits = sorted({str(get(r, "git.commit"))[:7] + ("+dirty" if get(r, "git.dirty") else "") for r in records})
    return (
        f"Made by `python -m softmax_zoo.results {report}` from {len(records)} run records "
        f"(code at {', '.join(commits) or 'no records'}).\n"
    )


# ---------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m softmax_zoo.results <report-name>``: run ``softmax_zoo.reports.<name>.build()``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    import pkgutil

    from . import reports

    available = sorted(m.name for m in pkgutil.iter_modules(reports.__path__))
    if len(argv) != 1 or argv[0] not in available:
        listed = ", ".join(available) or "(none yet)"
        print(f"usage: python -m softmax_zoo.results <report>; reports: {listed}", file=sys.stderr)
        return 2
    importlib.import_module(f"{reports.__name__}.{argv[0]}").build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
