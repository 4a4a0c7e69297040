"""Blanc & Rendle 2018's bias study on Penn Treebank: results/kernel_bias.md, .png and claims.

Two settings, each a set of records: ``experiment_name=kernel_bias`` (``make reproduce-kernel-bias``:
Adagrad, an output bias, 400 steps) and ``kernel_bias_paper`` (``make reproduce-kernel-bias-paper``:
no output bias, plain SGD, 1,200 steps with validation curves). In each, the same LSTM is trained
for the same steps and seeds with the sampled head for each sampler x m, and once with the full
softmax. The quantity compared is the final *full-softmax* validation loss (nats per
token; evaluation of a sampled head is the full softmax of its weights) and its gap to the
full-softmax run. A biased sampler trains towards a different optimum, so its gap shrinks only as m
grows; the paper's claim is that the quadratic kernel reaches a given gap with 10-100x fewer
samples than uniform sampling, and that the softmax sampler (the oracle) is unbiased.

Each setting's section, when results/diagnostics/sampler_bias/<experiment>/ holds diagnostics of
its full-softmax run's checkpoints (``python -m softmax_zoo.studies.sampler_bias``, ``make sampler-diagnostic``),
shows per checkpoint how far each sampler's q is from the model's p and the bias of the sampled
loss and output-layer gradient, measured directly at fixed weights.

Build: ``python -m softmax_zoo.reports kernel_bias``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..markdown import markdown_table
from ..records import get, load_records, runs_dir
from ._kernel_bias_claims import EXPERIMENT, collect, fewer_samples_verdict, log_time_claim, review_claims, sampler_name
from ._kernel_bias_review import FLAT_GAIN, design_rows, review_rows
from ._kernel_bias_settings import settings_section
from ._pages import commits, line_plot, page_command, pyplot, shown_path, write_page
from ._stats import format_mean_ci, mean, seeds_label
from ._verdicts import NON_SEED_RULES, VERDICT_RULES, Verdict, no_interval_verdict, not_tested

SETTINGS = {  # experiment -> (section title, how its records are made, what the setting is)
    EXPERIMENT: ("Our setting: Adagrad, an output bias, 400 steps", "make reproduce-kernel-bias",
                 "The optimiser of our language-model family (Grave et al.'s Adagrad) with an output bias, which the "
                 "kernel ignores."),
    "kernel_bias_paper": ("The paper's setting: no output bias, plain SGD, 1,200 steps", "make reproduce-kernel-bias-paper",
                          "The paper's output layer is the dot product h·w (no bias), so the kernel sees the logits being "
                          "trained; plain SGD has one rate for every coordinate. The paper text we hold gives no optimiser, "
                          "rate or length: lr 20 (best of 1, 10, 20 over 300 full-softmax steps) and 1,200 steps are ours "
                          "(configs/experiment/_kernel_bias_paper_setting.yaml)."),
}
SAMPLERS = ("uniform", "unigram", "quadratic", "quadratic_centred", "softmax")
KERNELS = {"quadratic": "the quadratic kernel", "quadratic_centred": "the centred kernel (ours)"}
FEWER_SAMPLES = (10.0, 100.0)  # the paper: one to two orders of magnitude fewer samples than uniform
DIAGNOSTICS = Path("diagnostics") / "sampler_bias"  # under results_dir: the diagnostic's JSON files




def samples_needed(curve: dict[int, float], gap: float) -> int | None:
    """Smallest m whose gap is <= ``gap`` (None if none reaches it)."""
    reached = [m for m, g in sorted(curve.items()) if g <= gap]
    return reached[0] if reached else None


def fewer_samples(gaps: dict[str, dict[int, float]], kernel: str = "quadratic") -> list[tuple[int, float, int | None]]:
    """For each uniform point (m_u, gap_u): the smallest ``kernel`` m_k reaching gap_u; (m_u, gap_u, m_k)."""
    uniform, quadratic = gaps.get("uniform", {}), gaps.get(kernel, {})
    return [(m, g, samples_needed(quadratic, g)) for m, g in sorted(uniform.items())]


def table(full: list[float], grid: dict[str, dict[int, list[float]]]) -> str:
    ms = sorted({m for per_m in grid.values() for m in per_m})
    base = mean(full)
    rows = []
    for name in [s for s in SAMPLERS if s in grid] + sorted(set(grid) - set(SAMPLERS)):
        cells = []
        for m in ms:
            if m in grid[name]:
                v = mean(grid[name][m])
                cells.append(f"{v:.3f} ({v - base:+.3f}; n={len(grid[name][m])})")
            else:
                cells.append("-")
        rows.append([f"{name} (ours)" if name == "quadratic_centred" else name, *cells])
    rows.append(["full softmax", *[format_mean_ci(full, digits=3)] + [""] * (len(ms) - 1)])
    return markdown_table(["sampler", *[f"m={m}" for m in ms]], rows)


def plot(full: list[float], grid: dict[str, dict[int, list[float]]], path: Path, title: str) -> None:
    with line_plot(path, xlabel="negatives per row m (log scale)", ylabel="final validation loss, full softmax (nats/token)",
                   title=f"Penn Treebank: bias of sampled softmax vs m\n{title}") as ax:
        for name in [s for s in SAMPLERS if s in grid]:
            ms = sorted(grid[name])
            ax.plot(ms, [mean(grid[name][m]) for m in ms], marker="o", label=f"sampled, {name}")
        ax.axhline(mean(full), color="black", linestyle="--", label="full softmax")
        ax.set_xscale("log", base=2)


def ratio_verdict(best: float, seeds: list[int]) -> Verdict:
    """The verdict on the 10-100x claim from the largest m ratio of the seeds' mean gaps, in the words of :mod:`._verdicts`.

    The m ratio has no interval over seeds, so it decides nothing: one seed is a single run, two are
    too few, and more leave it inconclusive, with the ratio against the paper's 10x in each text.
    """
    reach = f"largest ratio {best:.1f}x, {'at or above' if best >= FEWER_SAMPLES[0] else 'below'} the paper's {FEWER_SAMPLES[0]:g}x"
    return no_interval_verdict(seeds, reach, single="; one run per arm decides nothing",
                               many=" on the seeds' mean gaps, which give no interval over seeds")


def finding(full: list[float], grid: dict[str, dict[int, list[float]]], kernel: str, records: list[dict]) -> tuple[str, Verdict, str]:
    """(an honest sentence on the 10-100x claim for ``kernel``, the verdict, a short "ours" cell) from the measured gaps.

    For each uniform point (m_u, gap_u) the ratio m_u / m_k, where m_k is the smallest ``kernel`` m
    reaching gap_u; the sentence names where it fails. The verdict is seed-aware where ``records`` have
    :data:`~._verdicts.MIN_SEEDS` seeds in a kernel cell and in a uniform cell with 10x its samples
    (:func:`~._kernel_bias_claims.fewer_samples_verdict`), else :func:`ratio_verdict` on the largest ratio.
    """
    seeds = sorted({r["seed"] for r in records if sampler_name(r) == kernel})  # the seeds the kernel's cells have
    base = mean(full)
    gaps = {name: {m: mean(v) - base for m, v in per_m.items()} for name, per_m in grid.items()}
    pairs = fewer_samples(gaps, kernel)
    if not pairs or kernel not in gaps:
        return (f"The uniform or {kernel} runs are missing, so the claim is not tested.",
                not_tested(f"the uniform or {kernel} runs are missing ({seeds_label(seeds)})"), "-")
    ratios = {m_u: m_u / m_q for m_u, _, m_q in pairs if m_q is not None}
    m_best = max(ratios, key=ratios.get, default=None)
    best = ratios.get(m_best, 0.0)
    unreached = [m_u for m_u, _, m_q in pairs if m_q is None]
    verdict = fewer_samples_verdict(records, kernel, FEWER_SAMPLES[0]) or ratio_verdict(best, seeds)
    at_most = ", ".join(f"uniform m={m_u}: {ratios[m_u]:.1f}x" for m_u in sorted(ratios))
    sentence = (
        f"Samples {kernel} needs to match uniform's gap, as a ratio m_uniform / m_{kernel}: {at_most or 'none'}"
        + (f"; uniform's gap at m={', '.join(map(str, unreached))} is not reached by {kernel} at any m we ran" if unreached else "")
        + f". The largest ratio is {best:.1f}x against the paper's 10-100x for {KERNELS.get(kernel, kernel)}: {verdict}."
    )
    others = [s for s in gaps if s not in ("softmax", "quadratic", "quadratic_centred")]
    winners = {m: min((s for s in gaps if s not in ("softmax", "quadratic_centred") and m in gaps[s]), key=lambda s: gaps[s][m])
               for m in gaps.get("quadratic", {})}
    for rival in others if kernel == "quadratic" else ():
        beaten = [m for m in sorted(winners) if winners[m] == rival]
        if beaten:
            sentence += (
                f" {rival.capitalize()} sampling had a smaller gap than the quadratic kernel at m={', '.join(map(str, beaten))}"
                f" ({len(beaten)} of {len(winners)} points); the paper finds the kernel better than {rival} too."
            )
    short = (f"largest m_uniform/m_{kernel} at equal gap: {best:.1f}x" + (f" (uniform m={m_best})" if m_best else "")
             + f", {seeds_label(seeds)}")
    return sentence, verdict, short


def curves_plot(records: list[dict[str, Any]], path: Path, title: str) -> bool:
    """Validation perplexity on the curve's validation prefix against step, one line per run; False if no run has a curve.

    The full softmax is drawn last and thickest, so the sampled runs that reach it do not hide it.
    """
    runs = []
    for r in records:
        curve = [(h["step"], h["val/curve_perplexity"]) for h in r.get("history", []) if "val/curve_perplexity" in h]
        if curve:
            name = sampler_name(r)
            runs.append((SAMPLERS.index(name) if name in SAMPLERS else -1, get(r, "config.loss.num_samples") or 0, name, curve))
    if not runs:
        return False
    styles = {"uniform": ":", "unigram": "-.", "quadratic": "--", "quadratic_centred": "-", "softmax": "-"}
    sizes = sorted({h["val/curve_tokens"] for r in records for h in r.get("history", []) if "val/curve_tokens" in h})
    on = f"first {sizes[0]:,} validation tokens" if len(sizes) == 1 else "a validation prefix"
    colours = {"uniform": "Blues", "unigram": "Purples", "quadratic": "Oranges", "quadratic_centred": "Greens", "softmax": "Greys"}
    ms = {name: sorted({m for _, m, n, _ in runs if n == name}) for _, _, name, _ in runs}
    cmap = pyplot().get_cmap
    with line_plot(path, xlabel="optimiser step", ylabel=f"validation perplexity\n({on}, log scale)",
                   title=f"Penn Treebank: training curves\n{title}", legend_outside=True) as ax:
        for rank, m, name, curve in sorted(runs, key=lambda x: (x[2] is None, x[0], x[1])):
            xs, ys = zip(*curve[1:] or curve)  # step 0 (the initialisation, ~n classes) would squash the scale
            if name is None:
                ax.plot(xs, ys, color="black", linestyle="--", linewidth=2.2, label="full softmax", zorder=5)
                continue
            shade = 0.45 + 0.5 * ms[name].index(m) / max(1, len(ms[name]) - 1)  # darker = larger m
            ax.plot(xs, ys, linestyle=styles.get(name, "-"), color=cmap(colours.get(name, "Greys"))(shade), marker=".",
                    label=f"{name}{' (ours)' if name == 'quadratic_centred' else ''}, m={m}")
        ax.set_yscale("log")
    return True


def diagnostic_table(result: dict[str, Any]) -> str:
    """One checkpoint's diagnostic: a line of logit sizes, then per sampler KL and the loss and gradient bias per m."""
    s, meta = result["stats"], result["meta"]
    ms = sorted({r["m"] for r in result["rows"]})
    rows = []
    for name in dict.fromkeys(r["sampler"] for r in result["rows"]):
        per_m = {r["m"]: r for r in result["rows"] if r["sampler"] == name}
        first = next(iter(per_m.values()))
        label = f"{name} (ours)" if name == "quadratic_centred" else name
        rows.append([label, f"{max(first['kl'], 0.0):.2f}",  # KL >= 0; a negative value is rounding
                     *[f"{per_m[m]['loss_bias']:+.3f}" if m in per_m else "-" for m in ms],
                     *[f"{per_m[m]['grad_bias']:.2f}" if m in per_m else "-" for m in ms]])
    header = ["sampler", "KL(p̃‖q̃)", *[f"loss bias m={m}" for m in ms], *[f"grad bias m={m}" for m in ms]]
    return (
        f"**Step {meta['step']}** (`{meta['command']}`; {meta['rows']} rows, {meta['draws']} draws per point): "
        f"mean |h·w| {s['mean_abs_hw']:.2f}, row mean of h·w {s['row_mean_hw']:+.2f} (std over rows "
        f"{s['row_mean_hw_std']:.2f}), ‖w̄‖ {s['mean_row_norm']:.2f} against mean ‖w_c − w̄‖ {s['class_part_norm']:.2f}.\n\n"
        + markdown_table(header, rows)
    )


