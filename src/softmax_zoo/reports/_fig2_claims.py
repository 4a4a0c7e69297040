"""The fig2 records by task and arm, and Sun et al. 2021's Fig. 1 / Fig. 2 claims on them as data for the ledger
macros of templates/fig2.md.j2. Arms of one seed share initialisation and data order (tests/classification/test_pairing.py),
so every comparison is paired by seed; claims over the grid of k are decided on Holm-adjusted intervals, "stable in k" by
TOST against :data:`STABLE`'s margin (:class:`._compare.Grid`)."""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..losses.registry import variant_label
from ..records import group_by
from ._compare import Comparison, Design, Grid, compare, compare_values, per_seed
from ._pages import bench_group
from ._stats import mean, mean_ci

Groups = dict[tuple, list[dict[str, Any]]]  # arm, ("softmax", None) or ("sparse", k) -> its records, one per seed
F1 = "test/micro_f1"
PAPER_K = 20  # Sun et al. 2021, Fig. 2: the best k with ~100+ classes, the k of its Fig. 1
PAPER_F1 = {"iflytek": 60.7, "clinc_oos": 96.1}  # Sun et al. 2021, Fig. 2: micro-F1 at k=20
# scripts/bench_losses.py (`make bench`) times sparse_softmax_cross_entropy beside softmax_cross_entropy and F.cross_entropy
BENCH_FILE = "bench_losses_cpu.md"  # under results_dir; its data is the .json beside it
BENCH_GROUP = "cross-entropy ("
SPARSE_ROW, SOFTMAX_ROW, TORCH_ROW = "sparse_softmax_cross_entropy", "softmax_cross_entropy", "F.cross_entropy"


def group_runs(records: list[dict[str, Any]]) -> dict[str, Groups]:
    """task name -> arm -> records; the arm from the record's loss choice and k."""
    return {task: {(variant_label(loss), k): rs for (loss, k), rs in group_by(runs, ["choices.loss", "config.loss.k"]).items()}
            for (task,), runs in group_by(records, ["config.task.name"]).items()}


def points(name: str):
    """A record's metric ``name`` (e.g. "test/micro_f1") in points (x100), None without it."""
    return lambda r: 100 * r["metrics"][name] if name in r["metrics"] else None


def metric(runs: list[dict[str, Any]], name: str) -> list[float]:
    """``name`` of each run in points, in record order, runs lacking it left out."""
    return list(per_seed(runs, points(name), partial=True).values())


def val_curve(r: dict[str, Any]) -> dict[float, float]:
    """epoch -> validation micro-F1 (points) of a run that evaluated each epoch (``train.eval_each_epoch``); else empty."""
    return {h["epoch"]: 100 * h["val/micro_f1"] for h in r.get("history", []) if "val/micro_f1" in h}


def jitter(r: dict[str, Any]) -> float | None:
    """Mean |loss_t - loss_(t-1)| over mean loss, how ragged the run's training curve is (None without one)."""
    loss = np.asarray(r.get("train_loss", {}).get("loss", []), dtype=np.float64)
    return float(np.abs(np.diff(loss)).mean() / loss.mean()) if len(loss) > 1 and loss.mean() > 0 else None


def sparse_ks(groups: Groups) -> list[int]:
    return sorted(k for kind, k in groups if kind == "sparse")


def best_k(groups: Groups) -> int | None:
    return max(sparse_ks(groups), key=lambda k: mean(metric(groups[("sparse", k)], F1)), default=None)


by_seed = partial(Comparison, design=Design.PAIRED_BY_SEED, partial=True)  # arms of one seed share initialisation and data
VS_SOFTMAX = by_seed("softmax", "sparse-softmax k", points(F1))
VS_K20 = by_seed("sparse-softmax k", f"sparse-softmax k={PAPER_K}", points(F1))
# "stable in its hyperparameter k" (Sun et al. 2021): the paper states no margin, so the margin (micro-F1 points) is ours
STABLE = by_seed(f"sparse-softmax k={PAPER_K}", "sparse-softmax k", points(F1), margin=1.0,
                 margin_source="ours, 1 micro-F1 point; the paper states no margin for \"stable\"")
FASTER = by_seed("softmax", f"sparse-softmax k={PAPER_K}", lambda r: next(iter(val_curve(r).values()), None))  # after epoch 1
SMOOTHER = by_seed("softmax", f"sparse-softmax k={PAPER_K}", jitter)


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


