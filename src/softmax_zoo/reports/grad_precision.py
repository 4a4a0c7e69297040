"""The precision page: cross-entropy's logit gradient against float64 at confident predictions, per head and precision.

Built from ``<results_dir>/diagnostics/grad_precision.json`` (``python -m softmax_zoo.studies.grad_precision``): per
path, precision and target probability p_t the median and quartiles over rows of the target entry's relative error
and the row's relative L2 error, a figure of them, and the claims rows of "A Fix for Softmax and Cross-Entropy"'s
gradient claim, one per precision. Each row declares its form as data (``form`` in claims.json, :func:`forms`).
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from ._forms import ClaimForm, ClaimKind
from ._pages import file_commit, page_command, publish, pyplot, save_figure, shown_path, template_words

PAGE = "grad_precision"
MEASUREMENT = Path("diagnostics") / f"{PAGE}.json"
HEADLINES: dict[str, str] = {}  # no run records: the page is not in README.md's status table
STANDARD, STABLE = "torch F.cross_entropy", ("stable_softmax", "stable_softmax chunked")  # the claim's two forms
CONFIDENT = 0.999  # the claim's members: every measured p_t at or above it ("when the target logit dominates")
# The unit roundoff of each precision's gradient (2^-p, p its significand bits): an error within it is the rounding
# of the gradient itself, which no form of the loss avoids.
ROUNDOFF = {"float32": 2.0 ** -24, "bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}
FIGURE = template_words("_grad_precision_figures.j2")


def spread(values: list[float]) -> dict[str, float]:
    """The median and quartiles of ``values`` (each one value when there is one)."""
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    return {"median": statistics.median(values), "q1": q[0], "q3": q[2], "n": len(values)}


def cells(measurement: dict[str, Any]) -> dict[tuple[str, str, float], dict[str, Any]]:
    """(path, precision, p_t) -> the spread of its target and row errors, and its realised p_t's median."""
    return {(r["path"], r["precision"], r["target_prob"]): {
        "target": spread(r["target_rel"]), "row": spread(r["row_rel"]),
        "realised": statistics.median(r["realised_target_prob"])} for r in measurement["rows"]}


def claim_row(table: dict, precision: str, probs: list[float], where: str) -> dict[str, Any]:
    """The claims row at ``precision``: at every p_t ≥ :data:`CONFIDENT` the stable head's median target-gradient error
    (the larger of plain and chunked) is below the standard form's (torch's F.cross_entropy) or within the gradient's own
    rounding (:data:`ROUNDOFF`)."""
    members = [p for p in probs if p >= CONFIDENT]
    pairs = {p: {"standard": table[STANDARD, precision, p]["target"]["median"],
                 "stable": max(table[s, precision, p]["target"]["median"] for s in STABLE)} for p in members}
    roundoff = ROUNDOFF[precision]
    failing = [p for p, v in pairs.items() if not (v["stable"] < v["standard"] or v["stable"] <= roundoff)]
    return {"id": f"grad-precision-{precision}", "source": PAGE, "precision": precision, "pairs": pairs,
            "failing": failing, "holds": not failing, "where": where,
            "form": ClaimForm(ClaimKind.DETERMINISTIC, "producing a zero gradient even though the true gradient is nonzero",
                              measure="median target-gradient relative error", better="lower", members=members,
                              extra={"arms": [STANDARD, *STABLE], "roundoff": roundoff})}


HALF_TINY = 2.0 ** -24  # float16's smallest subnormal