def diagnostic_section(results_dir: str | Path, experiment: str = EXPERIMENT) -> str:
    """The section on the fixed-checkpoint diagnostics of ``experiment``'s full-softmax run ("" if there are none)."""
    folder = Path(results_dir, DIAGNOSTICS, experiment)
    results = sorted((json.loads(f.read_text()) for f in folder.glob("*.json")), key=lambda r: r["meta"]["step"])
    if not results:
        return ""
    trained = {r["meta"].get("trained_by") for r in results} - {None}
    return (
        "\n### Sampler bias at fixed checkpoints of the full-softmax run\n\n"
        f"Diagnostics in results/{(DIAGNOSTICS / experiment).as_posix()}/ (`python -m softmax_zoo.studies.sampler_bias`, "
        "`make sampler-diagnostic CKPT=...`)"
        + (f" of the checkpoints of `{'`, `'.join(sorted(trained))}`" if trained else "")
        + ". Over the first training batches: KL(p̃‖q̃) between the model's distribution and the sampler's, "
        "both without the target; the sampled loss's bias E[L̂] − L (nats/token; negative: the sampled loss "
        "underestimates the full one); the output layer's gradient bias ‖E[ĝ] − g‖ / ‖g‖, corrected for the "
        "draws' noise (the JSON files also hold its noise level, standard errors and the cosine). "
        "quadratic_centred is our extension, not in the paper: the kernel α(h·w − h·w̄)² + 1 on logits "
        "centred on the mean output row's.\n\n"
        + "\n".join(diagnostic_table(r) for r in results)
    )


