"""Softmax collapse and KD cancellation in training: results/stable.md, its figures, the stable-* claims rows.

Reads the records of ``python -m softmax_zoo.studies.stable`` (``make reproduce-stable``) in
``<results_dir>/runs/stable/``: per run its settings, per-step curve and final numbers. Tables give
means over seeds with 95% Student-t intervals (:mod:`._stable_tables`); two arms are compared seed by
seed, with verdicts from :mod:`._verdicts`; figures: :mod:`._stable_plots` (stable_collapse.png,
stable_saturate.png, stable_generalise.png, stable_drift.png).

Build: ``python -m softmax_zoo.reports stable``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..records import runs_dir
from ._compare import unpaired
from ._pages import commits, page_command, shown_path, write_page
from ._render import render
from ._stable_examples import example_rows
from ._stable_kd_ptb import claim_row as kd_ptb_row
from ._stable_kd_ptb import section as kd_ptb_section
from ._stable_plots import plots
from ._stable_tables import (
    accuracy_lines,
    ce_table,
    comparisons,
    finals,
    group,
    kd_table,
    ratio_text,
    reading,
    saturate_table,
    sci,
)
from ._stats import mean, seeds_label
from ._verdicts import not_tested, verdict

EXPERIMENT = "stable"


def load(results_dir: str | Path) -> list[dict[str, Any]]:
    """The study's runs as :func:`as_run` gives them, in file-name order."""
    folder = runs_dir(results_dir) / EXPERIMENT
    records = [as_run(json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))]
    if not records:
        raise FileNotFoundError(f"no records in {folder}; run `make reproduce-stable` first")
    return records


def as_run(record: dict[str, Any]) -> dict[str, Any]:
    """One run as the page reads it: its arms (study, form, dtype, start), seed, setting, curve, final numbers, seconds,
    from a record in the training records' schema (:func:`softmax_zoo.records.study_record`)."""
    return {**record["config"], "run": record["run_name"], "curve": record["history"], "final": record["metrics"],
            "seconds": record["timing"]["wall_s"], "git": record.get("git"), "created": record.get("created")}


def setting_of(records, study: str) -> dict[str, Any]:
    """The Setting of ``study``'s runs (the fullest one, as older records lack the newer regimes' fields)."""
    return max((r["setting"] for r in group(records, study=study)), key=len, default={})


def seconds_of(records, study: str) -> float:
    return sum(r["seconds"] for r in group(records, study=study))


def delta(a: dict[int, float], b: dict[int, float]):
    """Δ = mean(B) − mean(A) of two arms' per-seed values (Welch)."""
    return unpaired(a, b)


def share_peak(runs, key: str) -> dict[int, float]:
    return {r["seed"]: max(p.get(key, 0.0) for p in r["curve"]) for r in runs}


def claims_of(records) -> list[dict[str, str]]:
    """The stable-* rows of the claims ledger, each verdict from :mod:`._verdicts` (seeds named)."""
    rows: list[dict[str, str]] = []

    def row(id_, claim, paper, ours, v):
        rows.append({"id": id_, "claim": claim, "paper": paper, "ours": ours, "verdict": str(v), "source": "stable"})

    collapse_rows(records, row)
    training_rows(records, row)
    return rows + example_rows()


def collapse_rows(records, row) -> None:
    """The collapse rows (``row(id, claim, paper, ours, verdict)`` adds one): the saturate regime's zero gradients and loss."""

    sat = {(f, d): group(records, study="saturate", form=f, dtype=d)
           for f, d in (("standard", "float32"), ("stable", "float32"), ("standard", "float64"))}
    if all(sat.values()):
        std, stb = (share_peak(sat[k], "zero_target_grad_share") for k in (("standard", "float32"), ("stable", "float32")))
        seeds = sorted(std)
        ours = (f"saturate regime, float32: peak share of training examples with target gradient exactly 0, standard "
                f"{', '.join(f'{100 * std[s]:.0f}%' for s in seeds)} vs stable {', '.join(f'{100 * stb[s]:.0f}%' for s in seeds)} "
                f"({seeds_label(seeds)})")
        mem = group(records, study="collapse", dtype="bfloat16", form="standard")
        if mem:
            shares = ", ".join(f"{100 * r['final']['zero_target_grad_share']:.0f}%" for r in mem)
            ours += (f"; memorise regime, bfloat16: standard ends with {shares} "
                     f"({seeds_label([r['seed'] for r in mem])}), stable 0%")
        row("stable-collapse", "with standard CE the target gradient q_t − 1 rounds to 0 once the target dominates (softmax collapse); "
            "the softplus form keeps it", "q_t − 1 = 0 in float32 for logits [18, 0]", ours, verdict(delta(stb, std), +1, digits=3))
        text, v = ratios(sat[("standard", "float32")], sat[("stable", "float32")], "loss")
        f64, _ = ratios(sat[("standard", "float32")], sat[("standard", "float64")], "loss")
        row("stable-collapse-training",
            "after collapse, standard float32 CE trains differently from the stable form (its final loss is higher)",
            "precision issues affect training dynamics (no number)",
            f"saturate regime, final train loss standard / stable (float32): {text}; standard float32 / float64: {f64}",
            v or not_tested("a final loss of 0"))
    else:
        row("stable-collapse", "with standard CE the target gradient q_t − 1 rounds to 0 once the target dominates (softmax collapse); "
            "the softplus form keeps it", "q_t − 1 = 0 in float32 for logits [18, 0]", "—", not_tested("the saturate runs are missing"))


