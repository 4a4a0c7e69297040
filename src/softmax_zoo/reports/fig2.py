"""Sparse-softmax Fig. 1 and Fig. 2 (Sun et al. 2021): results/fig2.md, fig2.png, fig1.png and their claims rows.

From the records of ``fig2_<task>`` (``make reproduce-fig2``) and ``fig2_finetune_<task>``: per task the full softmax and
sparse-softmax at each k of the grid, one run per seed. Arms of one seed share initialisation and data order
(tests/classification/test_pairing.py), so every comparison is paired by seed; claims over the grid of k are decided on
Holm-adjusted intervals, "stable in k" by TOST against :data:`STABLE`'s margin (:class:`._compare.Grid`).
Words: templates/fig2.md.j2, and the figures' templates/_fig2_figures.j2. Build: ``python -m softmax_zoo.reports fig2``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from ..config import CONFIG_DIR
from ..losses.machinery.registry import variant_title
from ..records import runs_dir, seeds_of
from ..run_record import RunRecord, load_runs
from ._compare import Grid, compare, per_seed
from ._fig1 import FASTER, FIGURES, SMOOTH, by_seed, convergence, error_bar, fig1_data, plot_fig1, smoother
from ._fig2_constants import F1, PAPER_K, SOFTMAX, TASK_NAMES, Groups
from ._fig2_speed import speed_claim, step_claim
from ._forms import WIDE_K_RULE, ClaimForm, ClaimKind, up_to_quarter
from ._pages import commits, page_command, publish, pyplot, save_figure, shown_path, template_words
from ._settings import SPARSE, Setting, pretrained_name, seeds, setting, settings_data, shown, sparse_ks, values
from ._stats import mean, mean_ci
from ._verdicts import MIN_SEEDS, VerdictKind, not_tested

PAPER_F1 = {"iflytek": 60.7, "clinc_oos": 96.1}  # Sun et al. 2021, Fig. 2: micro-F1 at k=20
EXPERIMENT_PREFIX = "fig2_"
# README.md's status table: experiment -> the claims-ledger row that heads it, Fig. 2's main claim (a wide range of k)
HEADLINES = {"fig2_clinc_oos": "fig2-robust-k-clinc_oos", "fig2_finetune_clinc_oos": "fig2-finetune-robust-k-clinc_oos",
             "fig2_iflytek": "fig2-robust-k-iflytek", "fig2_wos": "fig2-robust-k-wos"}
FINETUNE_PREFIX = "fig2_finetune_"  # make reproduce-fig2-finetune
TRAIN_COMMAND = "python -m softmax_zoo.train"
SWEPT = ("loss.k", "seed")  # the sweep dimensions of configs/experiment/fig2_*.yaml
METRICS = (F1, "val/micro_f1", "test/in_scope_accuracy", "test/target_in_topk")  # per arm, in points
# The claims of the paper's text that no fig2 run decides: (kind, ledger id); templates/fig2.md.j2 words them.
TEXT_CLAIMS = (("rcv1", "fig1-convergence-rcv1"), ("margin", "sparse-margin-log-n-1"), ("sota", "sparse-sota-k20"),
               ("simpler", "sparse-simpler"), ("full-support", "sparse-full-support-weakness"),
               ("perturbed", "sparse-less-perturbed"), ("decoding-cost", "sparse-decoding-cost"))


def group_runs(records: list[RunRecord]) -> dict[str, Groups]:
    """task name -> arm -> records; the arm the record's loss choice and k (:meth:`RunRecord.arm`)."""
    out: dict[str, Groups] = {}
    for r in records:
        out.setdefault(r.setting("task", "name"), {}).setdefault(r.arm("k"), []).append(r)
    return out


def percent_reader(name: str):
    """A record's metric ``name`` (e.g. "test/micro_f1") in points (x100), None without it."""
    return lambda r: 100 * r.metrics[name] if name in r.metrics else None


