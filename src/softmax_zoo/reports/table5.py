"""Sparse-softmax Table 5: Gigaword-10k ROUGE of UniLM fine-tuned with softmax vs sparse-softmax.

``python -m softmax_zoo.results table5`` (the last step of ``make reproduce-table5``) reads the
records of experiment ``table5`` and their test predictions
(``<run>.test.predictions.jsonl``), and writes ``results/table5.md``: for each scale and beam,
our ROUGE-1/2/L of both losses (mean over seeds), the delta sparse − softmax with a paired
bootstrap 95% CI over test examples (examples of every seed pooled, each paired with the same
example and seed of the other loss), the paper's delta, and a verdict; plus rows of the claims
ledger (results/claims.md). The paper's absolute ROUGE values are not in our sources; the table
gives its deltas (issue 6) and UniLM's published Gigaword-10k result (beam 5) for scale.

The pairing and verdict helpers here are shared with :mod:`softmax_zoo.reports.table3`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from softmax_zoo.results import group_by, load_records, markdown_table, mean_ci, paired_bootstrap, runs_dir, update_claims, write_text

EXPERIMENT = "table5"
SOFTMAX = "softmax_zoo.losses.SoftmaxHead"
SPARSE = "softmax_zoo.losses.SparseSoftmaxHead"
# Sun et al. 2021, Table 5 (as summarised in issue 6): sparse − softmax on Gigaword-10k, UniLM.
PAPER_DELTAS = {1: {"rouge1": 0.67, "rouge2": 0.79}, 5: {"rouge1": 0.28, "rouge2": 0.55}}
# UniLM v1 (Dong et al. 2019) Gigaword-10k test, beam 5: unilm-v1 README.
UNILM_BEAM5 = {"rouge1": 34.21, "rouge2": 15.28, "rougeL": 31.54}
METRICS = ("rouge1", "rouge2", "rougeL")
BOOTSTRAP_SAMPLES = 2000


def predictions(record: dict[str, Any], runs: Path, split: str = "test") -> list[dict[str, Any]]:
    """The per-example rows ``evaluate`` saved beside a record."""
    path = runs / record["experiment"] / f"{record['run_name']}.{split}.predictions.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: rerun {record['run_name']} (predictions are written by evaluate)")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def paired_runs(records: list[dict[str, Any]]) -> dict[str, list[tuple[dict, dict]]]:
    """setting -> [(softmax record, sparse record)] of the seeds both losses have, sorted by seed.

    A setting is the scale ("cpu"), or "<scale>+init" for runs that started from a finished run's
    weights (``init_from=``, e.g. experiment=table5_init_*): those are paired only with each other.
    """
    out: dict[str, list[tuple[dict, dict]]] = {}
    for (scale, init), group in sorted(group_by(records, ["config.scale.name", "config.init_from"]).items(),
                                 key=lambda item: (item[0][0], item[0][1] is not None)):  # plain before init
        by = {(r["config"]["loss"]["_target_"], r["seed"]): r for r in group}
        seeds = sorted({s for t, s in by if t == SOFTMAX} & {s for t, s in by if t == SPARSE})
        if seeds:
            out[scale if init is None else f"{scale}+init"] = [(by[SOFTMAX, s], by[SPARSE, s]) for s in seeds]
    return out


def stutters(text: str, run: int = 3) -> bool:
    """Whether some word appears ``run`` or more times in a row ("the the the"): a degenerate output."""
    words, count = text.split(), 1
    for prev, word in zip(words, words[1:]):
        count = count + 1 if word == prev else 1
        if count >= run:
            return True
    return False


def stutter_line(pairs: list[tuple[dict, dict]], runs: Path, beams: list[int]) -> str:
    """Share of test outputs with a word 3+ times in a row, per loss and beam; a caution when it is high."""
    shares = {}
    for i, name in enumerate(("softmax", "sparse")):
        rows = [r for p in pairs for r in predictions(p[i], runs)]  # read once, used for every beam
        for beam in beams:
            shares[name, beam] = 100.0 * np.mean([stutters(r[f"beam{beam}"]["prediction"]) for r in rows])
    text = "Degenerate outputs (a word 3+ times in a row), % of test outputs: " + "; ".join(
        f"{name} " + " / ".join(f"{shares[name, b]:.0f}" for b in beams) for name in ("softmax", "sparse")
    ) + (f" (beam {' / '.join(map(str, beams))})." if len(beams) > 1 else ".")
    if max(shares.values()) > 50:
        text += " **Over half of one system's outputs are degenerate: the models are undertrained and the deltas say little.**"
    return text + "\n\n"


def setting_line(pairs: list[tuple[dict, dict]]) -> str:
    """For ``init_from`` settings, what both arms started from (empty otherwise)."""
    inits = sorted({str(r["config"].get("init_from")) for p in pairs for r in p if r["config"].get("init_from")})
    return (
        f"Both arms start from the weights of {', '.join(f'`{i}`' for i in inits)} (a finished softmax run: "
        "a softmax-trained LM head, as UniLM's pre-trained one) and train the optimiser steps given here, with a fresh optimiser.\n\n"
        if inits else ""
    )


def pooled(pairs: list[tuple[dict, dict]], runs: Path, key: Callable[[dict], Any]) -> tuple[list, list]:
    """``key(row)`` of every test example of every seed, for softmax and sparse, aligned by example."""
    a, b = [], []
    for soft, sparse in pairs:
        rows_a, rows_b = predictions(soft, runs), predictions(sparse, runs)
        if [r["reference"] for r in rows_a] != [r["reference"] for r in rows_b]:
            raise ValueError(f"{soft['run_name']} and {sparse['run_name']} were not decoded on the same examples")
        a += [key(r) for r in rows_a]
        b += [key(r) for r in rows_b]
    return a, b


def verdict(low: float, high: float, paper: float | None) -> str:
    """Whether our 95% CI of the delta supports the paper's sign."""
    if paper is None:
        return "no paper value"
    if low > 0 if paper > 0 else high < 0:
        return "supports (CI excludes 0, same sign)"
    if high < 0 if paper > 0 else low > 0:
        return "contradicts (CI excludes 0, opposite sign)"
    return "inconclusive (CI includes 0)"


