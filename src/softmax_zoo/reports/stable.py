"""Softmax collapse and KD cancellation in training: results/stable.md, its figures, the stable-* claims rows.

Reads the toy study's records (``python -m softmax_zoo.studies.stable``, ``<results_dir>/runs/stable/``) and the PTB
self-distillation's (``runs/stable_kd_ptb/``). Two arms are compared seed by seed as the ratio of their final
values, the verdict on log10(A/B) (on A − B where B is exactly 0) with a paired t interval over seeds: the arms of one
seed share the model's initialisation and data (:func:`higher`). The fix paper's two FP32 minimal examples and its
"mathematically equivalent" and its near-identical KD, measured by ``python -m softmax_zoo.studies.loss_forms``
(results/diagnostics/loss_forms.json), are deterministic rows (_stable_examples.py); the figures' panels are drawn
by _stable_figures.py. Words: templates/stable.md.j2, _stable_figures.j2.
"""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path
from typing import Any

from ..records import runs_dir, seeds_of
from ..run_record import RunRecord, load_runs
from ._compare import Comparison, Design, compare_values, per_seed
from ._forms import ClaimForm, ClaimKind
from ._pages import commits, dirty_note, file_commit, page_command, publish, shown_path
from ._stable_examples import CANCELLATION_FACTOR, LOSS_FORMS, NEARLY_IDENTICAL, examples, loss_forms
from ._stable_figures import FLOOR, WORDS, panels
from ._stats import mean
from ._verdicts import Verdict, verdict

EXPERIMENT, KD_PTB = "stable", "stable_kd_ptb"
# README.md's status table: experiment -> the claims-ledger row that heads it
HEADLINES = {EXPERIMENT: "stable-collapse", KD_PTB: "stable-kd-ptb"}
PAIRS = {"float32": [("standard", "stable")], "bfloat16": [("standard", "stable"), ("standard", "cast"), ("cast", "stable")]}
CE_KEYS = ("zero_target_grad_share", "target_prob_one_share", "zero_sum_violation", "loss", "param_grad_norm",
           "train_accuracy", "test_accuracy")
KD_KEYS = ("logit_grad_norm", "drift", "kl", "test_accuracy", "agreement")
SATURATE_KEYS = ("target_prob_one_share", "zero_target_grad_share", "loss", "param_grad_norm", "train_accuracy", "test_accuracy")
STUDIES = ("collapse", "cancellation", "generalise", "saturate")
# A seed gives every arm of the toy study the same initial MLP and train/test split (full batch, so no data order), and
# every PTB student the same initialisation and batch order: two arms are paired by seed.
PAIRED = Comparison("arm A", "arm B", "final value", Design.PAIRED_BY_SEED)
SATURATE_ARMS = (("standard", "float32"), ("stable", "float32"), ("standard", "float64"))  # (form, dtype), float64 the control


def arms(dtypes=("float32", "bfloat16")) -> list[tuple[str, str]]:
    """(form, dtype) in page order: standard, cast (bfloat16 only), stable."""
    return [(f, d) for d in dtypes for f in ("standard", "cast", "stable") if f != "cast" or d == "bfloat16"]


def group(records, **match) -> list[RunRecord]:
    """The records whose config fields (study, form, dtype, start, loss) equal ``match``."""
    return [r for r in records if all(r.setting(k) == v for k, v in match.items())]


def setting_of(records, study: str) -> dict[str, Any]:
    """The Setting of ``study``'s runs (the fullest one: the first runs lack the later regimes' fields)."""
    return max((r.setting("setting") for r in group(records, study=study)), key=len, default={})


def higher(a: dict[int, float], b: dict[int, float], digits: int = 2) -> Verdict:
    """The verdict on B > A from Δ = B − A per seed both arms have (:data:`PAIRED`: paired t over those seeds)."""
    return verdict(compare_values(PAIRED, a, b).delta, +1, digits=digits)


def by(runs, key: str) -> dict[int, float]:
    """seed -> final ``key``."""
    return per_seed(runs, key)


def finals(runs, key: str) -> list[float] | None:
    """Final ``key`` of every run; None when some run lacks it (the page's dash)."""
    return [float(r.metrics[key]) for r in runs] if runs and all(key in r.metrics for r in runs) else None


