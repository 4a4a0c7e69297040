"""The stable page's deterministic rows: the fix paper's two FP32 minimal examples and the equivalence checks.

Read from the measurements of ``python -m softmax_zoo.studies.loss_forms`` (:data:`LOSS_FORMS` under results_dir):
the softmax-collapse and KD-cancellation examples beside the paper's printed gradients, the stable forms' errors
against float64, and near-identical logits in KD (:func:`examples`). The tolerances are ours and fixed here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._pages import shown_path

LOSS_FORMS = Path("diagnostics") / "loss_forms.json"  # python -m softmax_zoo.studies.loss_forms, under results_dir
KD_ERRORS = ("loss rel", "student grad abs", "teacher grad abs")
NEAR_FORMS = ("standard", "cast", "stable")
PAPER_COLLAPSE = {"standard": 0.0, "stable": -1.52e-8}  # its printed gradients
KD_TOLERANCE = 1e-12  # ours: "equivalent" in float64 = every relative loss and absolute gradient error below this
FLOAT32_EPS = 2.0**-23  # float32's machine epsilon, torch.finfo(torch.float32).eps: a page needs no torch
EQUIVALENT_ULPS = 8  # ours: "equivalent" = max abs gradient error within 8 float32 ulps of 1 (|∂L/∂z| <= 1)
NEARLY_IDENTICAL = 1e-3  # ours: logits that differ by δ <= this are "nearly identical"
CANCELLATION_FACTOR = 10  # ours: cancellation shown = the standard form's error >= 10x the stable form's at each such δ


def loss_forms(results_dir: str | Path) -> dict[str, Any]:
    """The measurements of ``python -m softmax_zoo.studies.loss_forms`` (:data:`LOSS_FORMS` under ``results_dir``)."""
    path = Path(results_dir) / LOSS_FORMS
    if not path.is_file():
        raise FileNotFoundError(f"no {shown_path(path)}; run `python -m softmax_zoo.studies.loss_forms` first")
    return json.loads(path.read_text(encoding="utf-8"))


def examples(m: dict[str, Any]) -> list[dict[str, Any]]:
    """The claims rows of the two minimal examples, the equivalence checks and near-identical KD, from :func:`loss_forms`."""
    c, k, e, s = m["collapse"], m["cancellation"], m["equivalence"], m["settings"]
    kd = {(r["scale"], r["temperature"]): {key: r[key] for key in KD_ERRORS} for r in m["kd_equivalence"]}
    near: dict[str, dict[float, dict[str, float]]] = {}
    for r in m["near_identical"]:
        near.setdefault(r["dtype"], {})[r["delta"]] = {form: r[form] for form in NEAR_FORMS if form in r}
    close = [d for d in s["near_deltas"] if d <= NEARLY_IDENTICAL]
    bound = EQUIVALENT_ULPS * FLOAT32_EPS
    cpu = f"torch {m['versions']['torch'].split('+')[0]}, CPU ({m['cpu']['capability']})"
    where = {dtype: f"{cpu}, {dtype}" for dtype in ("float32", "float64", "float32 and bfloat16")}  # what the rows depend on
    return [
        {"id": "stable-example-collapse", "grads": c, "paper": PAPER_COLLAPSE, "where": where["float32"],
         "matches": c["paper standard"] == 0.0 and f"{c['paper stable']:.2e}" == f"{PAPER_COLLAPSE['stable']:.2e}"},
        {"id": "stable-example-cancellation", "grads": k, "where": where["float32"],
         "zero": all(v == 0 for v in k["paper stable"] + k["stable_kd_loss"]), "residual": any(v != 0 for v in k["standard (autograd)"])},
        {"id": "stable-equivalence", "errors": e, "where": where["float32"], "bound": bound, "ulps": EQUIVALENT_ULPS,
         "shape": s["equivalence_shape"], "scales": s["scales"], "seed": s["seed"], "within": e["stable"]["grad abs"] <= bound},
        {"id": "stable-kd-equivalence", "errors": kd, "where": where["float64"], "tolerance": KD_TOLERANCE,
         "shape": s["kd_shape"], "scales": s["scales"], "temperatures": s["temperatures"],
         "seed": s["seed"], "off": [case for case, e in kd.items() if not max(e.values()) <= KD_TOLERANCE]},  # (scale, T) off it
        {"id": "stable-kd-nearly-identical", "errors": near, "where": where["float32 and bfloat16"], "deltas": close,
         "shape": s["near_shape"], "seed": s["seed"], "bound": NEARLY_IDENTICAL, "factor": CANCELLATION_FACTOR,
         "shown": all(e[d]["standard"] >= CANCELLATION_FACTOR * e[d]["stable"] for e in near.values() for d in close)},
    ]