def training_rows(records, row) -> None:
    """The rows of the bfloat16 rewrite, cancellation, generalisation and zero-sum comparisons."""
    for study, loss, key, what in (("collapse", None, "loss", "final train loss"),
                                   ("cancellation", None, "drift", "drift at identical logits")):
        match = {"start": "equal"} if study == "cancellation" else {}
        cast, stb = (group(records, study=study, dtype="bfloat16", form=f, **match) for f in ("cast", "stable"))
        std = group(records, study=study, dtype="bfloat16", form="standard", **match)
        if cast and stb and std:
            text, v = ratios(cast, stb, key)
            text_std, _ = ratios(std, stb, key)
            if study == "cancellation":
                v = verdict(delta(by(stb, key), by(cast, key)), +1, digits=4)
            row(f"stable-{study}-bfloat16-rewrite", f"in bfloat16 the rewritten form, not the float32 compute alone, lowers the {what}",
                "the fix is the rewrite (no bfloat16 number)",
                f"memorise regime, {what}, bfloat16 logits: standard on float32-cast logits / stable {text}; "
                f"standard / stable {text_std}", v)
    eq = {f: group(records, study="cancellation", start="equal", dtype="float32", form=f) for f in ("standard", "stable")}
    if all(eq.values()):
        std, stb = by(eq["standard"], "drift"), by(eq["stable"], "drift")
        step0 = {f: [r["curve"][0]["logit_grad_norm"] for r in eq[f]] for f in eq}
        row("stable-cancellation", "the KD gradient q − p cancels when student ≈ teacher, so identical logits still move the student; "
            "p·expm1(s) gives exactly 0", "nonzero residuals vs exactly 0",
            f"float32, student = teacher: logit-gradient norm at step 0 standard {mean(step0['standard']):.1e}, stable "
            f"{mean(step0['stable']):.1e}; drift after {setting_of(records, 'cancellation').get('distill_steps')} steps per seed standard "
            f"{', '.join(f'{v:.2e}' for v in std.values())} vs stable {', '.join(f'{v:.2e}' for v in stb.values())}",
            verdict(delta(stb, std), +1, digits=4))
    for loss, what in (("ce", "CE"), ("kd", "fresh-student KD")):
        std, stb = (group(records, study="generalise", loss=loss, dtype="bfloat16", form=f) for f in ("standard", "stable"))
        if std and stb:
            acc = accuracy_lines(records, "generalise", loss=loss)
            row(f"stable-generalise-{loss}",
                f"where the model generalises, stable {what} reaches a higher test accuracy than standard (bfloat16 logits)",
                "precision issues affect training dynamics (no number)", "; ".join(acc),
                verdict(delta(by(std, "test_accuracy"), by(stb, "test_accuracy")), +1, digits=3))
    for id_, claim, paper, study, match, regime in (
        ("stable-zero-sum-ce", "\"non-target gradients remain positive, violating the zero-sum gradient property\" (standard CE once q_t "
         "rounds to 1; tested against the softplus form)", "violated by the standard form (no number)", "saturate", {},
         "saturate regime"),
        ("stable-zero-sum-kd", "\"To reduce floating-point violations of the zero-sum gradient property, apply: g_i = u_i − q_i Σ_j u_j\"",
         "the correction reduces the violation (no number)", "cancellation", {"start": "fresh"},
         "distillation from a fresh student"),
    ):
        std, stb = (group(records, study=study, dtype="float32", form=f, **match) for f in ("standard", "stable"))
        if std and stb:
            text, v = ratios(std, stb, "zero_sum_violation")
            row(id_, claim, paper,
                f"{regime}, float32, final mean |Σ_j ∂L_i/∂z_ij| standard {sci(finals(std, 'zero_sum_violation'))} vs stable "
                f"{sci(finals(stb, 'zero_sum_violation'))}; standard / stable {text} (verdict on log10 of the ratio)",
                v or not_tested("no violation in either form"))



def ratios(a_runs, b_runs, key: str):
    """:func:`ratio_text` without its verdict (a claims row has its own verdict cell)."""
    text, v = ratio_text(a_runs, b_runs, key)
    return text.split("; on ")[0], v