def half_tail(table: dict, probs: list[float], classes: int) -> dict[str, Any] | None:
    """Where a tail entry's mean gradient, (1 − p_t) / (C − 1), is first below float16's smallest subnormal: that p_t,
    the mean, and the stable head's float16 median target and row errors there (None when it never is)."""
    p = next((p for p in sorted(probs) if (1 - p) / (classes - 1) < HALF_TINY), None)
    if p is None:
        return None
    cell = table["stable_softmax", "float16", p]
    return {"p": p, "mean": (1 - p) / (classes - 1), "tiny": HALF_TINY, "target": cell["target"]["median"],
            "row": cell["row"]["median"]}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: settings, provenance, per path and precision the errors at each p_t, the claims rows."""
    path = Path(results_dir) / MEASUREMENT
    if not path.is_file():
        raise FileNotFoundError(f"no {shown_path(path)}; run `make precision` first")
    m = json.loads(path.read_text(encoding="utf-8"))
    table, probs = cells(m), m["settings"]["target_probs"]
    where = f"torch {m['versions']['torch'].split('+')[0]}, CPU ({m['cpu']['capability']})"
    return {
        "command": page_command(PAGE, results_dir), "measurement": shown_path(path), "study_command": m["command"],
        "commit": file_commit(m), "date": m["date"], "machine": m["machine"], "cpu": m["cpu"], "s": m["settings"],
        "paths": m["paths"], "precisions": m["precisions"], "probs": probs, "sparse_backward": m["sparse_backward"],
        "torch_lce": m["torch_linear_cross_entropy"], "confident": CONFIDENT, "standard": STANDARD, "stable": STABLE,
        "rows": [{"path": name, "precision": precision, "p": p, **table[name, precision, p]}
                 for precision in m["precisions"] for name in m["paths"] for p in probs],
        "claims": [claim_row(table, precision, probs, where) for precision in m["precisions"]],
        "sparse_top": {precision: table["sparse_softmax", precision, max(probs)]["target"]["median"] for precision in m["precisions"]},
        "half_tail": half_tail(table, probs, m["settings"]["classes"]),
    }


def style(name: str, paths: list[str]) -> dict[str, Any]:
    """A path's line: one colour and marker per path, dashed when chunked, so that paths that coincide stay visible."""
    i = paths.index(name)
    return {"color": f"C{i}", "marker": "osD^vx<>"[i % 8], "linestyle": "--" if name.endswith("chunked") else "-",
            "markersize": 7 - 0.5 * i, "markerfacecolor": "none", "capsize": 2}


def plot(data: dict[str, Any], out: Path) -> None:
    """grad_precision.png: per precision (columns) the median target-gradient (top) and row (bottom) relative error
    against 1 − p_t, one line per path, the quartiles as error bars."""
    precisions = data["precisions"]
    fig, axes = pyplot().subplots(2, len(precisions), figsize=(4.6 * len(precisions), 8.6), squeeze=False, sharey="row")
    for col, precision in enumerate(precisions):
        for row, key in enumerate(("target", "row")):
            ax = axes[row][col]
            for name in data["paths"]:
                points = [r for r in data["rows"] if r["path"] == name and r["precision"] == precision]
                x = [1 - r["p"] for r in points]
                med = [max(r[key]["median"], FLOOR) for r in points]
                low = [m - max(r[key]["q1"], FLOOR) for m, r in zip(med, points)]
                high = [max(r[key]["q3"], FLOOR) - m for m, r in zip(med, points)]
                ax.errorbar(x, med, yerr=[low, high], label=name, **style(name, data["paths"]))
            ax.set(xscale="log", yscale="log", title=str(FIGURE.title(precision, key)), xlabel=str(FIGURE.xlabel()))
            ax.invert_xaxis()
            ax.grid(True, which="both", alpha=0.3)
        for row, key in enumerate(("target", "row")):
            axes[row][0].set_ylabel(str(FIGURE.ylabel(key)))
    axes[-1][len(precisions) // 2].legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, fontsize=8)  # below, hiding no line
    save_figure(fig, out / f"{PAGE}.png")


FLOOR = 1e-9  # errors drawn at no less than this (an exact 0 has no place on a log axis)


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write grad_precision.md, grad_precision.png and the grad-precision-* rows of claims.md into ``out``."""
    data = summarise(results_dir)
    out = Path(out or results_dir)
    plot(data, out)
    publish(out, PAGE, data)