def fmt_delta(d: dict[str, float]) -> str:
    return f"{d['delta']:+.2f} [{d['low']:+.2f}, {d['high']:+.2f}]"


def seeds_mean(records: list[dict], metric: str) -> str:
    mean, half, n = mean_ci([r["metrics"][metric] for r in records])
    return f"{mean:.2f}" if n == 1 else f"{mean:.2f} ± {half:.2f}"


def delta_cells(pairs: list[tuple[dict, dict]], metric: str, d: dict[str, float], paper: float | None) -> list[str]:
    """Table cells for one metric: softmax mean, sparse mean, our delta [CI], the paper's delta, verdict."""
    return [
        seeds_mean([p[0] for p in pairs], metric), seeds_mean([p[1] for p in pairs], metric),
        fmt_delta(d), "" if paper is None else f"{paper:+.2f}", verdict(d["low"], d["high"], paper),
    ]


def delta_claim(
    claim_id: str, claim: str, paper: float, d: dict[str, float], scale: str, pairs: list, n: int, *, source: str
) -> dict[str, str]:
    """A claims-ledger row for one of the paper's deltas."""
    return {
        "id": claim_id, "claim": claim, "paper": f"{paper:+.2f}",
        "ours": f"{fmt_delta(d)} ({scale}, {len(pairs)} seed(s), n={n})",
        "verdict": verdict(d["low"], d["high"], paper), "source": source,
    }