def read(lines_: list[str], verdicts, what: str) -> list[str]:
    """The comparison lines, then what the bfloat16 ones say (:func:`reading`)."""
    sentence = reading(verdicts, what)
    return lines_ + ([f"**{sentence}**"] if sentence else [])


def by(runs, key: str) -> dict[int, float]:
    return {r["seed"]: float(r["final"][key]) for r in runs}


def saturate_lines(records, onset: dict[int, int]) -> list[str]:
    """The saturate regime's comparisons: the onset per seed, the largest loss after it, and the arms' final ratios."""
    sat_runs = {f"{f} {d}": group(records, study="saturate", form=f, dtype=d)
                for f, d in (("standard", "float32"), ("stable", "float32"), ("standard", "float64"))}
    if not sat_runs["standard float32"]:
        return []
    peaks = {r["seed"]: max(p["target_prob_one_share"] for p in r["curve"]) for r in sat_runs["standard float32"]}
    out = [f"standard float32: first logged step with ≥ 50% of training examples at q_t exactly 1, per seed: "
           f"{', '.join(str(onset[x]) for x in sorted(onset))} ({seeds_label(sorted(onset))}); peak share "
           f"{', '.join(f'{100 * peaks[x]:.0f}%' for x in sorted(peaks))}"]
    for arm, runs in sat_runs.items():
        worst = {r["seed"]: max(p["loss"] for p in r["curve"] if p["step"] > onset[r["seed"]])
                 for r in runs if onset.get(r["seed"]) is not None}
        if worst:
            out.append(f"{arm}: largest train loss after the onset, per seed: {', '.join(f'{worst[x]:.1e}' for x in sorted(worst))}")
    for a, b in (("standard float32", "stable float32"), ("standard float32", "standard float64"), ("stable float32", "standard float64")):
        if sat_runs[a] and sat_runs[b]:
            for key, what in (("loss", "final train loss"), ("param_grad_norm", "final ‖∂L/∂θ‖")):
                text, _ = ratio_text(sat_runs[a], sat_runs[b], key)
                out.append(f"{what}, A = {a} / B = {b}: {text}")
    return out


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the study's settings and budget, each regime's tables and comparison lines, the claims rows."""
    records = load(results_dir)
    sat_table, onset = saturate_table(records)
    memorise = group(records, study="collapse", dtype="float32", form="standard")
    return {
        "records": records, "folder": shown_path(runs_dir(results_dir) / EXPERIMENT), "command": page_command(EXPERIMENT, results_dir),
        "commits": commits(records), "seeds": sorted({r["seed"] for r in records}),
        "threads": sorted({r["torch_threads"] for r in records if r.get("torch_threads") is not None}),
        "no_threads": sum(r.get("torch_threads") is None for r in records),
        "minutes": {study: seconds_of(records, study) / 60 for study in ("collapse", "cancellation", "generalise", "saturate")},
        "s": setting_of(records, "collapse"), "g": setting_of(records, "generalise"), "sat": setting_of(records, "saturate"),
        "k": setting_of(records, "cancellation"),
        "memorise_peak": max((max(p.get("zero_target_grad_share", 0.0) for p in r["curve"]) for r in memorise), default=None),
        "examples": example_rows(), "sat_table": sat_table, "sat_lines": saturate_lines(records, onset),
        "tables": {"collapse": ce_table(records, "collapse"), "generalise_ce": ce_table(records, "generalise", loss="ce"),
                   "generalise_kd": kd_table(records, "generalise", starts=("fresh",), loss="kd"),
                   "cancellation": kd_table(records, "cancellation")},
        "lines": {
            "collapse": read(*comparisons(records, "collapse", "loss", "final train loss"), "final train loss"),
            "cancellation": read(*comparisons(records, "cancellation", "drift", "drift", start="equal"), "drift at identical logits")
            + read(*comparisons(records, "cancellation", "kl", "final KL", start="fresh"), "final KL of a fresh student"),
            "generalise_ce": read(*comparisons(records, "generalise", "loss", "final train loss", loss="ce"), "final train loss")
            + accuracy_lines(records, "generalise", loss="ce"),
            "generalise_kd": read(*comparisons(records, "generalise", "kl", "final KL", loss="kd"), "final KL")
            + accuracy_lines(records, "generalise", loss="kd"),
        },
        "kd_ptb": kd_ptb_section(results_dir),
        "claims": [*claims_of(records), kd_ptb_row(results_dir)],
    }


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write stable.md, its figures and the stable-* rows of claims.md into ``out`` (default ``results_dir``)."""
    data = summarise(results_dir)
    out = Path(out or results_dir)
    plots(data["records"], out)
    write_page(out, "stable", render("stable.md.j2", **data), data["claims"])