def metric(runs: list[RunRecord], name: str) -> list[float]:
    """``name`` of each run in points, in record order, runs lacking it left out."""
    return list(per_seed(runs, percent_reader(name), partial=True).values())


def grid_ks(groups: Groups) -> list[int]:
    return sorted(k for loss, k in groups if loss == SPARSE)


def best_k(groups: Groups) -> int | None:
    return max(grid_ks(groups), key=lambda k: mean(metric(groups[(SPARSE, k)], F1)), default=None)


VS_SOFTMAX = by_seed("softmax", "sparse-softmax k", percent_reader(F1))
VS_K20 = by_seed("sparse-softmax k", f"sparse-softmax k={PAPER_K}", percent_reader(F1))
# "stable in its hyperparameter k" (Sun et al. 2021): the paper states no margin, so the margin (micro-F1 points) is ours
STABLE = by_seed(f"sparse-softmax k={PAPER_K}", "sparse-softmax k", percent_reader(F1), margin=1.0,
                 margin_source="ours, 1 micro-F1 point; the paper states no margin for \"stable\"")


def regime(groups: Groups) -> float | None:
    """The mean share (points) of test targets inside the top-k of the k=20 runs; None unless every one measured it."""
    runs = groups.get((SPARSE, PAPER_K), [])
    shares = metric(runs, "test/target_in_topk")
    return mean(shares) if runs and len(shares) == len(runs) else None


def grid_rows(grid: Grid, direction: int = 1) -> tuple[Any, list[dict[str, Any]]]:
    """(the grid's verdict, one row per key: Δ, raw 95% interval, p, Holm-adjusted interval and p, seeds)."""
    found, holm = grid.decide(direction)
    rows = [{"k": key, "delta": c.delta.delta, "raw": c.delta.interval, "p": c.delta.p_value, "n": c.delta.n,
             "holm": holm[key].interval if holm else None, "p_holm": holm[key].p_value if holm else None,
             "level": holm[key].confidence if holm else None} for key, c in grid.compared.items()]
    return found, rows


def task_claims(task: str, groups: Groups, *, finetuned: bool = False) -> list[dict[str, Any]]:
    """One task's rows where their arms ran (k=20 against softmax, a wide range of k, Fig. 1's convergence, k=20 best,
    stable in k, the paper's micro-F1), each with the seeds its comparison paired."""
    soft, sparse = groups.get((SOFTMAX, None)), {k: groups[(SPARSE, k)] for k in grid_ks(groups)}
    k20, others, tag = sparse.get(PAPER_K), [k for k in sparse if k != PAPER_K], "finetune-" if finetuned else ""
    means = {k: mean(metric(runs, F1)) for k, runs in sparse.items()}
    rows = []
    if soft and sparse:
        grid = Grid({k: compare(VS_SOFTMAX, soft, runs) for k, runs in sparse.items()})
        _, deltas = grid_rows(grid)
        wide = up_to_quarter(list(sparse), classes := int(soft[0].task_info["num_classes"]))
        rows.append({"kind": "robust-k", "id": f"fig2-{tag}robust-k-{task}", "ks": list(sparse), "means": means, "deltas": deltas,
                     "seeds": grid.seeds, "members": wide, "classes": classes,
                     "verdict": grid.every(wide, +1) if wide else not_tested(f"no k of the grid within {WIDE_K_RULE}")})
        if k20:
            c = grid.compared[PAPER_K]
            rows.append({"kind": "k20-vs-softmax", "id": f"fig2-{tag}k20-vs-softmax-{task}", "delta": c.delta, "method": c.method,
                         "row": deltas[list(sparse).index(PAPER_K)], "seeds": list(c.delta.seeds), "verdict": c.verdict(direction=1)})
            rows.append({"kind": "convergence", "id": f"fig1-{tag}convergence-{task}", "seeds": list(c.delta.seeds),
                         "faster": convergence(FASTER, soft, k20, +1), "smoother": smoother(soft, k20)})
    if k20 and others:
        _, deltas = grid_rows(best := Grid({k: compare(VS_K20, sparse[k], k20) for k in others}))
        rows.append({"kind": "k20-best", "id": f"fig2-{tag}k20-best-{task}", "best": best_k(groups), "means": means,
                     "k20": mean_ci(metric(k20, F1)), "seeds": best.seeds, "deltas": deltas, "members": others,
                     "verdict": best.every(others, +1)})
        stable = Grid({k: compare(STABLE, k20, sparse[k]) for k in others})
        rows.append({"kind": "stable-k", "id": f"fig2-{tag}stable-k-{task}", "seeds": stable.seeds, "margin": STABLE.margin,
                     "tost": {k: c.verdict().data["eq"] for k, c in stable.compared.items()},
                     "verdict": stable.decide()[0]})
    if k20 and task in PAPER_F1:
        in_scope = metric(k20, "test/in_scope_accuracy")
        rows.append({"kind": "f1", "id": f"fig2-{tag}{task}-f1", "paper": PAPER_F1[task], "k20": mean(metric(k20, F1)),
                     "in_scope": mean(in_scope) if in_scope else None, "seeds": sorted(r.seed for r in k20)})
    return [{"task": task, "finetuned": finetuned, "regime": regime(groups), "source": "fig2"} | row for row in rows]


