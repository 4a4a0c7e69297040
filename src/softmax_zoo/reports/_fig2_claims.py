"""The Fig. 1 / Fig. 2 claims of Sun et al. 2021 and our verdicts on them, as data for the ledger macros of templates/fig2.md.j2.

Each comparison of two arms is declared once (:data:`VS_SOFTMAX`, :data:`VS_K20`, :data:`FASTER`,
:data:`SMOOTHER`) and decided by the engine's :data:`._compare.Design.INTERVALS_APART`: the arms' 95%
Student-t intervals over seeds lying apart, which needs :data:`~._verdicts.MIN_SEEDS` seeds per arm.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ._compare import Comparison, Design, all_apart, compare
from ._fig2_summary import F1, PAPER_K, Groups, best_k, first_epoch, jitter, metric, points, sparse_ks
from ._pages import bench_group
from ._stats import mean, mean_ci

PAPER_F1 = {"iflytek": 60.7, "clinc_oos": 96.1}  # Sun et al. 2021, Fig. 2: micro-F1 at k=20
VS_SOFTMAX = Comparison("softmax", "sparse-softmax k", points(F1), Design.INTERVALS_APART, partial=True)
VS_K20 = Comparison("sparse-softmax k", f"sparse-softmax k={PAPER_K}", points(F1), Design.INTERVALS_APART, partial=True)
FASTER = Comparison("softmax", f"sparse-softmax k={PAPER_K}", first_epoch, Design.INTERVALS_APART, partial=True)
SMOOTHER = Comparison("softmax", f"sparse-softmax k={PAPER_K}", jitter, Design.INTERVALS_APART, partial=True)
# The losses benchmark (scripts/bench_losses.py, `make bench`) under results_dir: its logit-level cross-entropy group
# times sparse_softmax_cross_entropy beside softmax_cross_entropy and F.cross_entropy, interleaved in one process.
BENCH_FILE = "bench_losses_cpu.md"  # under results_dir: scripts/bench_losses.py's page; its data is the .json beside it
BENCH_GROUP = "cross-entropy ("
SPARSE_ROW, SOFTMAX_ROW, TORCH_ROW = "sparse_softmax_cross_entropy", "softmax_cross_entropy", "F.cross_entropy"


def seeds_of(*arms: list[dict[str, Any]]) -> list[int]:
    """The seeds the runs of ``arms`` have, sorted."""
    return sorted({r["seed"] for runs in arms for r in runs})


def regime(groups: Groups) -> float | None:
    """The mean share (points) of test targets inside the top-k of the k=20 runs; None unless every one measured it."""
    runs = groups.get(("sparse", PAPER_K), [])
    shares = metric(runs, "test/target_in_topk")
    return mean(shares) if runs and len(shares) == len(runs) else None


def task_claims(task: str, groups: Groups, *, finetuned: bool = False) -> list[dict[str, Any]]:
    """One task's rows (k=20 best, robustness over k, the paper's absolute number, Fig. 1's convergence) as data."""
    ks = sparse_ks(groups)
    if not ks:
        return []
    sparse = {k: groups[("sparse", k)] for k in ks}
    soft = groups.get(("softmax", None))
    tag = "finetune-" if finetuned else ""
    common = {"task": task, "finetuned": finetuned, "regime": regime(groups), "source": "fig2"}
    means, seeds = {k: mean(metric(sparse[k], F1)) for k in ks}, seeds_of(*sparse.values())
    rows = []
    if PAPER_K in ks:
        others = {k: compare(VS_K20, sparse[k], sparse[PAPER_K]).verdict(direction=1) for k in ks if k != PAPER_K}
        rows.append(common | {"kind": "k20-best", "id": f"fig2-{tag}k20-best-{task}", "best": best_k(groups), "means": means,
                              "k20": mean_ci(metric(sparse[PAPER_K], F1)), "seeds": seeds,
                              "verdict": all_apart(others, seeds, f"k={PAPER_K}'s", "above")})
    if soft:
        vs = {k: compare(VS_SOFTMAX, soft, sparse[k]) for k in ks}
        side = {k: c.delta.side for k, c in vs.items()}
        rows.append(common | {"kind": "robust-k", "id": f"fig2-{tag}robust-k-{task}", "ks": ks, "means": means,
                              "above": [k for k in ks if side[k] == "higher"], "below": [k for k in ks if side[k] == "lower"],
                              "seeds": seeds_of(soft, *sparse.values()),
                              "verdict": all_apart({k: c.verdict(direction=1) for k, c in vs.items()}, seeds_of(soft, *sparse.values()),
                                                   "the softmax one", "below")})
    if task in PAPER_F1 and PAPER_K in ks:
        in_scope = metric(sparse[PAPER_K], "test/in_scope_accuracy") if task == "clinc_oos" else []
        rows.append(common | {"kind": "f1", "id": f"fig2-{tag}{task}-f1", "paper": PAPER_F1[task], "k20": mean(metric(sparse[PAPER_K], F1)),
                              "in_scope": mean(in_scope) if in_scope else None, "seeds": seeds_of(sparse[PAPER_K])})
    if soft and PAPER_K in ks:
        rows.append(common | {"kind": "convergence", "id": f"fig1-{tag}convergence-{task}", "seeds": seeds_of(soft, sparse[PAPER_K]),
                              "faster": convergence(FASTER, soft, sparse[PAPER_K], +1),
                              "smoother": convergence(SMOOTHER, soft, sparse[PAPER_K], -1)})
    return rows


def convergence(spec: Comparison, soft: list[dict[str, Any]], sparse: list[dict[str, Any]], direction: int) -> dict[str, Any] | None:
    """Fig. 1's "faster" (validation micro-F1 after epoch 1 higher) or "smoother" (jitter lower): each arm's mean and the verdict."""
    c = compare(spec, soft, sparse)
    if not c.delta.values_a or not c.delta.values_b:
        return None
    return {"softmax": mean(c.delta.values_a), "sparse": mean(c.delta.values_b), "verdict": c.verdict(direction=direction)}


def speed_claim(results_dir: str | Path) -> dict[str, Any]:
    """The title's "Faster": sparse-softmax's loss against the full softmax's, one side-by-side benchmark timing.

    Parsed from ``<results_dir>/bench_losses_cpu.json``: the times (ms) of the sparse, softmax and torch rows,
    the shape, the load at the start; ``sparse`` is None without a sparse-vs-softmax timing.
    """
    group, report = bench_group((Path(results_dir) / BENCH_FILE).with_suffix(".json"), BENCH_GROUP)
    title, times = group.get("title", ""), {r["variant"]: r["ms"] for r in group.get("rows", ())}
    sparse = next((name for name in times if name.startswith(SPARSE_ROW)), None)
    row = {"kind": "speed", "id": "sparse-faster-timing", "source": "fig2", "bench": BENCH_FILE, "paper_k": PAPER_K}
    if sparse is None or SOFTMAX_ROW not in times:
        return row | {"sparse": None}
    shape, k = re.search(r"\((.*)\)", title), re.search(r"k=(\d+)", sparse)
    return row | {"sparse": sparse, "softmax": SOFTMAX_ROW, "torch": TORCH_ROW if TORCH_ROW in times else None, "times": times,
                  "shape": shape.group(1) if shape else title, "load": report.get("load_average", {}).get("start"),
                  "k": int(k.group(1)) if k else None}