def ratio(a_runs, b_runs, key: str) -> dict[str, Any] | None:
    """Final ``key`` of arm A and B per common seed, and the verdict on A > B: on log10(A/B) when every value is
    positive, on A − B when some B is exactly 0 (``on`` names which; None when A and B are equal everywhere)."""
    a, b = by(a_runs, key), by(b_runs, key)
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    out = {"seeds": seeds, "pairs": [(a[s], b[s]) for s in seeds], "on": None, "verdict": None}
    if all(a[s] > 0 and b[s] > 0 for s in seeds):
        log_a, log_b = ({s: math.log10(v[s]) for s in seeds} for v in (a, b))
        out |= {"on": "log10", "verdict": higher(log_b, log_a)}
    elif any(a[s] != b[s] for s in seeds):
        out |= {"on": "difference", "verdict": higher(b, a, 4)}
    return out


def comparison(records, study: str, key: str, **match) -> dict[str, Any]:
    """:func:`ratio` of each pair of forms in :data:`PAIRS`, and which source of a bfloat16 difference the verdicts point to."""
    lines, kinds = [], {}
    for dtype, forms in PAIRS.items():
        for a, b in forms:
            ra, rb = (group(records, study=study, dtype=dtype, form=f, **match) for f in (a, b))
            if ra and rb:
                r = ratio(ra, rb, key)
                lines.append({"dtype": dtype, "a": a, "b": b, "ratio": r})
                kinds[f"{dtype} {a}/{b}"] = r["verdict"].kind.value if r and r["verdict"] else None
    std_cast, cast_stable, std_stable = (kinds.get(f"bfloat16 {p}") for p in ("standard/cast", "cast/stable", "standard/stable"))
    reading = (None if None in (std_cast, cast_stable, std_stable) else
               "none" if std_cast == cast_stable == std_stable == "inconclusive" else
               "rewrite" if cast_stable == "supported" else
               "float32" if std_cast == "supported" and cast_stable == "inconclusive" else "unseparated")
    return {"lines": lines, "reading": reading}


def accuracy(records, study: str, **match) -> dict[str, Any]:
    """Each arm's test accuracies, and stable − standard per seed for each dtype with both."""
    arm_rows = [{"dtype": d, "form": f, "test": finals(runs, "test_accuracy")}
                for f, d in arms() if (runs := group(records, study=study, dtype=d, form=f, **match))]
    diffs = []
    for dtype in ("float32", "bfloat16"):
        std, stb = (by(group(records, study=study, dtype=dtype, form=f, **match), "test_accuracy") for f in ("standard", "stable"))
        if std and stb:
            seeds = sorted(set(std) & set(stb))
            diffs.append({"dtype": dtype, "seeds": seeds, "pp": [100 * (stb[s] - std[s]) for s in seeds]})
    return {"arms": arm_rows, "diffs": diffs}


def ce_rows(records, study: str, **match) -> list[dict[str, Any]]:
    """Final numbers of the CE runs of ``study``, one row per (dtype, form)."""
    return [{"dtype": d, "form": f, **{k: finals(runs, k) for k in CE_KEYS}}
            for f, d in arms() if (runs := group(records, study=study, dtype=d, form=f, **match))]


def kd_rows(records, study: str, starts=("equal", "fresh"), **match) -> list[dict[str, Any]]:
    """Final numbers of the distillation runs of ``study``, one row per (start, dtype, form), with the step-0 gradient norm."""
    return [{"start": start, "dtype": d, "form": f, "step0": [float(r.history[0]["logit_grad_norm"]) for r in runs],
             **{k: finals(runs, k) for k in KD_KEYS}}
            for start in starts for f, d in arms()
            if (runs := group(records, study=study, dtype=d, form=f, **({"start": start} if study == "cancellation" else {}), **match))]


def at_step(run: dict[str, Any], step: int) -> dict[str, float]:
    """The logged point at ``step`` with the latest test accuracy at or before it."""
    point = next(p for p in run.history if p["step"] == step)
    tests = [p for p in run.history if p["step"] <= step and "test_accuracy" in p]
    return {**point, "test_accuracy": tests[-1]["test_accuracy"]} if tests else point