def task_claims(task: str, groups: Groups, *, finetuned: bool = False) -> list[dict[str, Any]]:
    """One task's rows where their arms ran (k=20 against softmax, a wide range of k, Fig. 1's convergence, k=20 best,
    stable in k, the paper's micro-F1), each with the seeds its comparison paired."""
    soft, sparse = groups.get(("softmax", None)), {k: groups[("sparse", k)] for k in sparse_ks(groups)}
    k20, others, tag = sparse.get(PAPER_K), [k for k in sparse if k != PAPER_K], "finetune-" if finetuned else ""
    means = {k: mean(metric(runs, F1)) for k, runs in sparse.items()}
    rows = []
    if soft and sparse:
        grid = Grid({k: compare(VS_SOFTMAX, soft, runs) for k, runs in sparse.items()})
        found, deltas = grid_rows(grid)
        rows.append({"kind": "robust-k", "id": f"fig2-{tag}robust-k-{task}", "ks": list(sparse), "means": means, "deltas": deltas,
                     "seeds": grid.seeds, "verdict": found})
        if k20:
            c = grid.compared[PAPER_K]
            rows.append({"kind": "k20-vs-softmax", "id": f"fig2-{tag}k20-vs-softmax-{task}", "delta": c.delta, "method": c.method,
                         "row": deltas[list(sparse).index(PAPER_K)], "seeds": list(c.delta.seeds), "verdict": c.verdict(direction=1)})
            rows.append({"kind": "convergence", "id": f"fig1-{tag}convergence-{task}", "seeds": list(c.delta.seeds),
                         "faster": convergence(FASTER, soft, k20, +1), "smoother": convergence(SMOOTHER, soft, k20, -1, digits=3)})
    if k20 and others:
        found, deltas = grid_rows(best := Grid({k: compare(VS_K20, sparse[k], k20) for k in others}))
        rows.append({"kind": "k20-best", "id": f"fig2-{tag}k20-best-{task}", "best": best_k(groups), "means": means,
                     "k20": mean_ci(metric(k20, F1)), "seeds": best.seeds, "deltas": deltas, "verdict": found})
        stable = Grid({k: compare(STABLE, k20, sparse[k]) for k in others})
        rows.append({"kind": "stable-k", "id": f"fig2-{tag}stable-k-{task}", "seeds": stable.seeds, "margin": STABLE.margin,
                     "tost": {k: c.equivalence() for k, c in stable.compared.items()}, "verdict": stable.decide()[0]})
    if k20 and task in PAPER_F1:
        in_scope = metric(k20, "test/in_scope_accuracy")
        rows.append({"kind": "f1", "id": f"fig2-{tag}{task}-f1", "paper": PAPER_F1[task], "k20": mean(metric(k20, F1)),
                     "in_scope": mean(in_scope) if in_scope else None, "seeds": sorted(r["seed"] for r in k20)})
    return [{"task": task, "finetuned": finetuned, "regime": regime(groups), "source": "fig2"} | row for row in rows]


def convergence(spec: Comparison, soft: list[dict[str, Any]], k20: list[dict[str, Any]], direction: int,
                digits: int = 2) -> dict[str, Any] | None:
    """Fig. 1's "faster" or "smoother": each arm's mean over the seeds both have and the verdict on the paired Δ (k=20 −
    softmax); None when no seed has it in both arms."""
    a, b = (per_seed(runs, spec.metric, partial=True) for runs in (soft, k20))
    if not a.keys() & b.keys():
        return None
    c = compare_values(spec, a, b)
    return {"softmax": mean([a[s] for s in c.delta.seeds]), "sparse": mean([b[s] for s in c.delta.seeds]), "delta": c.delta,
            "verdict": c.verdict(direction=direction, digits=digits)}


def speed_claim(results_dir: str | Path) -> dict[str, Any]:
    """The title's "Faster": the times (ms) of the sparse, softmax and torch losses in ``<results_dir>/bench_losses_cpu.json``'s
    cross-entropy group, its shape and the load at the start; ``sparse`` is None without a sparse-vs-softmax timing."""
    group, report = bench_group((Path(results_dir) / BENCH_FILE).with_suffix(".json"), BENCH_GROUP)
    times = {r["variant"]: r["ms"] for r in group.get("rows", ())}
    sparse = next((name for name in times if name.startswith(SPARSE_ROW)), None)
    row = {"kind": "speed", "id": "sparse-faster-timing", "source": "fig2", "bench": BENCH_FILE, "paper_k": PAPER_K}
    if sparse is None or SOFTMAX_ROW not in times:
        return row | {"sparse": None}
    shape, k = re.search(r"\((.*)\)", group["title"]), re.search(r"k=(\d+)", sparse)
    return row | {"sparse": sparse, "softmax": SOFTMAX_ROW, "torch": TORCH_ROW if TORCH_ROW in times else None, "times": times,
                  "shape": shape.group(1) if shape else group["title"], "load": report.get("load_average", {}).get("start"),
                  "k": int(k.group(1)) if k else None}
