"""The Fig. 1 / Fig. 2 claims of Sun et al. 2021 and our verdicts on them, from the summarised records.

:func:`ledger` computes every task's claims rows once per build; the page (:mod:`.fig2`) writes
them to the ledger and assembles its headline and discussion from the same rows (:func:`by_claim`).
Verdicts are in the words of :mod:`._verdicts`, each naming its seeds: a comparison of two arms is
decided by their 95% Student-t intervals over seeds lying apart (:func:`apart_verdict`), which needs
:data:`~._verdicts.MIN_SEEDS` seeds per arm.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ._fig2_summary import Groups, best_k, compare, first_epoch, jitters, metric, sparse_ks, task_name
from ._pages import REGIME_NOT_MEASURED
from ._stats import mean, mean_ci, seeds_label
from ._verdicts import MIN_SEEDS, Verdict, VerdictKind

PAPER_K = 20
# Sun et al. 2021, Fig. 2: k=20 is best with ~100+ classes, and its micro-F1 there.
PAPER_F1 = {"iflytek": 60.7, "clinc_oos": 96.1}
NOT_COMPARABLE = {
    "clinc_oos": "not comparable: frozen all-MiniLM-L6-v2, not a fine-tuned BERT; the paper's metric (all 151 classes or in-scope) is not given (results/fig2.md)",
    "iflytek": "not comparable: small char Transformer from scratch on the FewCLUE data, not BERT on CLUE's split (results/fig2.md)",
}
Rows = list[dict[str, str]]
APART = "95% intervals over seeds apart"


def seeds_of(*arms: list[dict[str, Any]]) -> list[int]:
    """The seeds the runs of ``arms`` have, sorted."""
    return sorted({r["seed"] for runs in arms for r in runs})


def apart_verdict(a: list[float], b: list[float], seeds: list[int], direction: int = 1) -> Verdict:
    """The verdict on the claim that b's mean lies above a's (``direction`` +1) or below it (-1).

    Seed-aware: with >= MIN_SEEDS values per arm, "supported" / "contradicts" when the two 95%
    Student-t intervals over seeds lie apart (:func:`compare`; stricter than an interval of the
    difference excluding 0), "inconclusive" when they overlap; fewer seeds say so.
    """
    label, n = seeds_label(seeds), min(len(a), len(b))
    if n == 1:
        return Verdict(VerdictKind.SINGLE_RUN, f"single run ({label}): Δ {mean(b) - mean(a):+.1f}, no interval over seeds")
    if n < MIN_SEEDS:
        return Verdict(VerdictKind.TOO_FEW_SEEDS, f"too few seeds ({label}; a verdict needs {MIN_SEEDS}): Δ {mean(b) - mean(a):+.1f}")
    side = compare(a, b)
    if side == "overlap":
        return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive ({label}): 95% intervals over seeds overlap")
    if (side == "higher") == (direction > 0):
        return Verdict(VerdictKind.SUPPORTED, f"supported ({label}): {APART}, on the claim's side")
    return Verdict(VerdictKind.CONTRADICTS, f"contradicts ({label}): {APART}, opposite to the claim")


def all_of(parts: Mapping[int, Verdict], seeds: list[int], reference: str, against: str) -> Verdict:
    """One verdict over comparisons with several k: supported when all are, contradicts when one does, else inconclusive.

    ``reference`` names what each k is compared with ("k=20's"), ``against`` where a contradicting
    k's interval lies ("above"); fewer seeds than a verdict needs give that kind.
    """
    kinds = {v.kind for v in parts.values()}
    label = seeds_label(seeds)
    few = kinds & {VerdictKind.SINGLE_RUN, VerdictKind.TOO_FEW_SEEDS}
    if few:
        kind = VerdictKind.SINGLE_RUN if VerdictKind.SINGLE_RUN in few else VerdictKind.TOO_FEW_SEEDS
        return Verdict(kind, f"{kind.value} ({label}): no interval over seeds decides")
    opposed = [k for k, v in parts.items() if v.kind is VerdictKind.CONTRADICTS]
    if opposed:
        return Verdict(VerdictKind.CONTRADICTS, f"contradicts ({label}): the 95% interval over seeds of k={opposed} lies "
                                                f"wholly {against} {reference}")
    if kinds == {VerdictKind.SUPPORTED}:
        return Verdict(VerdictKind.SUPPORTED, f"supported ({label}): {APART} from {reference} for every k, on the claim's side")
    open_ = [k for k, v in parts.items() if v.kind is VerdictKind.INCONCLUSIVE]
    return Verdict(VerdictKind.INCONCLUSIVE, f"inconclusive ({label}): the 95% intervals over seeds of k={open_} overlap {reference}")


def ledger(summary: dict[str, Groups]) -> dict[str, Rows]:
    """task -> its claims rows (:func:`claims`), in task order."""
    return {task: claims(task, summary[task]) for task in sorted(summary)}


def by_claim(task: str, rows: Rows) -> dict[str, dict[str, str]]:
    """A task's rows keyed by the claim's id without the task ("fig2-k20-best-wos" -> "fig2-k20-best")."""
    return {r["id"].split("-" + task)[0]: r for r in rows}


def regime_note(groups: Groups) -> str:
    """"; regime: ..." for a claim: the share of test targets inside the top-k of the k=20 runs (or that it was not measured)."""
    runs = groups.get(("sparse", PAPER_K), [])
    shares = metric(runs, "test/target_in_topk")
    if not runs or len(shares) < len(runs):
        return f"; regime: {REGIME_NOT_MEASURED}"
    return f"; regime: test targets in the top-{PAPER_K} {mean(shares):.1f}% (k={PAPER_K} runs)"


def claims(task: str, groups: Groups) -> Rows:
    """Ledger rows of one task: k=20 best, robustness over k, the paper's absolute number; each names its regime."""
    ks = sparse_ks(groups)
    if not ks:
        return []
    note = regime_note(groups)
    name = task_name(task)
    best = best_k(groups)
    means = {k: mean(metric(groups[("sparse", k)], "test/micro_f1")) for k in ks}
    rows = []
    if PAPER_K in means:
        mean20, half20, _ = mean_ci(metric(groups[("sparse", PAPER_K)], "test/micro_f1"))
        values20 = metric(groups[("sparse", PAPER_K)], "test/micro_f1")
        others = {k: apart_verdict(metric(groups[("sparse", k)], "test/micro_f1"), values20,
                                   seeds_of(groups[("sparse", k)], groups[("sparse", PAPER_K)])) for k in ks if k != PAPER_K}
        seeds = seeds_of(*(groups[("sparse", k)] for k in ks))
        rows.append({
            "id": f"fig2-k20-best-{task}",
            "claim": f"with ~100+ classes k=20 is the best sparse-softmax k ({name}, Fig. 2)",
            "paper": "k=20 best",
            "ours": f"best k={best} ({means[best]:.1f}); k=20: {mean20:.1f} ± {half20:.1f} test micro-F1 ({seeds_label(seeds)}){note}",
            "verdict": str(all_of(others, seeds, f"k={PAPER_K}'s", "above")),
            "source": "fig2",
        })
    spread = max(means.values()) - min(means.values())
    if ("softmax", None) in groups:
        soft_runs = groups[("softmax", None)]
        soft = metric(soft_runs, "test/micro_f1")
        below = [k for k in ks if compare(soft, metric(groups[("sparse", k)], "test/micro_f1")) == "lower"]
        per_k = {k: apart_verdict(soft, metric(groups[("sparse", k)], "test/micro_f1"), seeds_of(soft_runs, groups[("sparse", k)]))
                 for k in ks}
        seeds = seeds_of(soft_runs, *(groups[("sparse", k)] for k in ks))
        rows.append({
            "id": f"fig2-robust-k-{task}",
            "claim": f"sparse-softmax is robust over a wide range of k ({name}, Fig. 2)",
            "paper": "robust",
            "ours": f"test micro-F1 spread of the means over k={ks[0]}..{ks[-1]}: {spread:.1f} points; "
            f"k below the softmax baseline: {below or 'none'} ({seeds_label(seeds)}){note}",
            "verdict": str(all_of(per_k, seeds, "the softmax one", "below"))
            + " (our reading of robust: no k's interval wholly below the softmax one; the claim holds when every k's lies wholly above it)",
            "source": "fig2",
        })
    if task in PAPER_F1 and PAPER_K in means:
        extra = ""
        if task == "clinc_oos":
            ins = metric(groups[("sparse", PAPER_K)], "test/in_scope_accuracy")
            extra = f"; in-scope accuracy {mean(ins):.1f}" if ins else ""
        rows.append({
            "id": f"fig2-{task}-f1",
            "claim": f"sparse-softmax k=20 reaches {PAPER_F1[task]} micro-F1 on {name} (Fig. 2)",
            "paper": str(PAPER_F1[task]),
            "ours": f"{means[PAPER_K]:.1f} test micro-F1{extra} ({seeds_label(seeds_of(groups[('sparse', PAPER_K)]))}){note}",
            "verdict": NOT_COMPARABLE.get(task, "not comparable at cpu scale (see results/fig2.md)"),
            "source": "fig2",
        })
    convergence = convergence_claim(task, groups)
    if convergence:
        rows.append(convergence)
    return rows


