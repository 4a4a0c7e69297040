"""Any sweep as a table and a plot: ``python -m softmax_zoo.reports sweep <folder | experiment | multirun folder>``.

Seeds are pooled: a cell is the mean ± 95% Student-t interval over the n runs of one value of the swept keys
(:func:`swept_keys`). Each task gets its own table and plot (:func:`section`). A swept ``loss`` keeps its config name in
the table (what to type to rerun it) and is labelled by its variant below it and in the legend (:func:`loss_labels`).
The words are templates/sweep.md.j2's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from ..config import CONFIG_DIR, SCRATCH_DIR
from ..files import write_text
from ..losses.machinery.registry import variant_label
from ..records import RESULTS_DIRS, find_records
from ..run_identity import COMPUTES_NOTHING, POOLED, matches
from ..run_record import RunRecord, typed
from ._pages import line_plot, provenance, render, template_words
from ._stats import mean_ci

# Metrics that describe a run rather than score it: the top-k regime diagnostics (softmax_zoo.diagnostics.topk), token
# counts, throughput, and the counts of outputs the decoding constraints changed or ended (softmax_zoo.tasks.seq2seq).
DIAGNOSTIC = re.compile(
    r"/(target_in_topk|median_target_rank|logits_near_kth|diagnostics_k|diagnostic_targets|tokens|tokens_per_second"
    r"|examples_per_s\w*|altered_by_constraint\w*|ended_by_constraint\w*|blocked_by_constraint\w*)$"
)
FIGURE = template_words("_sweep_figure.j2")  # the plot's words


def overrides(record: RunRecord) -> dict[str, str]:
    """The command-line overrides of a run, ``{"loss.k": "5", "seed": "0"}`` (``job.overrides``, else its command)."""
    items = record.job.get("overrides") or record.command.split()[3:]
    return dict(item.lstrip("+~").split("=", 1) for item in items if "=" in item)


def computes_nothing(key: str) -> bool:
    """Whether the override ``key`` changes nothing a run computes (logger, folders, ...): the run-identity table's
    ``NOTHING`` keys (:mod:`softmax_zoo.run_identity`); config groups, the seed and the keys that extend a run (a
    longer budget is another result) are not among them."""
    return matches(key, COMPUTES_NOTHING)


def swept_keys(records: Sequence[RunRecord]) -> list[str]:
    """Override keys whose value differs between records, in first-seen order, but for :data:`POOLED` and :func:`computes_nothing`'s."""
    per_run = [overrides(r) for r in records]
    keys = list(dict.fromkeys(k for o in per_run for k in o))
    return [k for k in keys if k not in POOLED and not computes_nothing(k) and len({o.get(k) for o in per_run}) > 1]


def task_of(record: RunRecord) -> str | None:
    """The task a record ran (its config's ``task.name``, else its Hydra choice of task), or None."""
    return record.setting("task", "name") or record.choices.get("task")


def by_task(records: Sequence[RunRecord]) -> dict[str | None, list[RunRecord]]:
    """The records grouped by :func:`task_of`, in first-seen order."""
    return {task: [r for r in records if task_of(r) == task] for task in dict.fromkeys(map(task_of, records))}


def metric_names(records: Sequence[RunRecord]) -> list[str]:
    """Numeric metrics of the records, test/ first, then val/, then the rest, each sorted."""
    names = {k for r in records for k, v in r.metrics.items() if _number(v) is not None}
    return sorted(names, key=lambda k: (not k.startswith("test/"), not k.startswith("val/"), k))


def _declared_metric(record: RunRecord) -> tuple[str, bool | None] | None:
    """``(primary_metric, metric_higher_is_better)`` of the record's task config, else (an older record) of configs/task/<task>.yaml."""
    task = record.setting("task") or {}
    if task.get("primary_metric") is None and task.get("name"):
        path = Path(CONFIG_DIR) / "task" / f"{task['name']}.yaml"
        task = OmegaConf.to_container(OmegaConf.load(path)) if path.is_file() else {}
    metric = task.get("primary_metric")
    return (metric, task.get("metric_higher_is_better")) if metric else None


def primary_metric(records: Sequence[RunRecord]) -> tuple[str, bool | None] | None:
    """The primary metric the records' task declares (a sweep over two tasks has none) and whether higher is better;
    its ``val/`` counterpart where the records lack the declared ``test/`` metric; None without one."""
    declared = {_declared_metric(r) for r in records}
    if len(declared) != 1 or None in declared:
        return None
    (metric, higher), = declared
    names = metric_names(records)
    if metric not in names and metric.startswith("test/") and f"val/{metric[5:]}" in names:
        metric = f"val/{metric[5:]}"
    return (metric, higher) if metric in names else None


def _number(value: Any) -> float | None:
    """``value`` as a float ("inf" strings included), or None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def grouped(records: Sequence[RunRecord], keys: Sequence[str]) -> dict[tuple, list[RunRecord]]:
    """The records by their override values of ``keys``, sorted: numbers by value, then other values, then missing ones."""
    groups: dict[tuple, list[RunRecord]] = {}
    for r in records:
        groups.setdefault(tuple(overrides(r).get(k) for k in keys), []).append(r)
    return dict(sorted(groups.items(), key=lambda group: [(v is None, _number(v) is None, _number(v) or 0.0, str(v)) for v in group[0]]))


def _cell(values: Sequence[float], runs: int) -> str:
    """mean ± 95% half-width of ``values``; "(n=...)" when fewer than the row's ``runs`` records have the metric."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) != len(values):
        return f"{len(values) - len(finite)} non-finite"
    m, half, n = mean_ci(finite)
    cell = f"{m:.4g}" if n == 1 else f"{m:.4g} ± {half:.2g}"
    return cell if n == runs else f"{cell} (n={n})"


