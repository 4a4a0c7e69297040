"""What the UniLM pages (table5, table3) share: softmax/sparse-softmax pairs, per-seed paired scores,
seed-aware verdicts on the paper's deltas, and the lines around each scale's table.

A pair is the softmax and the sparse-softmax run of one seed and setting, told apart by the
record's Hydra choice of ``loss``; a setting is the scale, or "<scale>+init" for runs started from
a finished run's weights (``init_from=``), which are paired only with each other. A seed with only
one arm is left out of the deltas and named on the page (:func:`lone_seeds`).

A setting whose LM head starts fresh (``task_info.fresh_weights``, no ``init_from``) is the cold-start
ablation; one whose head is trained (a softmax run's weights, or UniLM's own at scale=paper) is nearer the
paper, which fine-tunes a pre-trained UniLM, and heads the page (:func:`cold_start`). Each claims row carries
its setting's regime (share of test targets in Ω_k, degenerate outputs) and how many of its records were
made with uncommitted changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..losses.registry import variant_label
from ..records import choice, get, load_records, read_predictions, runs_dir
from ._compare import Compared
from ._pages import commits, dirty_note, page_command, shown_path
from ._seq2seq_settings import seq2seq_settings
from ._settings import settings_data
from ._verdicts import VerdictKind, not_tested

SOFTMAX, SPARSE = "softmax", "sparse_softmax"  # the two arms, as configs/loss/ names them
ARMS = (variant_label(SOFTMAX), variant_label(SPARSE))  # their registered labels, "softmax" and "sparse"
BOOTSTRAP_SAMPLES = 2000
Pair = tuple[dict[str, Any], dict[str, Any]]  # (softmax record, sparse-softmax record)


def _settings(records: list[dict[str, Any]]) -> dict[str, dict[tuple[str, int], dict[str, Any]]]:
    """setting -> {(loss, seed): record}, "+init" settings before their plain (cold-start) ones.

    A "+init" setting holds the runs started from a finished run's weights (``init_from``: each seed
    its own seed's softmax run), so its seeds are grouped by whether they start so, not by the path."""
    out: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
    for r in sorted(records, key=lambda r: (get(r, "config.scale.name"), get(r, "config.init_from") is None)):
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


def delta_row(pairs: list[Pair], metric: str, compared: Compared, paper: float | None, lead: Sequence[Any]) -> dict[str, Any]:
    """One table row as data: the page's leading cells, each arm's metric per seed, Δ over seeds, the paper's Δ and the verdict."""
    return {"lead": list(lead), "a": [p[0]["metrics"][metric] for p in pairs], "b": [p[1]["metrics"][metric] for p in pairs],
            "delta": compared.delta, "method": compared.method, "paper": paper, "verdict": compared.verdict(paper)}


def has_regime(pairs: list[Pair]) -> bool:
    """Whether every record of ``pairs`` carries the top-k diagnostics (:mod:`softmax_zoo.diagnostics.topk`)."""
    return all("test/target_in_topk" in r["metrics"] for p in pairs for r in p)


def regime(pairs: list[Pair]) -> dict[str, Any] | None:
    """Where the test targets sit among each arm's logits (teacher-forced): per arm the mean over seeds of the
    share inside the top k, the median target rank and the logits near the k-th; None for records without them."""
    if not has_regime(pairs):
        return None

    def both(metric: str) -> list[float]:
        return [float(np.mean([p[i]["metrics"][f"test/{metric}"] for p in pairs])) for i in (0, 1)]

    start = pairs[0][0]["config"].get("init_from") or pairs[0][0]["config"]["model"]["checkpoint"] or "random init"
    return {"k": int(pairs[0][1]["metrics"]["test/diagnostics_k"]), "share": both("target_in_topk"),
            "rank": both("median_target_rank"), "near": both("logits_near_kth"), "start": start}


def cold_start(pairs: list[Pair]) -> bool:
    """Whether the runs of ``pairs`` start with a fresh LM head (``task_info.fresh_weights``) and not from a
    finished run's weights: the cold-start ablation of the paper's setting, whose pre-trained UniLM head is trained."""
    return all(bool(get(r, "task_info.fresh_weights")) and not get(r, "config.init_from") for p in pairs for r in p)


def stutters(text: str, run: int = 3) -> bool:
    """Whether some word appears ``run`` or more times in a row ("the the the"): a degenerate output."""
    words, count = text.split(), 1
    for prev, word in zip(words, words[1:]):
        count = count + 1 if word == prev else 1
        if count >= run:
            return True
    return False


def degenerate(output: dict[str, Any]) -> bool:
    """Whether one decoded output (a prediction row's ``beam<b>`` entry) is degenerate (:func:`stutters`)."""
    return stutters(output["prediction"])


def degenerate_share(rows: list[dict[str, Any]], beam: int) -> float:
    """Share of prediction ``rows`` whose output at ``beam`` is degenerate (:func:`degenerate`)."""
    return float(np.mean([degenerate(r[f"beam{beam}"]) for r in rows]))


def output_shares(rows: dict[str, list[dict[str, Any]]], beams: list[int]) -> dict[str, Any]:
    """Per arm and beam, the shares of test outputs that are degenerate (:func:`degenerate_share`), and, where the
    prediction rows say how the search constraints shaped them, altered and ended by a constraint (else None)."""
    def shares(test: Callable[[dict[str, Any]], bool]) -> dict[str, list[float]]:
        return {arm: [float(np.mean([test(r[f"beam{b}"]) for r in recs])) for b in beams] for arm, recs in rows.items()}

    constrained = all("constraint_steps" in r[f"beam{b}"] for recs in rows.values() for r in recs for b in beams)
    return {"degenerate": {arm: [degenerate_share(recs, b) for b in beams] for arm, recs in rows.items()},
            "altered": shares(lambda o: o["constraint_steps"] > 0) if constrained else None,
            "ended": shares(lambda o: bool(o["ended_by_constraint"])) if constrained else None}


