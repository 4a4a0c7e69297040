"""The stable page's part on distillation in the training pipeline: self-distillation on Penn Treebank.

A float32 full-softmax LSTM teacher, then students of the same model from a fresh initialisation, trained with
bfloat16 logits (CPU autocast; the LSTM in float32) on α·T²·KL(teacher ‖ student) + (1 − α)·CE with the KL in the standard form \
(kl_div of two
log-softmaxes) or the stable expm1 form (configs/experiment/stable_kd_ptb.yaml). The two forms are compared
on the students' test perplexity, seed by seed, with Welch's interval over seeds on its log.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..markdown import markdown_table
from ..records import get, load_records, runs_dir
from ._compare import unpaired
from ._pages import commits, shown_path
from ._stats import seeds_label
from ._verdicts import Verdict, not_tested, verdict

EXPERIMENT = "stable_kd_ptb"
FORMS = ("standard", "stable")
CLAIM = ("stable vs standard KL in a real pipeline (PTB self-distillation, bfloat16): "
         "the stable form's student reaches a lower test perplexity")
PAPER = "precision issues affect training dynamics (no number, no pipeline)"


def load(results_dir: str | Path) -> tuple[list[dict[str, Any]], dict[str, dict[int, dict[str, Any]]]]:
    """(the teacher records, form -> seed -> student record) of the study's records in ``results_dir``."""
    teachers, students = [], {form: {} for form in FORMS}
    for record in load_records(runs_dir(results_dir), EXPERIMENT):
        form = get(record, "config.distill.kl") if get(record, "config.distill.teacher") else None
        if form is None:
            teachers.append(record)
        elif form in students:
            students[form][record["seed"]] = record
    return teachers, students


def perplexity_of(record: dict[str, Any]) -> float:
    return float(record["metrics"]["test/perplexity"])


def kd_verdict(students: dict[str, dict[int, dict[str, Any]]]) -> Verdict:
    """The claim that the stable form's students reach a lower test perplexity (Δ = log ppl standard − stable > 0)."""
    if not all(students.values()):
        return not_tested("PTB self-distillation in the training pipeline was not run (make reproduce-stable-kd-ptb)")
    logs = {form: {seed: math.log(perplexity_of(r)) for seed, r in runs.items()} for form, runs in students.items()}
    return verdict(unpaired(logs["stable"], logs["standard"]), +1, digits=4)


def ours(students: dict[str, dict[int, dict[str, Any]]]) -> str:
    if not all(students.values()):
        return "—"
    per_form = "; ".join(f"{form}: {', '.join(f'{perplexity_of(r):.2f}' for _, r in sorted(runs.items()))} "
                         f"({seeds_label(sorted(runs))})" for form, runs in students.items())
    return f"student test perplexity per seed, students with bfloat16 logits: {per_form} (verdict on log perplexity)"


def claim_row(results_dir: str | Path) -> dict[str, str]:
    _, students = load(results_dir)
    return {"id": "stable-kd-ptb", "claim": CLAIM, "paper": PAPER, "ours": ours(students),
            "verdict": str(kd_verdict(students)), "source": "stable"}


def section(results_dir: str | Path) -> str:
    """Markdown: the teacher, the students' table and the verdict; empty when the study has no records."""
    teachers, students = load(results_dir)
    if not teachers and not any(students.values()):
        return ""
    rows = [["teacher (float32, full softmax)", seeds_label([t["seed"] for t in teachers]),
             ", ".join(f"{perplexity_of(t):.2f}" for t in teachers), ", ".join(f"{t['timing']['wall_s'] / 60:.1f}" for t in teachers)]]
    for form, runs in students.items():
        ordered = [r for _, r in sorted(runs.items())]
        rows.append([f"student, {form} KL (bfloat16 logits)", seeds_label(sorted(runs)),
                     ", ".join(f"{perplexity_of(r):.2f}" for r in ordered),
                     ", ".join(f"{r['timing']['wall_s'] / 60:.1f}" for r in ordered)])
    sample = next((r for runs in students.values() for r in runs.values()), teachers[0] if teachers else None)
    d = get(sample, "config.distill") or {}
    setting = (f"PTB, the LSTM LM of {get(sample, 'config.model.hidden_size')} units, {sample['timing']['global_steps']} steps of "
               f"{get(sample, 'config.train.optim')} at lr {get(sample, 'config.train.lr'):g}, "
               f"batch {get(sample, 'config.train.batch_size')}")
    if d.get("teacher"):
        setting += (f"; students: α = {d.get('alpha')}, T = {d.get('temperature')}, the teacher's {d.get('topk')} largest logits "
                    "and one bucket for the rest, every student seed from the seed-0 teacher")
    table = markdown_table(["run", "seeds", "test perplexity per seed", "wall minutes per run"], rows)
    return (f"## Distillation in the training pipeline (Penn Treebank self-distillation)\n\n"
            f"Made by `make reproduce-stable-kd-ptb` (records in {shown_path(runs_dir(results_dir) / EXPERIMENT)}/, from "
            f"{commits(teachers + [r for runs in students.values() for r in runs.values()])}). {setting}. The setting is ours: "
            "the paper names no pipeline; bfloat16 is the precision where it expects the two forms to differ. Under CPU "
            "autocast the students' LSTM runs in float32 and their logits are bfloat16, for both forms; "
            "the standard KL computes in bfloat16 and the stable "
            "one, like the package's stable functions, in float32, so this comparison does not separate the rewrite from "
            "the float32 compute (the toy study's cast arm does).\n\n"
            f"{table}\n\nVerdict (stable's test perplexity below standard's, Welch's 95% interval over seeds on log "
            f"perplexity): {kd_verdict(students)}.\n")