def task_name(task: str) -> str:
    return TASK_NAMES.get(task, task)


def caveat(task: str) -> str | None:
    """What separates the task's runs from the paper's setting: ``caveat`` of configs/task/<task>.yaml (None without one)."""
    path = CONFIG_DIR / "task" / f"{task}.yaml"
    return OmegaConf.load(path).get("caveat") if path.is_file() else None


def settings(summary: dict[str, Groups], tuned: dict[str, Groups]) -> dict[str, Any]:
    """The settings table: the paper's statements and our reasons (templates/_fig2_settings.j2), ours per task from its records."""
    text = template_words("_fig2_settings.j2", paper_k=PAPER_K, paper_f1=PAPER_F1, task_names=TASK_NAMES, min_seeds=MIN_SEEDS)
    readers = {
        "training data": lambda rs: text.data(rs[0].task_info or {}),
        "model": lambda rs: text.model(rs[0].setting("model"), pretrained_name(rs[0].setting("model", "pretrained"))),
        "epochs": lambda rs: shown(rs, setting("train", "epochs")), "batch size": lambda rs: shown(rs, setting("train", "batch_size")),
        "learning rate": lambda rs: shown(rs, setting("train", "lr"), lambda v: f"{v:g}"),
        "maximum length (tokens)": lambda rs: shown(rs, setting("task", "max_length")), "sparse-softmax k": sparse_ks,
        "metric": lambda rs: text.metric(bool(values(rs, setting("task", "oos_label")))), "seeds": seeds,
    }
    rows = [Setting(name, text.paper.get(name), read, text.why[name]) for name, read in readers.items()]
    columns = {text.column(task_name(t), finetuned): [r for rs in g[t].values() for r in rs]
               for finetuned, g in ((False, summary), (True, tuned)) for t in sorted(g)}
    return settings_data(rows, columns, text.source)


def commands(records: list[RunRecord]) -> list[str]:
    """The multirun commands that made the records, from each record's Hydra overrides (``job.overrides``):
    the overrides the jobs share, with the swept values (:data:`SWEPT`) gathered back into ``key=v1,v2,...``."""
    groups: dict[tuple[str, ...], dict[str, set[str]]] = {}
    for r in records:
        overrides = [o.partition("=") for o in r.job.get("overrides") or []]
        swept = groups.setdefault(tuple("".join(o) for o in overrides if o[0] not in SWEPT), {})
        for key, _, value in (o for o in overrides if o[0] in SWEPT):
            swept.setdefault(key, set()).add(value)
    return [" ".join([TRAIN_COMMAND, *(["-m"] if any(len(v) > 1 for v in swept.values()) else []), *base,
                      *(f"{k}={','.join(sorted(v, key=lambda x: (len(x), x)))}" for k, v in sorted(swept.items()))])
            for base, swept in sorted(groups.items())]