def convergence_claim(task: str, groups: Groups) -> dict[str, str] | None:
    """Fig. 1 ledger row: validation micro-F1 after the first epoch, and the curves' jitter.

    Our reading: "faster" = the sparse runs' epoch-1 validation micro-F1 interval lies above the
    softmax runs'; "smoother" = their jitter interval lies below (95% intervals over seeds).
    """
    soft, sparse = groups.get(("softmax", None)), groups.get(("sparse", PAPER_K))
    if not soft or not sparse:
        return None
    ours, verdicts = [], []
    f1_soft, f1_sparse = first_epoch(soft), first_epoch(sparse)
    seeds = seeds_of(soft, sparse)
    if f1_soft and f1_sparse:
        ours.append(f"val micro-F1 after epoch 1: softmax {mean(f1_soft):.1f}, sparse {mean(f1_sparse):.1f}")
        verdicts.append(f"faster: {apart_verdict(f1_soft, f1_sparse, seeds)}")
    j_soft, j_sparse = jitters(soft), jitters(sparse)
    if j_soft and j_sparse:
        ours.append(f"loss jitter (mean |step change| / mean loss): softmax {mean(j_soft):.3f}, sparse {mean(j_sparse):.3f}")
        verdicts.append(f"smoother: {apart_verdict(j_soft, j_sparse, seeds, direction=-1)}")
    return {
        "id": f"fig1-convergence-{task}",
        "claim": f"sparse-softmax (k=20) converges faster and more smoothly than softmax ({task_name(task)}, Fig. 1)",
        "paper": "faster, smoother",
        "ours": "; ".join(ours) + f" ({seeds_label(seeds)})",
        "verdict": "; ".join(verdicts),
        "source": "fig2",
    }
