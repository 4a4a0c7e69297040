"""What the UniLM pages (table5, table3) share: softmax/sparse-softmax pairs, per-seed paired scores,
seed-aware verdicts on the paper's deltas, and the lines around each scale's table.

A pair is the softmax and the sparse-softmax run of one seed and setting, told apart by the
record's Hydra choice of ``loss``; a setting is the scale, or "<scale>+init" for runs started from
a finished run's weights (``init_from=``), which are paired only with each other. A seed with only
one arm is left out of the deltas and named on the page (:func:`lone_seeds`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..losses.registry import variant_label
from ..records import choice, get, load_records, read_predictions
from ._pages import REGIME_NOT_MEASURED
from ._stats import SeedAwareDelta, format_mean_ci, seeds_label
from ._verdicts import Verdict, VerdictKind, claimed_direction, detectability, not_tested, seed_summary, verdict

SOFTMAX, SPARSE = "softmax", "sparse_softmax"  # the two arms, as configs/loss/ names them
ARMS = (variant_label(SOFTMAX), variant_label(SPARSE))  # their registered labels, "softmax" and "sparse"
BOOTSTRAP_SAMPLES = 2000
Pair = tuple[dict[str, Any], dict[str, Any]]  # (softmax record, sparse-softmax record)
# The columns :func:`delta_cells` fills, after a page's own leading columns.
DELTA_HEADER = [
    "softmax (ours)", "sparse-softmax (ours)", "Δ per seed [95% over test items]", "Δ mean [95% over seeds]",
    "between-seed SD of Δ / item-bootstrap half-width", "smallest Δ one run per arm detects (our scale)", "Δ paper", "verdict",
]


def _settings(records: list[dict[str, Any]]) -> dict[str, dict[tuple[str, int], dict[str, Any]]]:
    """setting -> {(loss, seed): record}, plain settings before their "+init" ones.

    A "+init" setting holds the runs started from a finished run's weights (``init_from``: each seed
    its own seed's softmax run), so its seeds are grouped by whether they start so, not by the path."""
    out: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: (get(r, "config.scale.name"), get(r, "config.init_from") is not None)):
        scale, init = get(r, "config.scale.name"), get(r, "config.init_from")
        out.setdefault(scale if init is None else f"{scale}+init", {})[choice(r, "loss"), r["seed"]] = r
    return out


def _seeds(by: dict[tuple[str, int], dict[str, Any]], loss: str) -> set[int]:
    return {s for arm, s in by if arm == loss}


def paired_runs(records: list[dict[str, Any]]) -> dict[str, list[Pair]]:
    """setting -> [(softmax record, sparse record)] of the seeds both losses have, sorted by seed."""
    out: dict[str, list[Pair]] = {}
    for setting, by in _settings(records).items():
        seeds = sorted(_seeds(by, SOFTMAX) & _seeds(by, SPARSE))
        if seeds:
            out[setting] = [(by[SOFTMAX, s], by[SPARSE, s]) for s in seeds]
    return out


def lone_seeds(records: list[dict[str, Any]]) -> dict[str, dict[int, str]]:
    """setting -> {seed: the one arm it has} for seeds that only one of the two losses ran (left out of the deltas)."""
    out: dict[str, dict[int, str]] = {}
    for setting, by in _settings(records).items():
        soft, sparse = _seeds(by, SOFTMAX), _seeds(by, SPARSE)
        lone = {s: ARMS[0] for s in soft - sparse} | {s: ARMS[1] for s in sparse - soft}
        if lone:
            out[setting] = dict(sorted(lone.items()))
    return out


def load_pairs(runs: Path, experiment: str) -> tuple[dict[str, list[Pair]], dict[str, dict[int, str]]]:
    """(:func:`paired_runs`, :func:`lone_seeds`) of ``runs/<experiment>``; an error naming the make target when there are no pairs."""
    records = load_records(runs, experiment)
    by_setting = paired_runs(records)
    if not by_setting:
        raise FileNotFoundError(
            f"no paired softmax/sparse-softmax records under {runs / experiment}; run `make reproduce-{experiment}`"
        )
    return by_setting, lone_seeds(records)