def task_data(task: str, groups: Groups, *, finetuned: bool = False) -> dict[str, Any]:
    """A task's section: its caveat and claims, the settings its runs share (the first run's config and task info), their
    timing, one row per arm (softmax first, then by k), the paired Δ against softmax per k, the k above and below 0 (Holm)."""
    claims = {c["kind"]: c for c in task_claims(task, groups, finetuned=finetuned)}
    runs = [r for rs in groups.values() for r in rs]
    timing = [r.timing for r in runs]
    rows = [{"kind": kind, "k": k, "loss": variant_title(groups[(kind, k)][0].choice("loss")),
             **{name: metric(groups[(kind, k)], name) for name in METRICS},
             "paper": PAPER_F1.get(task) if (kind, k) == (SPARSE, PAPER_K) else None}
            for kind, k in sorted(groups, key=lambda arm: (arm[0] != SOFTMAX, arm[1] or 0))]
    paired, best = claims["robust-k"]["deltas"] if "robust-k" in claims else [], best_k(groups)
    return {"task": task, "name": task_name(task), "caveat": caveat(task), "claims": claims, "config": runs[0].config,
            "info": runs[0].task_info or {}, "pretrained": pretrained_name(runs[0].setting("model", "pretrained")),
            "frozen": bool(runs[0].setting("model", "cache_features")),
            "runs": len(runs), "train_s": np.mean([t["train_s"] for t in timing]), "wall_min": sum(t["wall_s"] for t in timing) / 60,
            "rate": np.mean([t["train_examples_per_s"] for t in timing]), "rows": rows, "paired": paired,
            "topk_measured": all(row["test/target_in_topk"] for row in rows), "baseline": mean_ci(rows[0][F1]) if paired else None,
            "best": best, "best_mean": mean(metric(groups[(SPARSE, best)], F1)) if best is not None else None,
            "above": [r["k"] for r in paired if r["holm"] and r["holm"][0] > 0],
            "below": [r["k"] for r in paired if r["holm"] and r["holm"][1] < 0]}