def summary(rows: list[list[Any]], scale: str) -> str:
    """One sentence: how many of the paper's deltas our CIs support, contradict or leave open."""
    verdicts = [r[-1].split(" ")[0] for r in rows if r[-2] != ""]
    counts = {v: verdicts.count(v) for v in ("supports", "inconclusive", "contradicts")}
    return (
        f"At scale={scale}, of the {len(verdicts)} paper deltas, our paired 95% CIs support {counts['supports']} "
        f"(same sign, excluding 0), leave {counts['inconclusive']} inconclusive and contradict {counts['contradicts']}; "
        "a smaller model, subset or fewer epochs than the paper's limits what this says about the paper's setting."
    )


def build(results_dir: str | Path = "results") -> None:
    """Write ``<results_dir>/table5.md`` and the table5 rows of ``<results_dir>/claims.md``."""
    runs = runs_dir(results_dir)
    by_scale = paired_runs(load_records(runs, EXPERIMENT))
    if not by_scale:
        raise FileNotFoundError(f"no paired softmax/sparse-softmax records under {runs / EXPERIMENT}; run `make reproduce-table5`")
    sections, claims = [], []
    for scale, pairs in by_scale.items():
        rows = []
        beams = sorted(int(b) for b in pairs[0][0]["config"]["task"]["decode"]["beams"])
        for beam in beams:
            for metric in METRICS:
                a, b = pooled(pairs, runs, lambda r: r[f"beam{beam}"][metric])
                d = paired_bootstrap(a, b, num_samples=BOOTSTRAP_SAMPLES)
                paper = PAPER_DELTAS.get(beam, {}).get(metric)
                rows.append([beam, metric, UNILM_BEAM5[metric] if beam == 5 else "",
                             *delta_cells(pairs, f"test/{metric}_beam{beam}", d, paper)])
                if paper is not None:
                    claims.append(delta_claim(
                        f"table5_{scale}_beam{beam}_{metric}",
                        f"Gigaword-10k, UniLM: sparse-softmax beats softmax on {metric} at beam {beam}", paper, d, scale, pairs, len(a),
                        source=EXPERIMENT,
                    ))
        soft = pairs[0][0]
        sections.append(
            f"## scale={scale}: seeds {[p[0]['seed'] for p in pairs]}, {len(predictions(soft, runs))} test pairs, "
            f"{soft['task_info']['sizes']['train']} training pairs, {soft['timing']['global_steps']} optimiser steps, "
            f"model {soft['config']['model']['name']} ({soft['config']['model']['checkpoint'] or 'random init'})\n\n"
            + setting_line(pairs)
            + markdown_table(
                ["beam", "metric", "UniLM paper (beam 5)", "softmax (ours)", "sparse-softmax (ours)",
                 "Δ ours [95% CI]", "Δ paper", "verdict"],
                rows,
            )
            + "\nDecoding throughput (test examples/s, beam 1 / beam 5): "
            + "; ".join(
                f"{name} " + " / ".join(f"{np.mean([r['metrics'][f'test/examples_per_s_beam{b}'] for r in recs]):.2f}" for b in beams)
                for name, recs in (("softmax", [p[0] for p in pairs]), ("sparse", [p[1] for p in pairs]))
            )
            + "\n\n" + stutter_line(pairs, runs, beams) + summary(rows, scale) + "\n"
        )
    text = (
        "# Table 5: Gigaword-10k, UniLM fine-tuned with softmax vs sparse-softmax\n\n"
        "Built by `python -m softmax_zoo.results table5` from `results/runs/table5/` (`make reproduce-table5`).\n"
        "ROUGE F1 x 100 (rouge-score, stemmed; UniLM used ROUGE-1.5.5). Δ = sparse − softmax; the 95% CI is a "
        f"paired bootstrap ({BOOTSTRAP_SAMPLES} resamples) over test examples, seeds pooled. The paper reports "
        "deltas only in our sources (issue 6); UniLM's own result is BERT-large-sized, ours is what the scale names.\n\n"
        + "\n".join(sections)
    )
    write_text(Path(results_dir) / "table5.md", text)
    update_claims(claims, Path(results_dir) / "claims.md")