def per_seed_scores(pairs: list[Pair], runs: Path, key: Callable[[dict], Any]) -> dict[int, tuple[list, list]]:
    """seed -> (``key(row)`` of every softmax test example, of every sparse one), aligned by example."""
    out = {}
    for soft, sparse in pairs:
        rows_a, rows_b = read_predictions(soft, runs), read_predictions(sparse, runs)
        if [r["reference"] for r in rows_a] != [r["reference"] for r in rows_b]:
            raise ValueError(f"{soft['run_name']} and {sparse['run_name']} were not decoded on the same examples")
        out[soft["seed"]] = ([key(r) for r in rows_a], [key(r) for r in rows_b])
    return out


def paper_verdict(delta: SeedAwareDelta, paper: float | None) -> Verdict | None:
    """The vocabulary's verdict (:func:`softmax_zoo.reports._verdicts.verdict`) on the paper's sign; None without a paper value."""
    return None if paper is None else verdict(delta, claimed_direction(paper))


def fmt_delta(d: dict[str, float]) -> str:
    """"+0.10 [-0.20, +0.40]" of one bootstrap (:func:`softmax_zoo.reports._stats.paired_bootstrap`'s dict)."""
    return f"{d['delta']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def seeds_mean(records: list[dict], metric: str) -> str:
    """"mean ± half (n=k)" of ``metric`` over the records' seeds (Student-t)."""
    return format_mean_ci([r["metrics"][metric] for r in records])


def delta_cells(pairs: list[Pair], metric: str, delta: SeedAwareDelta, paper: float | None) -> list[str]:
    """The :data:`DELTA_HEADER` cells of one metric; every cell names its seed count."""
    n = f"n={delta.n_seeds}"
    per_seed = ", ".join(f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]" for d, (lo, hi) in zip(delta.deltas, delta.item_intervals))
    if delta.n_seeds == 1:
        over_seeds, sds, detect = f"— ({n}: no interval over seeds)", f"— / {delta.item_half_width:.2f} ({n})", f"— ({n})"
    else:
        low, high = delta.interval
        over_seeds = f"{delta.mean:+.2f} [{low:+.2f}, {high:+.2f}] ({n})"
        sds = f"{delta.sd:.2f} / {delta.item_half_width:.2f} ({n})"
        detect = f"{delta.min_detectable_delta:.2f} ({n})"
    found = paper_verdict(delta, paper)
    return [
        seeds_mean([p[0] for p in pairs], metric), seeds_mean([p[1] for p in pairs], metric),
        f"{per_seed} ({delta.label})", over_seeds, sds, detect,
        "" if paper is None else f"{paper:+.2f}", "no paper value" if found is None else str(found),
    ]


def delta_claim(
    claim_id: str, claim: str, paper: float, delta: SeedAwareDelta, scale: str, pairs: list[Pair], *, source: str
) -> dict[str, str]:
    """A claims-ledger row for one of the paper's deltas: per-seed Δ, the interval over seeds, what one run detects.

    A decided verdict below scale=paper says that it holds at that scale only: the paper's fine-tuned UniLM
    may sit in another regime (its share of targets inside the top k is not known).
    """
    found = verdict(delta, claimed_direction(paper))
    said = str(found)
    if found.kind in (VerdictKind.SUPPORTED, VerdictKind.CONTRADICTS) and not scale.startswith("paper"):
        said += f"; at scale={scale} only: whether the paper's setting is in this regime is not measured (needs scale=paper)"
    return {
        "id": claim_id, "claim": claim, "paper": f"{paper:+.2f}",
        "ours": f"{seed_summary(delta)} ({scale}{regime(pairs)}); {detectability(delta, paper)}",
        "verdict": said, "source": source,
    }


def setting_columns(by_setting: dict[str, list[Pair]]) -> dict[str, list[dict[str, Any]]]:
    """The settings table's columns (:func:`softmax_zoo.reports._settings.settings_table`): each setting's records, both arms."""
    return {f"scale={setting}": [r for pair in pairs for r in pair] for setting, pairs in by_setting.items()}


def has_regime(pairs: list[Pair]) -> bool:
    """Whether every record of ``pairs`` carries the top-k diagnostics (:mod:`softmax_zoo.diagnostics.topk`)."""
    return all("test/target_in_topk" in r["metrics"] for p in pairs for r in p)