def headline(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """The tasks the short summary names, by the verdicts of their rows; the widest half-interval of an arm."""
    claims = {t["task"]: t["claims"] for t in tasks}
    k20 = {t: c["k20-vs-softmax"]["verdict"].kind for t, c in claims.items() if "k20-vs-softmax" in c}
    faster = {t: f["verdict"].kind if (f := c["convergence"]["faster"]) else None for t, c in claims.items() if "convergence" in c}
    robust = {t: c["robust-k"]["verdict"].kind for t, c in claims.items() if "robust-k" in c}
    halves = [mean_ci(row[F1])[1] for t in tasks for row in t["rows"]]
    return {"k20_above": [t for t, v in k20.items() if v is VerdictKind.SUPPORTED],
            "k20_open": [t for t, v in k20.items() if v is not VerdictKind.SUPPORTED],
            "faster": [t for t, v in faster.items() if v is VerdictKind.SUPPORTED],
            "not_faster": [t for t, v in faster.items() if v is not VerdictKind.SUPPORTED],
            "robust": [t for t, v in robust.items() if v in (VerdictKind.SUPPORTED, VerdictKind.INCONCLUSIVE)],
            "frozen": [t["task"] for t in tasks if t["frozen"]],
            "widest": max((h for h in halves if not np.isnan(h)), default=float("nan"))}


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the runs' commands, the settings table, per task its section and claims, Fig. 1's data, the ledger rows."""
    runs = runs_dir(results_dir)
    found = [r for d in sorted(runs.glob(f"{EXPERIMENT_PREFIX}*")) if d.is_dir() for r in load_runs(runs, d.name)]
    records = [r for r in found if not str(r.experiment).startswith(FINETUNE_PREFIX)]
    tuned_records = [r for r in found if str(r.experiment).startswith(FINETUNE_PREFIX)]
    if not records:
        raise FileNotFoundError(f"no records in {runs}/{EXPERIMENT_PREFIX}*; run `make reproduce-fig2` first")
    summary, tuned = group_runs(records), group_runs(tuned_records)
    tasks = [task_data(t, summary[t]) for t in sorted(summary)]
    tuned_tasks = [task_data(t, tuned[t], finetuned=True) for t in sorted(tuned)]
    speed, step = speed_claim(results_dir), step_claim(results_dir)
    return {"folder": shown_path(runs), "prefix": EXPERIMENT_PREFIX, "tuned_prefix": FINETUNE_PREFIX, "commits": commits(records),
            "tuned_commits": commits(tuned_records), "commands": commands(records), "command": page_command("fig2", results_dir),
            "paper_k": PAPER_K, "paper_f1": PAPER_F1, "min_seeds": MIN_SEEDS, "smooth": SMOOTH, "stable": STABLE,
            "task_names": {t: t for t in summary | tuned} | TASK_NAMES,
            "settings": settings(summary, tuned), "tasks": tasks, "tuned": tuned_tasks,
            "headline": headline(tasks), "seeds": seeds_of(records), "speed": speed, "step": step,
            "fig1": {task_name(t): fig1_data(summary[t]) for t in sorted(summary)},
            "claims": [c | {"form": form_of(c)} for c in [c for t in tasks + tuned_tasks for c in t["claims"].values()]
                       + [speed, step] + [{"kind": kind, "id": id_, "source": "fig2"} for kind, id_ in TEXT_CLAIMS]]}


FORMS = {  # each ledger row's form (reports/_forms.py) by its kind; robust-k's and k20-best's by form_of
    "k20-vs-softmax": ClaimForm(ClaimKind.SUPERIORITY, "performance improvement against traditional softmax (k=20)",
                                measure="test micro-F1, k=20 − softmax", better="higher"),
    "convergence": ClaimForm(ClaimKind.SUPERIORITY, "converges faster and more smoothly",
                             measure="validation micro-F1 after epoch 1; the declared smoothness measures", better="higher"),
    "f1": ClaimForm(ClaimKind.DESCRIPTIVE, "the paper's micro-F1 at k=20", measure="test micro-F1"),
    "speed": ClaimForm(ClaimKind.DESCRIPTIVE, "Faster (the loss on given logits)", measure="ms per call, one timing"),
    "speed-step": ClaimForm(ClaimKind.DESCRIPTIVE, "Faster (the output layer's training step)", measure="ms per step, one benchmark"),
    "rcv1": ClaimForm(ClaimKind.NOT_TESTED, "converges faster and more smoothly (RCV1-v2)"),
    "margin": ClaimForm(ClaimKind.NOT_TESTED, "margin log(n − 1)"),
    "sota": ClaimForm(ClaimKind.NOT_TESTED, "state-of-the-art"),
    "simpler": ClaimForm(ClaimKind.BY_CONSTRUCTION, "Simpler"),
    "full-support": ClaimForm(ClaimKind.BY_CONSTRUCTION, "always has full support"),
    "perturbed": ClaimForm(ClaimKind.NOT_TESTED, "less likely perturbed and more likely to converge"),
    "decoding-cost": ClaimForm(ClaimKind.NOT_TESTED, "classify over 25,731 categories ... over 256 categories"),
}


def form_of(claim: dict[str, Any]) -> ClaimForm:
    """A fig2 ledger row's form: "a wide range of k" is every k ≤ C/4 of the grid (:func:`._forms.up_to_quarter`), "k=20
    best" every other k of the grid; the rest by kind (:data:`FORMS`)."""
    kind = claim["kind"]
    if kind == "robust-k":
        return ClaimForm(ClaimKind.EVERY_MEMBER, "a wide range of k can give us statistical consistent guarantees",
                         measure="test micro-F1, sparse k − softmax", better="higher", members=claim["members"],
                         rule=f"{WIDE_K_RULE}, C = {claim['classes']}", grid=claim["ks"])
    if kind == "k20-best":
        return ClaimForm(ClaimKind.EVERY_MEMBER, "k=20 gives the best performance", measure="test micro-F1, k=20 − k",
                         better="higher", members=claim["members"], rule="every other k of the grid")
    if kind == "stable-k":
        return ClaimForm(ClaimKind.EVERY_MEMBER, "our procedure is stable in its hyperparameter k", measure="test micro-F1, k − k=20",
                         margin=STABLE.margin, margin_source=STABLE.margin_source, members=list(claim["tost"]),
                         rule="every k of the grid other than 20")
    return FORMS[kind]


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write fig2.md, fig2.png, fig1.png and the fig2 rows of claims.md into ``out`` (default ``results_dir``)."""
    data, out = summarise(results_dir), Path(out or results_dir)
    plot_fig2(data["tasks"], out / "fig2.png")
    plot_fig1(data["fig1"], out / "fig1.png")
    publish(out, "fig2", data)


def _k_axis(ax: Any, ks: list[int]) -> None:
    ax.set(xscale="log", xticks=ks, xticklabels=[str(k) for k in ks], xlabel=FIGURES.k_axis)
    ax.minorticks_off()
    ax.grid(True, alpha=0.3)


def plot_fig2(tasks: list[dict[str, Any]], path: Path) -> None:
    """Per task (:func:`.fig2.task_data`), top: test micro-F1 against k, the softmax baseline as a band; bottom: the
    paired Δ = sparse k − softmax against k, its 95% paired t and Holm-adjusted intervals, and a line at 0."""
    fig, axes = pyplot().subplots(2, len(tasks), figsize=(4.6 * len(tasks) + 3.4, 7.6), squeeze=False)
    text = FIGURES.fig2
    for col, task in enumerate(tasks):
        top, bottom = axes[0][col], axes[1][col]
        sparse = [r for r in task["rows"] if r["kind"] == SPARSE]
        ks, stats = [r["k"] for r in sparse], [mean_ci(r[F1]) for r in sparse]
        top.errorbar(ks, [s[0] for s in stats], yerr=[0 if math.isnan(s[1]) else s[1] for s in stats], marker="o", capsize=3,
                     label=text["sparse"])
        if task["baseline"]:  # the softmax arm's mean and 95% half-width
            m, h = task["baseline"][0], np.nan_to_num(task["baseline"][1])
            top.axhline(m, color="gray", label=text["softmax"])
            top.axhspan(m - h, m + h, color="gray", alpha=0.25)
        _k_axis(top, ks)
        top.set(ylabel=text["ylabel"], title=task["name"])
        if paired := task["paired"]:
            pk, delta = [r["k"] for r in paired], np.array([r["delta"] for r in paired])
            holm = np.array([error_bar(r["holm"], r["delta"]) for r in paired]).T
            raw = np.array([error_bar(r["raw"], r["delta"]) for r in paired]).T
            bottom.errorbar(pk, delta, yerr=holm, fmt="none", ecolor="C1", elinewidth=6, alpha=0.35, label=text["holm"])
            bottom.errorbar(pk, delta, yerr=raw, marker="o", color="C0", capsize=3, label=text["raw"])
            bottom.axhline(0.0, color="black", linewidth=1.0, label=text["zero"])
            _k_axis(bottom, pk)
        bottom.set_ylabel(text["delta"])
        bottom.set_title(text["paired"], fontsize=10)
    for ax in axes[:, -1]:  # one legend per row, right of the last column, where it hides no error bar
        if ax.lines or ax.collections:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    save_figure(fig, path)