# Blanc & Rendle 2018 (the review's key findings), in its words.
def setting_section(results_dir: str | Path, out: Path, experiment: str, records: list[dict[str, Any]]) -> tuple[str, list[dict[str, str]]]:
    """One setting's section of the page (its figures written into ``out``) and its claims rows."""
    title, make_target, setting = SETTINGS[experiment]
    full, grid = collect(records)
    if not records:
        raise FileNotFoundError(f"no records in {runs_dir(results_dir) / experiment}; run `{make_target}` first")
    if not full or not grid:
        return (f"\n## {title}\n\nIncomplete: {len(records)} run record(s) in "
                f"{shown_path(runs_dir(results_dir) / experiment)}/, the full-softmax "
                f"run and at least one sampled run are needed (`{make_target}` resumes the study).\n"), []
    plot(full, grid, out / f"{experiment}.png", title)
    has_curves = curves_plot(records, out / f"{experiment}_curves.png", title)
    base = mean(full)
    oracle = grid.get("softmax", {})
    oracle_gap = max((abs(mean(v) - base) for v in oracle.values()), default=math.nan)
    r0 = records[0]
    claim_id = "kernel-bias-10-100x" + ("" if experiment == EXPERIMENT else "-paper-setting")
    where = "" if experiment == EXPERIMENT else " (the paper's setting: no output bias, plain SGD)"
    text = (
        f"\n## {title}\n\n"
        f"{setting} Made by `{make_target}` (records in {shown_path(runs_dir(results_dir) / experiment)}/, from "
        f"{commits(records)}). Penn Treebank (Mikolov), LSTM "
        f"{get(r0, 'config.model.hidden_size')} units, BPTT {get(r0, 'config.task.bptt')}, optimiser "
        f"{get(r0, 'config.train.optim')} (lr {get(r0, 'config.train.lr')}), output bias "
        f"{'yes' if get(r0, 'config.loss.bias') else 'no'}, {r0['timing']['global_steps']} steps for every run, seeds "
        f"{sorted({r['seed'] for r in records})}. Cells: final validation loss of the full softmax of the trained "
        "weights (nats/token), mean over the cell's n seeds, and in brackets its gap to the full-softmax runs' mean "
        "(lower is better, 0 = unbiased).\n\n"
        + table(full, grid) + "\n"
    )
    claims = []
    for kernel in [k for k in KERNELS if k in grid]:
        sentence, verdict, short = finding(full, grid, kernel, records)
        text += sentence + "\n\n"
        claims.append({
            "id": claim_id if kernel == "quadratic" else f"kernel-bias-centred{'' if experiment == EXPERIMENT else '-paper-setting'}",
            "claim": (f"quadratic-kernel sampling reaches a given bias with 10-100x fewer samples than uniform sampling{where}"
                      if kernel == "quadratic" else f"ours, not the paper's: the centred kernel against uniform{where}"),
            "paper": "10-100x fewer samples" if kernel == "quadratic" else "— (extension)",
            "ours": short,
            "verdict": str(verdict),
            "source": EXPERIMENT,
        })
    if oracle:
        text += f"The softmax sampler's largest gap over m is {oracle_gap:.3f} nats.\n\n"
    text += f"![validation loss against m]({experiment}.png)\n"
    if has_curves:
        text += f"\n![validation curves]({experiment}_curves.png)\n"
    return text + diagnostic_section(results_dir, experiment), claims


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write kernel_bias.md, its figures and the kernel-bias rows of claims.md into ``out`` (default ``results_dir``)."""
    runs = runs_dir(results_dir)
    out = Path(out or results_dir)
    sections, claims, reviewed, more = [], [], [], []  # reviewed: rows for the ledger only; more: the review's other findings
    settings = {}
    for experiment in SETTINGS:
        records = load_records(runs, experiment)
        if records or experiment == EXPERIMENT:  # our setting's records are required, the paper setting's optional
            text, rows = setting_section(results_dir, out, experiment, records)
            sections.append(text)
            claims += rows
            reviewed += review_claims(records, experiment)
            more += review_rows(results_dir, records, experiment)
            settings[experiment] = records
    more += design_rows()
    text = (
        "# Kernel-based sampling: bias of sampled softmax against m (Blanc & Rendle 2018)\n\n"
        "The review we hold: the quadratic kernel reaches full-softmax quality with one to two orders of magnitude fewer "
        "samples than uniform sampling, and adaptive distributions beat static ones \"like uniform or global popularity\". "
        f"Table by `{page_command(EXPERIMENT, results_dir)}`. {VERDICT_RULES} {NON_SEED_RULES}\n\n"
        + markdown_table(["claim", "ours", "verdict"], [[c["claim"], c["ours"], c["verdict"]] for c in claims])
        + "\n" + settings_section(settings, "kernel_bias_paper")
        + "".join(sections)
        + more_section(more)
    )
    write_page(out, EXPERIMENT, text, claims + reviewed + more + [log_time_claim(results_dir)])


def more_section(rows: list[dict[str, str]]) -> str:
    """The review's findings that the m table does not decide, with how each is measured."""
    return (
        "\n## More of the review's findings\n\n"
        "Diminishing returns: per sampler, the gain per doubling of m is the drop of its gap to the full softmax from one m "
        "of the grid to the next, divided by log2 of their ratio. The gap is the mean, over the validation curve's logged "
        "steps (step 0 left out), of ln ppl(run) − ln ppl(full softmax) at the same step, so it weighs how fast the run "
        "converges, not only where it ends; a setting without curves uses the final validation loss's gap. A sampler is "
        f"flat from m when every further doubling gains less than {FLAT_GAIN} nats (our threshold, about the exact softmax "
        "sampler's spread over m in our setting). Deviation and bias: at the last diagnosed checkpoint of the full-softmax "
        "run, per m, the Spearman rank correlation over the samplers of KL(p̃‖q̃) against the sampled loss's |bias| and "
        "the gradient bias (the tables above). The design rows say how our code satisfies the review's design statements "
        "and which tests check it.\n\n"
        + markdown_table(["id", "claim", "ours", "verdict"], [[c["id"], c["claim"], c["ours"], c["verdict"]] for c in rows])
    )