def regime(pairs: list[Pair]) -> str:
    """"; regime: ..." naming the share of test targets in Ω_k per arm and the start (or that it was not measured)."""
    if not has_regime(pairs):
        return f"; regime: {REGIME_NOT_MEASURED}"
    share = [np.mean([p[i]["metrics"]["test/target_in_topk"] for p in pairs]) for i in (0, 1)]
    k = int(pairs[0][1]["metrics"]["test/diagnostics_k"])
    start = pairs[0][0]["config"].get("init_from") or pairs[0][0]["config"]["model"]["checkpoint"] or "random init"
    return f"; regime: test targets in Ω_{k} softmax {100 * share[0]:.0f}%, sparse {100 * share[1]:.0f}%; start {start}"


def paper_setting_claims(by_setting: dict[str, list[Pair]], claims: list[dict[str, str]], experiment: str) -> list[dict[str, str]]:
    """Rows saying the paper's setting is untested, while there are no scale=paper pairs.

    One per paper delta, keyed ``<experiment>_paper_<rest of the id>``.
    """
    if "paper" in by_setting:
        return []
    rows = {}
    for c in claims:
        key = c["id"].split("_", 2)[2]  # "<experiment>_<setting>_<key>": setting names hold no "_"
        rows[key] = {"id": f"{experiment}_paper_{key}", "claim": c["claim"], "paper": c["paper"], "ours": "",
                     "verdict": str(not_tested("needs scale=paper")), "source": experiment}
    return list(rows.values())


def section_head(scale: str, pairs: list[Pair], runs: Path, unit: str, lone: dict[int, str] | None = None) -> str:
    """"## scale=cpu: paired seeds 0, 500 test <unit>s, ... model X (checkpoint)" of one setting's section."""
    soft = pairs[0][0]
    model = soft["config"]["model"]
    left_out = "".join(f" (seed {s}: {arm} arm only, left out)" for s, arm in (lone or {}).items())
    return (
        f"## scale={scale}: paired {seeds_label([p[0]['seed'] for p in pairs])}{left_out}, "
        f"{len(read_predictions(soft, runs))} test {unit}s, "
        f"{soft['task_info']['sizes']['train']} training {unit}s, {soft['timing']['global_steps']} optimiser steps, "
        f"model {model['name']} ({model['checkpoint'] or 'random init'})"
    )


def section(
    scale: str, pairs: list[Pair], runs: Path, *, unit: str, table: str, throughput: str, beams: list[int],
    verdicts: list[Verdict], paper_model: str, head_suffix: str = "", lone: dict[int, str] | None = None,
) -> str:
    """One setting's section of a page: heading, starting point, the table, throughput, degenerate outputs, summary.

    ``paper_model`` names the model of the paper's setting by its strength on this task (the regime line's).
    """
    return (
        section_head(scale, pairs, runs, unit, lone) + head_suffix + "\n\n" + setting_line(pairs) + table + "\n" + throughput
        + "\n\n" + stutter_line(pairs, runs, beams) + regime_line(pairs, paper_model) + summary(verdicts, scale) + "\n"
    )


def regime_line(pairs: list[Pair], paper_model: str) -> str:
    """Where the test targets sit among each arm's logits (teacher-forced, every target token); empty for older records.

    ``paper_model``: the paper's setting's model, e.g. "a pre-trained UniLM (its own Gigaword-10k result: ROUGE-1 34.21)".
    """
    if not has_regime(pairs):
        return ""

    def both(metric: str, fmt: str) -> str:
        return " / ".join(fmt.format(np.mean([p[i]["metrics"][f"test/{metric}"] for p in pairs])) for i in (0, 1))

    k = int(pairs[0][1]["metrics"]["test/diagnostics_k"])
    return (
        f"Regime (teacher-forced test targets, softmax / sparse): share inside the top-{k} logits Ω_{k} "
        f"{both('target_in_topk', '{:.1%}')}; median target rank {both('median_target_rank', '{:.0f}')}; logits within "
        f"0.1 of the {k}-th {both('logits_near_kth', '{:.0f}')}. The same shares for the paper's setting "
        f"({paper_model}) are not measured here.\n\n"
    )