def saturate(records, level: float = 0.5) -> dict[str, Any]:
    """The saturate regime: per seed the first step where standard float32 CE has ``level`` of q_t exactly 1 (the onset),
    each arm's means at the onset and at the end, the largest loss after the onset, the arms' final ratios."""
    sat = {(f, d): group(records, study="saturate", form=f, dtype=d) for f, d in SATURATE_ARMS}
    std = sat["standard", "float32"]
    onset = {r.seed: next((p["step"] for p in r.history if p.get("target_prob_one_share", 0.0) >= level), None)
             for r in sorted(std, key=lambda r: r.seed)}
    rows, worst = [], {}
    for (f, d), runs in sat.items():
        runs = [r for r in runs if onset.get(r.seed) is not None]
        for when in ("onset", "end"):
            points = [at_step(r, onset[r.seed]) if when == "onset" else r.metrics for r in runs]
            if points:
                rows.append({"dtype": d, "form": f, "when": when, **{k: mean([p[k] for p in points]) for k in SATURATE_KEYS}})
        if runs:
            worst[f"{f} {d}"] = {r.seed: max(p["loss"] for p in r.history if p["step"] > onset[r.seed]) for r in runs}
    ratios = [{"a": " ".join(a), "b": " ".join(b), "key": key, "ratio": ratio(sat[a], sat[b], key)}
              for a, b in combinations(SATURATE_ARMS, 2) if sat[a] and sat[b] for key in ("loss", "param_grad_norm")]
    return {"onset": onset, "peaks": {r.seed: max(p["target_prob_one_share"] for p in r.history) for r in std},
            "rows": rows, "worst": {k: dict(sorted(v.items())) for k, v in worst.items() if v}, "ratios": ratios, "any": bool(std)}


def peak_share(runs) -> dict[int, float]:
    """seed -> the largest share of target gradients exactly 0 along the run."""
    return {r.seed: max(p.get("zero_target_grad_share", 0.0) for p in r.history) for r in runs}


def _higher(cue: str, measure: str, better: str = "lower") -> ClaimForm:
    return ClaimForm(ClaimKind.SUPERIORITY, cue, measure=measure, better=better)


FORMS = {  # each ledger row's form (reports/_forms.py), by id
    "stable-collapse": _higher("only the stable formulation preserves the small nonzero gradient",
                               "share of rows whose target gradient is exactly 0", "lower"),
    "stable-collapse-training": _higher("trains differently (its final loss is higher)", "final train loss"),
    "stable-collapse-bfloat16-rewrite": _higher("the rewritten form lowers the final train loss", "final train loss"),
    "stable-cancellation-bfloat16-rewrite": _higher("the rewritten form lowers the drift", "drift at identical logits"),
    "stable-cancellation": _higher("catastrophic cancellation", "drift at identical logits"),
    "stable-generalise-ce": _higher("reaches a higher test accuracy", "test accuracy", "higher"),
    "stable-generalise-kd": _higher("reaches a higher test accuracy", "test accuracy", "higher"),
    "stable-zero-sum-ce": _higher("violating the zero-sum gradient property", "mean |Σ_j ∂L_i/∂z_ij|"),
    "stable-zero-sum-kd": _higher("to reduce floating-point violations of the zero-sum gradient property",
                                  "mean |Σ_j ∂L_i/∂z_ij|"),
    "stable-kd-ptb": _higher("the stable form's student reaches a lower test perplexity", "log test perplexity"),
    "stable-example-collapse": ClaimForm(ClaimKind.DETERMINISTIC, "only the stable formulation preserves the small nonzero gradient"),
    "stable-example-cancellation": ClaimForm(ClaimKind.DETERMINISTIC, "the stable formulation produces zero gradient"),
    "stable-equivalence": ClaimForm(ClaimKind.DETERMINISTIC, "mathematically equivalent"),
    "stable-kd-equivalence": ClaimForm(ClaimKind.DETERMINISTIC, "mathematically equivalent to the original gradient"),
    "stable-kd-nearly-identical": ClaimForm(ClaimKind.DETERMINISTIC, "nearly identical",
                                            extra={"nearly_identical": NEARLY_IDENTICAL, "factor": CANCELLATION_FACTOR}),
}


