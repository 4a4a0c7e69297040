"""Any sweep as a table and a plot: ``python -m softmax_zoo.reports sweep <folder | experiment | multirun folder>``.

The records of a sweep are found by what the argument names: a folder of records
(``scratch/runs/default``), an experiment (``fig2_clinc_oos``: ``<results_dir>/runs/<experiment>``,
looked up in results/ and scratch/), or a Hydra multirun folder (``multirun/2025-01-01/12-00-00``:
the records whose ``job.sweep_dir`` it is). The swept keys are read from the records, not
configured: every command-line override whose value differs between records (the seed aside). Seeds
are pooled: each metric is the mean ± 95% Student-t interval over the runs of one swept value, with
their number n. The plot shows one metric (``metric=``, default the first test metric) against the
first numeric swept key, one line per value of the other keys. A swept ``loss`` keeps its config
name in the table (what to type to rerun it); the line under the table and the plot's legend give
its variant's registered label (:func:`softmax_zoo.losses.variant_label`, e.g. ``sparse`` for
``loss=sparse_softmax``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import SCRATCH_DIR
from ..losses.registry import variant_label
from ..records import load_records, runs_dir, write_text
from ._pages import line_plot, markdown_table, provenance
from ._stats import mean_ci

POOLED = ("seed",)  # keys pooled over, never a swept value


def find_records(target: str, results_dirs: Sequence[str | Path] = ("results", SCRATCH_DIR)) -> list[dict[str, Any]]:
    """The records ``target`` names (see the module docstring).

    Raises:
        FileNotFoundError: nothing matches; the message lists where it looked.
    """
    path = Path(target)
    if path.is_dir() and any(path.glob("*.json")):
        return load_records(path)
    looked = [str(path)]
    for results_dir in results_dirs:
        folder = runs_dir(results_dir) / target
        looked.append(str(folder))
        if folder.is_dir():
            return load_records(folder)
    if path.is_dir():  # a Hydra multirun folder
        sweep = str(path.absolute())
        found = [r for d in results_dirs if runs_dir(d).is_dir() for r in load_records(runs_dir(d))
                 if (r.get("job") or {}).get("sweep_dir") == sweep]
        if found:
            return found
    raise FileNotFoundError(f"no run records for {target!r}: looked in {', '.join(looked)} (and for records of a multirun folder)")


def overrides(record: dict[str, Any]) -> dict[str, str]:
    """The command-line overrides of a run, ``{"loss.k": "5", "seed": "0"}`` (``job.overrides``, else its command)."""
    items = (record.get("job") or {}).get("overrides") or record.get("command", "").split()[3:]
    return dict(item.lstrip("+~").split("=", 1) for item in items if "=" in item)


def swept_keys(records: Sequence[dict[str, Any]]) -> list[str]:
    """Override keys whose value is not the same in every record, pooled keys aside, in first-seen order."""
    per_run = [overrides(r) for r in records]
    keys = list(dict.fromkeys(k for o in per_run for k in o))
    return [k for k in keys if k not in POOLED and len({o.get(k) for o in per_run}) > 1]


def metric_names(records: Sequence[dict[str, Any]]) -> list[str]:
    """Numeric metrics of the records, test/ first, then val/, then the rest, each sorted."""
    names = {k for r in records for k, v in r.get("metrics", {}).items() if _number(v) is not None}
    return sorted(names, key=lambda k: (not k.startswith("test/"), not k.startswith("val/"), k))


def _number(value: Any) -> float | None:
    """``value`` as a float ("inf" strings included), or None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _sort_key(value: str | None) -> tuple:
    number = _number(value)
    return (value is None, number is None, number if number is not None else 0.0, str(value))