def _shown(key: str, value: str | None, record: RunRecord) -> str | None:
    """A swept value as the legend shows it: a loss by its registered label, anything else as given."""
    if key != "loss" or value is None:
        return value
    return variant_label(value, record.setting("loss"), record.choices)


def loss_labels(records: Sequence[RunRecord]) -> dict[str, str]:
    """The registered label of each swept loss by its config name, ``{"sparse_softmax": "sparse"}``; empty if not swept."""
    if "loss" not in swept_keys(records):
        return {}
    return {name: _shown("loss", name, runs[0]) for (name,), runs in grouped(records, ["loss"]).items() if name is not None}


def sweep_table(records: Sequence[RunRecord], names: Sequence[str] | None = None) -> tuple[list[str], list[list[Any]]]:
    """Header and rows: per combination of swept values, n and the mean ± 95% interval of each of ``names`` (default: every metric)."""
    keys, names = swept_keys(records), list(metric_names(records) if names is None else names)
    rows = []
    for values, runs in grouped(records, keys).items():
        cells = [_cell([_number(r.metrics[m]) for r in runs if m in r.metrics], len(runs))
                 if any(m in r.metrics for r in runs) else "—" for m in names]
        rows.append([*("—" if v is None else v for v in values), len(runs), *cells])
    return [*keys, "n", *names], rows


def sweep_plot(records: Sequence[RunRecord], metric: str, path: Path) -> Path | None:
    """``metric`` (mean ± 95% interval) against the first numeric swept key, a line per value of the others; None if none is numeric."""
    keys = swept_keys(records)
    numeric = [k for k in keys if all(_number(overrides(r).get(k)) is not None for r in records if k in overrides(r))]
    if not numeric:
        return None
    x_key, others = numeric[0], [k for k in keys if k != numeric[0]]
    plotted = [r for r in records if x_key in overrides(r) and metric in r.metrics]
    with line_plot(path, xlabel=x_key, ylabel=metric, title=str(FIGURE.title(metric, x_key))) as ax:
        for line, runs in grouped(plotted, others).items():
            points: dict[float, list[float]] = {}
            for r in runs:
                points.setdefault(float(overrides(r)[x_key]), []).append(float(r.metrics[metric]))
            stats = [mean_ci(points[x]) for x in sorted(points)]
            name = ", ".join(f"{k}={_shown(k, v, runs[0])}" for k, v in zip(others, line) if v is not None) or metric
            errors = [0.0 if math.isnan(s[1]) else s[1] for s in stats]
            ax.errorbar(sorted(points), [s[0] for s in stats], yerr=errors, marker="o", capsize=3, label=name)
        xs = [float(overrides(r)[x_key]) for r in plotted]
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 10:
            ax.set_xscale("log")
    return path


def section(records: Sequence[RunRecord], metric: str | None = None, diagnostics: bool = False) -> dict[str, Any]:
    """What the page shows of one task's records; the first metric is ``metric``, else the task's primary metric, else
    the first that is not a diagnostic. Raises ValueError if ``metric`` is not a metric of the records."""
    names, primary, task = metric_names(records), primary_metric(records), task_of(records[0])
    if metric is None:
        metric = primary[0] if primary else next((m for m in names if not DIAGNOSTIC.search(m)), names[0] if names else None)
    elif metric not in names:
        raise ValueError(f"metric={metric!r} is not a metric of these records{f' (task {task})' if task else ''}; they have {names}")
    columns = ([metric] if metric else []) + [m for m in names if m != metric and (diagnostics or not DIAGNOSTIC.search(m))]
    header, rows = sweep_table(records, columns)
    return {"task": task, "runs": len(records), "swept": swept_keys(records), "metric": metric,
            "primary": primary is not None and primary[0] == metric, "higher": primary[1] if primary else None,
            "left_out": len(names) - len(columns), "header": header, "rows": rows, "losses": loss_labels(records)}


def build_sweep(target: str, out: str | Path | None = None, metric: str | None = None, diagnostics: bool = False,
                results_dir: str | Path | None = None) -> str:
    """Write ``<out>/sweep_<name>.md`` (default out: scratch/sweeps, git-ignored) and a plot per task for the sweep
    ``target`` names (:func:`find_records`, in ``results_dir`` if given); return the page's text."""
    records = typed(find_records(target, (results_dir,) if results_dir else RESULTS_DIRS))
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", str(target).strip("/")).strip("_") or "sweep"
    out = Path(out or Path(SCRATCH_DIR) / "sweeps")
    tasks, sections = by_task(records), []
    for task, runs in tasks.items():
        part = section(runs, metric, diagnostics)
        plot = out / (f"sweep_{name}.png" if len(tasks) == 1 else f"sweep_{name}_{task}.png")
        drawn = part["metric"] and sweep_plot(runs, part["metric"], plot)
        sections.append({**part, "plot": drawn.name if drawn else None})
    text = render("sweep.md.j2", target=target, provenance=provenance(f"sweep {target}", records), sections=sections)
    write_text(out / f"sweep_{name}.md", text)
    return text