def claims(records) -> list[dict[str, Any]]:
    """The stable-* claims rows of the toy study as data, each with the dirty note of the runs it shows."""
    rows: list[dict[str, Any]] = []
    sat = {(f, d): group(records, study="saturate", form=f, dtype=d) for f, d in SATURATE_ARMS}
    std, stb = sat["standard", "float32"], sat["stable", "float32"]
    if all(sat.values()):
        mem = group(records, study="collapse", dtype="bfloat16", form="standard")
        rows += [{"id": "stable-collapse", "std": peak_share(std), "stb": peak_share(stb), "dirty": dirty_note(std + stb + mem),
                  "verdict": higher(peak_share(stb), peak_share(std), 3),
                  "memorise": [(r.seed, r.metrics["zero_target_grad_share"]) for r in mem]},
                 {"id": "stable-collapse-training", "stable": ratio(std, stb, "loss"),
                  "float64": ratio(std, sat["standard", "float64"], "loss"), "dirty": dirty_note(sum(sat.values(), []))}]
    else:
        rows.append({"id": "stable-collapse", "missing": True})
    for study, key in (("collapse", "loss"), ("cancellation", "drift")):
        match = {"start": "equal"} if study == "cancellation" else {}
        cast, stb, std = (group(records, study=study, dtype="bfloat16", form=f, **match) for f in ("cast", "stable", "standard"))
        if cast and stb and std:
            row = {"id": f"stable-{study}-bfloat16-rewrite", "study": study, "cast": ratio(cast, stb, key),
                   "standard": ratio(std, stb, key), "dirty": dirty_note(cast + stb + std)}
            rows.append(row | {"verdict": higher(by(stb, key), by(cast, key), 4) if study == "cancellation" else row["cast"]["verdict"]})
    std, stb = (group(records, study="cancellation", start="equal", dtype="float32", form=f) for f in ("standard", "stable"))
    if std and stb:
        rows.append({"id": "stable-cancellation", "std": by(std, "drift"), "stb": by(stb, "drift"), "dirty": dirty_note(std + stb),
                     "verdict": higher(by(stb, "drift"), by(std, "drift"), 4),
                     "steps": setting_of(records, "cancellation").get("distill_steps"),
                     "step0": {f: mean([r.history[0]["logit_grad_norm"] for r in runs])
                               for f, runs in (("standard", std), ("stable", stb))}})
    for loss in ("ce", "kd"):
        std, stb = (group(records, study="generalise", loss=loss, dtype="bfloat16", form=f) for f in ("standard", "stable"))
        if std and stb:
            rows.append({"id": f"stable-generalise-{loss}", "loss": loss, "accuracy": accuracy(records, "generalise", loss=loss),
                         "verdict": higher(by(std, "test_accuracy"), by(stb, "test_accuracy"), 3),
                         "dirty": dirty_note(group(records, study="generalise", loss=loss))})
    for loss, study, match in (("ce", "saturate", {}), ("kd", "cancellation", {"start": "fresh"})):
        std, stb = (group(records, study=study, dtype="float32", form=f, **match) for f in ("standard", "stable"))
        if std and stb:
            rew = group(records, study=study, dtype="float32", form="rewrite", **match)
            rows.append({"id": f"stable-zero-sum-{loss}", "std": finals(std, "zero_sum_violation"), "dirty": dirty_note(std + stb + rew),
                         "stb": finals(stb, "zero_sum_violation"), "ratio": ratio(std, stb, "zero_sum_violation"),
                         **(zero_sum_parts(std, rew, stb) if rew else {})})
    return rows


def zero_sum_parts(std, rew, stb) -> dict[str, Any]:
    """The KD violation in three arms: standard, the expm1 rewrite alone and rewrite + correction. The verdict is on
    the correction (rewrite alone against rewrite + correction); ``share`` is each part's share of log10(standard /
    stable), the mean over common seeds (None where a ratio is not on log10)."""
    parts = {"rewrite": ratio(std, rew, "zero_sum_violation"), "correction": ratio(rew, stb, "zero_sum_violation")}
    total = ratio(std, stb, "zero_sum_violation")
    logs = {name: mean([math.log10(a / b) for a, b in r["pairs"]]) for name, r in (*parts.items(), ("total", total))
            if r and r["on"] == "log10"}
    share = {name: logs[name] / logs["total"] for name in parts if name in logs} if logs.get("total") else None
    return {"rew": finals(rew, "zero_sum_violation"), "parts": parts, "share": share}