def inits(pairs: list[Pair]) -> list[str]:
    """The checkpoints the runs of ``pairs`` started from (``init_from``), sorted; empty for runs from the model's own start."""
    return sorted({str(r["config"].get("init_from")) for p in pairs for r in p if r["config"].get("init_from")})


def setting(scale: str, pairs: list[Pair], runs: Path, beams: list[int], lone: dict[int, str] | None,
            rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One setting's section as data: who ran, from where, the rows, throughput, output shares, regime, verdict counts,
    how many rows' between-seed SD exceeds their item standard error, and the records made with uncommitted changes."""
    soft = pairs[0][0]
    predictions = {arm: [r for p in pairs for r in read_predictions(p[i], runs)] for i, arm in enumerate(ARMS)}
    verdicts = [r["verdict"] for r in rows if r["verdict"] is not None]
    spread = [r["delta"].sd > r["delta"].item_se for r in rows if r["paper"] is not None and r["delta"].n_seeds > 1]
    return {
        "scale": scale, "cold_start": cold_start(pairs), "seeds": [p[0]["seed"] for p in pairs], "lone": lone or {},
        "n_test": len(read_predictions(soft, runs)), "n_train": soft["task_info"]["sizes"]["train"],
        "steps": soft["timing"]["global_steps"], "model": soft["config"]["model"]["name"],
        "checkpoint": soft["config"]["model"]["checkpoint"],
        "inits": inits(pairs),
        "beams": beams, "rows": rows,
        "throughput": {arm: [float(np.mean([p[i]["metrics"][f"test/examples_per_s_beam{b}"] for p in pairs])) for b in beams]
                       for i, arm in enumerate(ARMS)},
        "outputs": output_shares(predictions, beams), "regime": regime(pairs),
        "counts": {kind.value: n for kind in VerdictKind if (n := sum(v.kind is kind for v in verdicts))},
        "n_verdicts": len(verdicts), "sd_above_item_se": sum(spread), "n_spread": len(spread),
        "dirty": dirty_note([r for p in pairs for r in p]),
    }


def claim(claim_id: str, row: dict[str, Any], section: dict[str, Any], source: str, **words: Any) -> dict[str, Any]:
    """A claims-ledger row as data (rendered by the page template's ``claim``, ``ours`` and ``verdict`` macros):
    ``words`` hold the row's ``beam``, whose degenerate shares per arm the row carries beside its setting's regime."""
    decided = row["verdict"].kind in (VerdictKind.SUPPORTED, VerdictKind.CONTRADICTS)
    at = section["beams"].index(words["beam"])
    return {"id": claim_id, "source": source, "paper": row["paper"], "delta": row["delta"], "verdict": row["verdict"],
            "scale": section["scale"], "cold_start": section["cold_start"], "regime": section["regime"], "untested": False,
            "degenerate": {arm: shares[at] for arm, shares in section["outputs"]["degenerate"].items()},
            "dirty": section["dirty"], "below_paper_scale": decided and not section["scale"].startswith("paper"), **words}


def paper_setting_claims(by_setting: dict[str, list[Pair]], claims: list[dict[str, Any]], experiment: str) -> list[dict[str, Any]]:
    """Rows saying the paper's setting is untested while there are no scale=paper pairs: one per paper delta,
    keyed ``<experiment>_paper_<rest of the id>``."""
    if "paper" in by_setting:
        return []
    rows = {}
    for c in claims:
        key = c["id"].split("_", 2)[2]  # "<experiment>_<setting>_<key>": setting names hold no "_"
        rows[key] = {**c, "id": f"{experiment}_paper_{key}", "verdict": not_tested("needs scale=paper"), "untested": True}
    return list(rows.values())


def setting_columns(by_setting: dict[str, list[Pair]]) -> dict[str, list[dict[str, Any]]]:
    """The settings table's columns (:func:`softmax_zoo.reports._settings.settings_rows`): each setting's records, both arms."""
    return {f"scale={setting}": [r for pair in pairs for r in pair] for setting, pairs in by_setting.items()}


def summarise(experiment: str, results_dir: str | Path, task: str, rows_of: Callable[[list[Pair], Path], tuple[list[int], list]],
              claim_of: Callable[[dict[str, Any]], tuple[str, dict[str, Any]]], source: str) -> dict[str, Any]:
    """A UniLM page's data: per setting its section (``rows_of(pairs, runs) -> (beams, rows)``), the claims rows of the
    rows with a paper Δ (``claim_of(row) -> (id after the setting, words)``) and the paper's untested ones, the settings."""
    runs = runs_dir(results_dir)
    by_setting, lone = load_pairs(runs, experiment)
    sections, claims = [], []
    for scale, pairs in by_setting.items():
        beams, rows = rows_of(pairs, runs)
        sections.append(section := setting(scale, pairs, runs, beams, lone.get(scale), rows))
        claims += [claim(f"{experiment}_{scale}_{key}", r, section, experiment, **words)
                   for r in rows if r["paper"] is not None for key, words in [claim_of(r)]]
    return {"command": page_command(experiment, results_dir), "folder": shown_path(runs / experiment),
            "commits": commits(load_records(runs, experiment)), "bootstrap_samples": BOOTSTRAP_SAMPLES,
            "settings": settings_data(seq2seq_settings(task), setting_columns(by_setting), source), "sections": sections,
            "claims": claims + paper_setting_claims(by_setting, claims, experiment)}

