"""The Fig. 1 / Fig. 2 claims of Sun et al. 2021 and our verdicts on them, as data for the ledger macros of templates/fig2.md.j2.

Arms of one seed share initialisation and data order (tests/classification/test_pairing.py), so every
comparison is paired by seed (:data:`._compare.Design.PAIRED_BY_SEED`): Δ = sparse k − softmax (or k=20 −
k) per seed, a Student-t interval over seeds. Each is declared once (:data:`VS_SOFTMAX`, :data:`VS_K20`,
:data:`STABLE`, :data:`FASTER`, :data:`SMOOTHER`); the claims over the grid of k ("a wide range of k", "k=20
is best", "stable in k") are decided on Holm-adjusted intervals or, for "stable", by TOST against
:data:`STABLE_MARGIN` (:class:`._compare.Grid`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ._compare import Compared, Comparison, Design, Grid, compare
from ._fig2_summary import F1, PAPER_K, Groups, best_k, first_epoch, jitter, metric, points, sparse_ks
from ._pages import bench_group
from ._stats import mean, mean_ci

PAPER_F1 = {"iflytek": 60.7, "clinc_oos": 96.1}  # Sun et al. 2021, Fig. 2: micro-F1 at k=20
PAIRING_TEST = ("tests/classification/test_pairing.py::"
                "test_softmax_and_sparse_arms_of_one_seed_share_initialisation_and_data_order")
# "stable in its hyperparameter k" (Sun et al. 2021): the paper states no margin, so the margin is ours.
STABLE_MARGIN = 1.0  # micro-F1 points
STABLE_SOURCE = "ours, 1 micro-F1 point; the paper states no margin for \"stable\""
VS_SOFTMAX = Comparison("softmax", "sparse-softmax k", points(F1), Design.PAIRED_BY_SEED, partial=True)
VS_K20 = Comparison("sparse-softmax k", f"sparse-softmax k={PAPER_K}", points(F1), Design.PAIRED_BY_SEED, partial=True)
STABLE = Comparison(f"sparse-softmax k={PAPER_K}", "sparse-softmax k", points(F1), Design.PAIRED_BY_SEED, partial=True,
                    margin=STABLE_MARGIN, margin_source=STABLE_SOURCE)
FASTER = Comparison("softmax", f"sparse-softmax k={PAPER_K}", first_epoch, Design.PAIRED_BY_SEED, partial=True)
SMOOTHER = Comparison("softmax", f"sparse-softmax k={PAPER_K}", jitter, Design.PAIRED_BY_SEED, partial=True)
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


def grid_rows(grid: Grid, direction: int = 1) -> tuple[Any, list[dict[str, Any]]]:
    """(the grid's verdict, one row per key: Δ, raw 95% interval, p, Holm-adjusted interval and p, seeds)."""
    found, holm = grid.decide(direction)
    rows = [{"k": key, "delta": c.mean, "raw": c.interval, "p": c.delta.p_value, "n": c.delta.n_seeds,
             "holm": holm[key].interval if holm else None, "p_holm": holm[key].p_value if holm else None,
             "level": holm[key].confidence if holm else None} for key, c in grid.compared.items()]
    return found, rows


def vs_softmax(groups: Groups) -> Grid | None:
    """Δ = sparse k − softmax micro-F1 per seed for every k of the grid (None without both arms)."""
    soft, ks = groups.get(("softmax", None)), sparse_ks(groups)
    return Grid({k: compare(VS_SOFTMAX, soft, groups[("sparse", k)]) for k in ks}) if soft and ks else None


def task_claims(task: str, groups: Groups, *, finetuned: bool = False) -> list[dict[str, Any]]:
    """One task's rows (k=20 against softmax, k=20 best, a wide range of k, stable in k, the paper's absolute number,
    Fig. 1's convergence) as data."""
    ks = sparse_ks(groups)
    if not ks:
        return []
    sparse = {k: groups[("sparse", k)] for k in ks}
    soft = groups.get(("softmax", None))
    tag = "finetune-" if finetuned else ""
    common = {"task": task, "finetuned": finetuned, "regime": regime(groups), "source": "fig2"}
    means, seeds = {k: mean(metric(sparse[k], F1)) for k in ks}, seeds_of(*sparse.values())
    rows = []
    if soft and (grid := vs_softmax(groups)):
        found, deltas = grid_rows(grid)
        if PAPER_K in ks:
            k20: Compared = grid.compared[PAPER_K]
            rows.append(common | {"kind": "k20-vs-softmax", "id": f"fig2-{tag}k20-vs-softmax-{task}", "delta": k20.delta,
                                  "row": next(r for r in deltas if r["k"] == PAPER_K), "method": k20.method,
                                  "seeds": seeds_of(soft, sparse[PAPER_K]), "verdict": k20.verdict(direction=1)})
        rows.append(common | {"kind": "robust-k", "id": f"fig2-{tag}robust-k-{task}", "ks": ks, "means": means, "deltas": deltas,
                              "seeds": seeds_of(soft, *sparse.values()), "verdict": found})
    if PAPER_K in ks and len(ks) > 1:
        others = [k for k in ks if k != PAPER_K]
        found, deltas = grid_rows(Grid({k: compare(VS_K20, sparse[k], sparse[PAPER_K]) for k in others}))
        rows.append(common | {"kind": "k20-best", "id": f"fig2-{tag}k20-best-{task}", "best": best_k(groups), "means": means,
                              "k20": mean_ci(metric(sparse[PAPER_K], F1)), "seeds": seeds, "deltas": deltas, "verdict": found})
        stable = Grid({k: compare(STABLE, sparse[PAPER_K], sparse[k]) for k in others})
        rows.append(common | {"kind": "stable-k", "id": f"fig2-{tag}stable-k-{task}", "seeds": seeds, "margin": STABLE_MARGIN,
                              "tost": {k: c.equivalence() for k, c in stable.compared.items()}, "verdict": stable.decide()[0]})
    if task in PAPER_F1 and PAPER_K in ks:
        in_scope = metric(sparse[PAPER_K], "test/in_scope_accuracy") if task == "clinc_oos" else []
        rows.append(common | {"kind": "f1", "id": f"fig2-{tag}{task}-f1", "paper": PAPER_F1[task], "k20": mean(metric(sparse[PAPER_K], F1)),
                              "in_scope": mean(in_scope) if in_scope else None, "seeds": seeds_of(sparse[PAPER_K])})
    if soft and PAPER_K in ks:
        rows.append(common | {"kind": "convergence", "id": f"fig1-{tag}convergence-{task}", "seeds": seeds_of(soft, sparse[PAPER_K]),
                              "faster": convergence(FASTER, soft, sparse[PAPER_K], +1),
                              "smoother": convergence(SMOOTHER, soft, sparse[PAPER_K], -1, digits=3)})
    return rows


def convergence(spec: Comparison, soft: list[dict[str, Any]], sparse: list[dict[str, Any]], direction: int,
                digits: int = 2) -> dict[str, Any] | None:
    """Fig. 1's "faster" (validation micro-F1 after epoch 1 higher) or "smoother" (jitter lower): each arm's mean over the
    seeds both have, and the verdict on the paired Δ (sparse − softmax per seed); None when no seed has it in both arms."""
    a, b = ({r["seed"]: v for r in runs if (v := spec.metric(r)) is not None} for runs in (soft, sparse))  # type: ignore[operator]
    if not set(a) & set(b):
        return None
    c = compare(spec, soft, sparse)
    both = c.delta.seeds  # type: ignore[union-attr]
    return {"softmax": mean([a[s] for s in both]), "sparse": mean([b[s] for s in both]), "delta": c.delta,
            "verdict": c.verdict(direction=direction, digits=digits)}


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