def kd_ptb(results_dir: str | Path) -> dict[str, Any]:
    """The PTB self-distillation: its teachers, its students per KL form by seed, and the verdict on the stable
    form's lower test perplexity (paired t over seeds on log perplexity; None without students of both forms)."""
    found = load_runs(runs_dir(results_dir), KD_PTB)
    form = {id(r): r.setting("distill", "kl") if r.setting("distill", "teacher") else None for r in found}
    teachers = [r for r in found if form[id(r)] is None]
    students = {f: sorted((r for r in found if form[id(r)] == f), key=lambda r: r.seed) for f in ("standard", "stable")}
    every = [r for runs in students.values() for r in runs]
    ppl = {f: per_seed(runs, "test/perplexity", log=True) for f, runs in students.items()}
    return {"id": "stable-kd-ptb", "teachers": teachers, "students": students, "dirty": dirty_note(every),
            "verdict": higher(ppl["stable"], ppl["standard"], 4) if all(students.values()) else None,
            "sample": next(iter(every), teachers[0] if teachers else None),
            "folder": shown_path(runs_dir(results_dir) / KD_PTB), "commits": commits(teachers + every)}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the study's settings and budget, each regime's rows and comparisons, the claims rows."""
    folder = runs_dir(results_dir) / EXPERIMENT
    records = load_runs(folder.parent, EXPERIMENT)
    if not records:
        raise FileNotFoundError(f"no records in {folder}; run `make reproduce-stable` first")
    threads = [r.setting("torch_threads") for r in records]
    ptb, forms = kd_ptb(results_dir), loss_forms(results_dir)
    example = examples(forms)
    return {
        "records": records, "folder": shown_path(folder), "command": page_command(EXPERIMENT, results_dir),
        "loss_forms": {"file": shown_path(Path(results_dir) / LOSS_FORMS), "command": forms["command"],
                       "commit": file_commit(forms), "cpu": forms["cpu"]},
        "commits": commits(records), "seeds": seeds_of(records),
        "threads": sorted(set(threads) - {None}), "no_threads": threads.count(None),
        "minutes": {s: sum(r.timing["wall_s"] for r in group(records, study=s)) / 60 for s in STUDIES},
        "s": setting_of(records, "collapse"), "g": setting_of(records, "generalise"), "sat": setting_of(records, "saturate"),
        "k": setting_of(records, "cancellation"),
        "memorise_peak": max(peak_share(group(records, study="collapse", dtype="float32", form="standard")).values(), default=None),
        "examples": example, "saturate": saturate(records),
        "ce": {"collapse": ce_rows(records, "collapse"), "generalise": ce_rows(records, "generalise", loss="ce")},
        "kd": {"generalise": kd_rows(records, "generalise", starts=("fresh",), loss="kd"),
               "cancellation": kd_rows(records, "cancellation")},
        "comparisons": {"collapse": comparison(records, "collapse", "loss"),
                        "drift": comparison(records, "cancellation", "drift", start="equal"),
                        "fresh_kl": comparison(records, "cancellation", "kl", start="fresh"),
                        "generalise_ce": comparison(records, "generalise", "loss", loss="ce"),
                        "generalise_kd": comparison(records, "generalise", "kl", loss="kd")},
        "accuracy": {loss: accuracy(records, "generalise", loss=loss) for loss in ("ce", "kd")},
        "forms": WORDS.forms, "kd_ptb": ptb,
        "claims": [c | {"source": EXPERIMENT, "form": FORMS[c["id"]]} for c in (*claims(records), *example, ptb)],
    }


def plots(records, out: Path) -> None:
    """stable_collapse.png, stable_saturate.png, stable_generalise.png, stable_drift.png (their words: templates/_stable_figures.j2)."""
    def lines(study, key, pairs, floor=-math.inf, **match):
        return [(group(records, study=study, dtype=d, form=f, **match), key, f, d, floor) for f, d in pairs]

    both = arms()
    specs = {
        "collapse": [(False, lines("collapse", "zero_target_grad_share", arms((d,)))) for d in ("float32", "bfloat16")]
        + [(True, lines("collapse", "loss", both))],
        "saturate": [(log, lines("saturate", key, SATURATE_ARMS)) for log, key in
                     ((False, "target_prob_one_share"), (True, "loss"), (True, "param_grad_norm"))],
        "generalise": [(False, lines("generalise", "test_accuracy", both, loss="ce")), (True, lines("generalise", "loss", both, loss="ce")),
                       (False, lines("generalise", "test_accuracy", both, loss="kd"))],
        "drift": [(True, lines("cancellation", "drift", arms((d,)), FLOOR, start="equal")) for d in ("float32", "bfloat16")],
    }
    for name, (title, texts) in WORDS.figures.items():
        panels(out / f"stable_{name}.png", title, texts, specs[name])


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write stable.md, its figures and the stable-* rows of claims.md into ``out`` (default ``results_dir``)."""
    data = summarise(results_dir)
    out = Path(out or results_dir)
    plots(data["records"], out)
    publish(out, EXPERIMENT, data)