def _cell(values: Sequence[float], runs: int) -> str:
    """mean ± 95% half-width of ``values``; "(n=...)" when fewer than the row's ``runs`` records have the metric."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) != len(values):
        return f"{len(values) - len(finite)} non-finite"
    m, half, n = mean_ci(finite)
    cell = f"{m:.4g}" if n == 1 else f"{m:.4g} ± {half:.2g}"
    return cell if n == runs else f"{cell} (n={n})"


def _shown(key: str, value: str | None, record: dict[str, Any]) -> str | None:
    """A swept value as the page shows it: a loss by its registered label, anything else as given."""
    if key != "loss" or value is None:
        return value
    return variant_label(value, (record.get("config") or {}).get("loss"), record.get("choices"))


def loss_labels(records: Sequence[dict[str, Any]]) -> str:
    """"Losses: `softmax`: softmax; `sparse_softmax`: sparse.", the registered label of each swept
    loss; empty when the loss is not swept."""
    if "loss" not in swept_keys(records):
        return ""
    labels: dict[str, str] = {}
    for r in records:
        name = overrides(r).get("loss")
        if name is not None:
            labels.setdefault(name, _shown("loss", name, r))
    return "Losses: " + "; ".join(f"`{name}`: {label}" for name, label in sorted(labels.items())) + ".\n"


def sweep_table(records: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """Header and rows: one row per combination of swept values, n, then each metric's mean ± 95% interval."""
    keys, names = swept_keys(records), metric_names(records)
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in records:
        o = overrides(r)
        groups.setdefault(tuple(o.get(k) for k in keys), []).append(r)
    rows = []
    for values in sorted(groups, key=lambda vs: tuple(_sort_key(v) for v in vs)):
        runs = groups[values]
        cells = [
            _cell([_number(r["metrics"][m]) for r in runs if m in r["metrics"]], len(runs)) if any(m in r["metrics"] for r in runs) else "—"
            for m in names
        ]
        rows.append([*("—" if v is None else v for v in values), len(runs), *cells])
    return [*keys, "n", *names], rows


def sweep_plot(records: Sequence[dict[str, Any]], metric: str, path: Path) -> Path | None:
    """``metric`` (mean ± 95% interval over seeds) against the first numeric swept key; None if no key is numeric."""
    keys = swept_keys(records)
    numeric = [k for k in keys if all(_number(overrides(r).get(k)) is not None for r in records if k in overrides(r))]
    if not numeric:
        return None
    x_key, others = numeric[0], [k for k in keys if k != numeric[0]]
    lines: dict[tuple, dict[float, list[float]]] = {}
    shown: dict[tuple, list[str | None]] = {}  # a line's values as the legend shows them
    for r in records:
        o = overrides(r)
        if x_key in o and metric in r.get("metrics", {}):
            line = tuple(o.get(k) for k in others)
            lines.setdefault(line, {}).setdefault(float(o[x_key]), []).append(float(r["metrics"][metric]))
            shown.setdefault(line, [_shown(k, v, r) for k, v in zip(others, line)])
    with line_plot(path, xlabel=x_key, ylabel=metric, title=f"{metric} against {x_key} (mean ± 95% CI over seeds)") as ax:
        for label, points in sorted(lines.items(), key=lambda kv: tuple(_sort_key(v) for v in kv[0])):
            xs = sorted(points)
            stats = [mean_ci(points[x]) for x in xs]
            errors = [0.0 if math.isnan(s[1]) else s[1] for s in stats]
            name = ", ".join(f"{k}={v}" for k, v in zip(others, shown[label]) if v is not None) or metric
            ax.errorbar(xs, [s[0] for s in stats], yerr=errors, marker="o", capsize=3, label=name)
        if len(xs) > 1 and min(x for pts in lines.values() for x in pts) > 0 and max(xs) / min(xs) >= 10:
            ax.set_xscale("log")
    return path


def build_sweep(target: str, out: str | Path | None = None, metric: str | None = None) -> str:
    """Write ``<out>/sweep_<name>.md`` (+ .png) for the sweep ``target`` names; return the page's text.

    ``out`` defaults to scratch/sweeps (git-ignored): a sweep page is a look at runs, not a committed result.
    """
    records = find_records(target)
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", str(target).strip("/")).strip("_") or "sweep"
    out = Path(out or Path(SCRATCH_DIR) / "sweeps")
    header, rows = sweep_table(records)
    names = metric_names(records)
    metric = metric or (names[0] if names else None)
    if metric is not None and metric not in names:
        raise ValueError(f"metric={metric!r} is not a metric of these records; they have {names}")
    plot = sweep_plot(records, metric, out / f"sweep_{name}.png") if metric else None
    text = (
        f"# Sweep: {target}\n\n{provenance(f'sweep {target}', records)}\n"
        f"Swept: {', '.join(swept_keys(records)) or 'nothing (one configuration)'}; seeds pooled "
        f"(mean ± 95% Student-t interval over the n runs of a row).\n\n" + markdown_table(header, rows)
        + (f"\n{labels}" if (labels := loss_labels(records)) else "")
        + (f"\n![{metric}]({plot.name})\n" if plot else "")
    )
    write_text(out / f"sweep_{name}.md", text)
    return text