def setting_line(pairs: list[Pair]) -> str:
    """For ``init_from`` settings, what both arms started from (empty otherwise)."""
    inits = sorted({str(r["config"].get("init_from")) for p in pairs for r in p if r["config"].get("init_from")})
    start = (f"the weights of {', '.join(f'`{i}`' for i in inits)} (a finished softmax run" if len(inits) == 1 else
             f"the weights of their seed's finished softmax run ({', '.join(f'`{i}`' for i in inits)}")
    return (
        f"Both arms start from {start}: a softmax-trained LM head, as UniLM's pre-trained one) and train the optimiser "
        "steps given here, with a fresh optimiser.\n\n"
        if inits else ""
    )


def stutters(text: str, run: int = 3) -> bool:
    """Whether some word appears ``run`` or more times in a row ("the the the"): a degenerate output."""
    words, count = text.split(), 1
    for prev, word in zip(words, words[1:]):
        count = count + 1 if word == prev else 1
        if count >= run:
            return True
    return False


def stutter_line(pairs: list[Pair], runs: Path, beams: list[int]) -> str:
    """Share of test outputs with a word 3+ times in a row, per loss and beam; a caution when it is high.

    When the prediction rows say how the search constraints shaped each output (``constraint_steps``,
    ``ended_by_constraint``), a second line gives those shares too (:func:`constraint_line`).
    """
    shares, rows = {}, {}
    for i, name in enumerate(ARMS):
        rows[name] = [r for p in pairs for r in read_predictions(p[i], runs)]  # read once, used for every beam
        for beam in beams:
            shares[name, beam] = 100.0 * np.mean([stutters(r[f"beam{beam}"]["prediction"]) for r in rows[name]])
    text = "Degenerate outputs (a word 3+ times in a row), % of test outputs: " + _per_system(shares, beams)
    if max(shares.values()) > 50:
        text += " **Over half of one system's outputs are degenerate: the models are undertrained and the deltas say little.**"
    return text + "\n\n" + constraint_line(rows, beams)


def _per_system(shares: dict[tuple[str, int], float], beams: list[int]) -> str:
    """"softmax a / b; sparse c / d (beam 1 / 5)." of percentages per system and beam."""
    return "; ".join(
        f"{name} " + " / ".join(f"{shares[name, b]:.0f}" for b in beams) for name in ARMS
    ) + (f" (beam {' / '.join(map(str, beams))})." if len(beams) > 1 else ".")


def constraint_line(rows: dict[str, list[dict[str, Any]]], beams: list[int]) -> str:
    """Shares of outputs altered / ended by a search constraint, per system and beam; empty for older rows."""
    if not all("constraint_steps" in r[f"beam{b}"] for recs in rows.values() for r in recs for b in beams):
        return ""
    altered = {(n, b): 100.0 * np.mean([r[f"beam{b}"]["constraint_steps"] > 0 for r in recs])
               for n, recs in rows.items() for b in beams}
    ended = {(n, b): 100.0 * np.mean([r[f"beam{b}"]["ended_by_constraint"] for r in recs])
             for n, recs in rows.items() for b in beams}
    return (
        "Outputs altered by a search constraint (a token taken from outside the step's top-k because the "
        "constraints forbade all of it), % of test outputs: " + _per_system(altered, beams)
        + " Outputs ended by a constraint (the end forced at the length limit or taken from outside the top-k), %: "
        + _per_system(ended, beams) + "\n\n"
    )


def summary(verdicts: list[Verdict], scale: str) -> str:
    """One sentence: how many of the paper's deltas got each verdict of the vocabulary (:mod:`._verdicts`)."""
    counts = {kind: sum(v.kind is kind for v in verdicts) for kind in VerdictKind}
    said = ", ".join(f"{kind.value} {n}" for kind, n in counts.items() if n)
    return (
        f"At scale={scale}, the {len(verdicts)} paper deltas: {said or 'none'}. A single run or two seeds decide "
        "nothing, and where our settings differ from the paper's (the settings table) they limit what this says about "
        "the paper's setting."
    )
