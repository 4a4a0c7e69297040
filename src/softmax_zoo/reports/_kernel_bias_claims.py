"""The kernel-bias claims of Blanc & Rendle 2018 that the page's table does not decide, as data for the ledger macros of
templates/kernel_bias.md.j2: kernel against global popularity (unigram) sampling, near-full-softmax quality at m ≈ 10–50,
and the O(D log n) sampling time (from the losses benchmark's tree timings)."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from ..records import choice
from ._compare import Comparison, Design, compare
from ._pages import bench_group
from ._stats import equivalence, mean, paired_t, seeds_label
from ._verdicts import MIN_SEEDS, Verdict, VerdictKind, equivalence_verdict, not_tested, verdict

EXPERIMENT = "kernel_bias"  # the page's name and our setting's experiment
PAPER_SETTING = "kernel_bias_paper"  # the paper-like setting's experiment (ours): no output bias, plain SGD, 1,200 steps
PAPER_LIKE_ID = "-paper-like"  # the suffix of its ledger ids
SAMPLERS = ("uniform", "unigram", "quadratic", "quadratic_centred", "softmax")  # the page's sampler order, others after
KERNELS = ("quadratic", "quadratic_centred")
DIAGNOSTICS = Path("diagnostics") / "sampler_bias"  # under results_dir: the fixed-checkpoint diagnostics' JSON files
FEW_SAMPLES = (10, 50)  # the review's m ≈ 10–50
COMPARABLE_RATIO = 1.10  # "comparable to full softmax", two-sided: validation perplexity within 10% either way
COMPARABLE_MARGIN_SOURCE = "ours: the review gives no tolerance for \"comparable\"; perplexity within 10% either way"
BENCH_FILE = "bench_losses_cpu.md"  # under results_dir: scripts/bench_losses.py's page; its data is the .json beside it
BENCH_SECTION = "sampled softmax: tree sampling time vs C"
VAL_LOSS = "metrics.val/loss"
# Why the arms are paired by seed: transformers.set_seed(seed) precedes the model's construction, which draws the
# embedding and the LSTM before the head (models/lstm_lm.py), and every run reads the same training stream in order.
PAIRED = f"{Design.PAIRED_BY_SEED.value}: a seed gives every arm the same embedding, LSTM and training stream"


def sampler_name(record: dict[str, Any]) -> str | None:
    """"uniform" / "unigram" / "quadratic" / "softmax" for a sampled run, None for the full softmax."""
    return choice(record, "sampler") if choice(record, "loss") == "sampled_softmax" else None


def cells(records: list[dict[str, Any]]) -> dict[str | None, dict[int, list[dict[str, Any]]]]:
    """sampler (None: the full softmax, m 0) -> m -> its records."""
    out: dict[str | None, dict[int, list[dict[str, Any]]]] = {}
    for r in records:
        name = sampler_name(r)
        out.setdefault(name, {}).setdefault(0 if name is None else int(r["config"]["loss"]["num_samples"]), []).append(r)
    return out


def collect(records: list[dict[str, Any]]) -> tuple[list[float], dict[str, dict[int, list[float]]]]:
    """(full-softmax validation losses over seeds, sampler -> m -> validation losses over seeds)."""
    found = {name: {m: [r["metrics"]["val/loss"] for r in rs] for m, rs in per_m.items()} for name, per_m in cells(records).items()}
    return found.pop(None, {}).get(0, []), found  # type: ignore[return-value]


def fewer_samples_verdict(records: list[dict[str, Any]], kernel: str, ratio: float) -> Verdict | None:
    """The seed-aware verdict on "``kernel`` reaches a given bias with ``ratio``x fewer samples than uniform".

    Each ``kernel`` m with :data:`MIN_SEEDS` seeds is paired with the smallest uniform m ≥ ratio · m with as
    many; per pair, the Student-t interval over seeds of the per-seed Δ = uniform − kernel final validation loss
    (paired by seed, :data:`PAIRED`) (> 0: the kernel
    with ``ratio``x or more fewer samples ends below uniform). The claim is about some bias level, so it is
    supported when one pair is supported and none contradicts, contradicted when every pair is, else
    inconclusive. None when no pair has :data:`MIN_SEEDS` seeds in both cells.
    """
    by = cells(records)
    kern, uni = by.get(kernel, {}), {m: rs for m, rs in by.get("uniform", {}).items() if len(rs) >= MIN_SEEDS}
    spec = Comparison(kernel, "uniform", VAL_LOSS, Design.PAIRED_BY_SEED)
    pairs = [(m_k, m_u, verdict(compare(spec, kern[m_k], uni[m_u]).delta, +1, digits=3))
             for m_k in sorted(m for m, rs in kern.items() if len(rs) >= MIN_SEEDS)
             for m_u in [min((m for m in uni if m >= ratio * m_k), default=None)] if m_u is not None]
    if not pairs:
        return None
    kinds = [v.kind for *_, v in pairs]
    overall = (VerdictKind.SUPPORTED if VerdictKind.SUPPORTED in kinds and VerdictKind.CONTRADICTS not in kinds else
               VerdictKind.CONTRADICTS if all(kind is VerdictKind.CONTRADICTS for kind in kinds) else VerdictKind.INCONCLUSIVE)
    seeds = sorted({r["seed"] for r in records if sampler_name(r) in (kernel, "uniform")})
    return Verdict(overall, f"{overall.value} ({seeds_label(seeds)}): " + "; ".join(
        f"{kernel} m={m_k} against uniform m={m_u} ({m_u // m_k}x the samples), Δ uniform − {kernel} validation loss: {v}"
        for m_k, m_u, v in pairs) + f" ({PAIRED})")


def review_claims(records: list[dict[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """Rows for the review's kernel-against-unigram and m ≈ 10–50 findings, from one setting's runs.

    Each m's comparison of validation losses over seeds is paired by seed (:data:`PAIRED`, :func:`~._verdicts.verdict`):
    one seed gives a single run, which decides nothing.
    """
    full, grid = collect(records)
    if not full:
        return []
    by, base = cells(records), mean(full)
    common = {"paper_setting": experiment != EXPERIMENT, "seeds": sorted({r["seed"] for r in records}), "source": EXPERIMENT,
              "paired": PAIRED}
    suffix = PAPER_LIKE_ID if common["paper_setting"] else ""
    kernel, unigram = grid.get("quadratic", {}), grid.get("unigram", {})
    rows = []
    if kernel and not unigram:
        rows.append(common | {"kind": "vs-unigram", "id": f"kernel-bias-vs-unigram{suffix}", "missing": True})
    elif shared := sorted(set(kernel) & set(unigram)):
        spec = Comparison("quadratic", "unigram", VAL_LOSS, Design.PAIRED_BY_SEED)
        deltas = {m: compare(spec, by["quadratic"][m], by["unigram"][m]).delta for m in shared}
        rows.append(common | {"kind": "vs-unigram", "id": f"kernel-bias-vs-unigram{suffix}", "deltas": deltas,
                              "gaps": {m: (mean(kernel[m]) - base, mean(unigram[m]) - base) for m in shared},
                              "wins": [m for m in shared if mean(unigram[m]) < mean(kernel[m])],
                              "verdicts": {m: verdict(d, +1, digits=3) for m, d in deltas.items()}})
    if kernel:
        gaps = {m: mean(kernel[m]) - base for m in sorted(kernel) if FEW_SAMPLES[0] <= m <= FEW_SAMPLES[1]}
        reach = ("quadratic's gap to the full softmax at " + (", ".join(f"m={m}: {g:+.3f} nats (perplexity ×{math.exp(g):.2f})"
                                                                        for m, g in gaps.items()) or "no m of the grid in 10–50"))
        rows.append(common | {"kind": "m10-50", "id": f"kernel-bias-m10-50{suffix}", "reach": reach,
                              "verdict": comparable_verdict(by, sorted(gaps)) if gaps else not_tested("no m of the grid in 10–50")})
    return rows


def comparable_verdict(by: dict[str | None, dict[int, list[dict[str, Any]]]], ms: list[int]) -> Verdict:
    """"Comparable to full softmax" at each m, two-sided: TOST (:func:`._stats.equivalence`) of Δ = quadratic − full
    softmax final validation loss, paired by seed (:data:`PAIRED`), against ±ln :data:`COMPARABLE_RATIO` nats.
    One m gives its verdict; several: equivalent / not equivalent when every m is, else the fewest-seeds kind or
    inconclusive."""
    full = {r["seed"]: r["metrics"]["val/loss"] for r in by[None][0]}
    parts = {}
    for m in ms:
        kern = {r["seed"]: r["metrics"]["val/loss"] for r in by["quadratic"][m] if r["seed"] in full}
        delta = paired_t(kern, {s: full[s] for s in kern})
        test = equivalence(delta, math.log(COMPARABLE_RATIO), COMPARABLE_MARGIN_SOURCE)
        low, high = test.tost_interval
        span = ("no interval" if delta.n < 2 else f"{100 * (1 - 2 * test.alpha):g}% interval [{low:+.3f}, {high:+.3f}]")
        parts[m] = equivalence_verdict(test, seeds_label(sorted(kern)), f"Δ validation loss {delta.delta:+.3f} nats, {span} against "
                                                                        f"±{test.margin:.3f} ({test.margin_source}); {test.method}")
    kinds = {v.kind for v in parts.values()}
    kind = (next(iter(kinds)) if len(kinds) == 1 else next((k for k in (VerdictKind.SINGLE_RUN, VerdictKind.TOO_FEW_SEEDS) if k in kinds),
                                                          VerdictKind.INCONCLUSIVE))
    seeds = sorted({r["seed"] for m in ms for r in by["quadratic"][m]} & set(full))
    return Verdict(kind, f"{kind.value} ({seeds_label(seeds)}): " + "; ".join(f"m={m}: {v}" for m, v in parts.items()) + f" ({PAIRED})")


def log_time_claim(results_dir: str | Path) -> dict[str, Any]:
    """The O(D log n) row, from the benchmark's tree sampling time at the smallest and largest class count (one timing)."""
    group, _ = bench_group((Path(results_dir) / BENCH_FILE).with_suffix(".json"), BENCH_SECTION)
    sizes = [(int(m.group(1).replace(",", "")), r["ms"]) for r in group.get("rows", ()) if (m := re.search(r"C=([\d,]+)", r["variant"]))]
    return {"kind": "log-n", "id": "kernel-sampling-log-n", "source": EXPERIMENT, "bench": BENCH_FILE,
            "sizes": [sizes[0], sizes[-1]] if len(sizes) >= 2 else None,
            "log_grow": math.log(sizes[-1][0]) / math.log(sizes[0][0]) if len(sizes) >= 2 else None}
