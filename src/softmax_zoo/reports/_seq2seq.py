"""The UniLM pages of Sun et al. 2021, each a :class:`Table`: Δ = sparse − softmax of each metric at each beam,
compared paired by test item within each seed, and verdicts on the paper's deltas.

A pair is the softmax and the sparse-softmax run (the Hydra choice of ``loss``) of one seed and setting: the scale, or
"<scale>+init" for runs started from their seed's finished softmax run (``init_from``), whose LM head is trained as the
paper's pre-trained UniLM's is; those head the page, and a fresh LM head (``task_info.fresh_weights``) is the cold-start
ablation. A seed with one arm is left out of the deltas and named. Words: templates/_seq2seq.md.j2, each table's template,
and for the settings beside the paper's (:func:`seq2seq_settings`) templates/_seq2seq_settings.j2.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..metrics import bleu_from_stats
from ..records import read_predictions, runs_dir
from ..run_record import RunRecord, load_runs
from ._compare import Comparison, Design, compare, per_seed
from ._forms import ClaimForm, ClaimKind
from ._pages import commits, dirty_note, page_command, publish, shown_path, template_words
from ._regime import DEGENERATE, failures, gated
from ._settings import (
    SPARSE,
    Records,
    Setting,
    pretrained_name,
    seeds,
    setting,
    settings_data,
    shown,
    sparse_ks,
    values,
)
from ._verdicts import MIN_SEEDS, VerdictKind, not_tested

SOFTMAX = "softmax"  # the softmax arm as configs/loss/ names it (SPARSE: the sparse-softmax arm)
ARMS = (SOFTMAX, SPARSE)  # the arms, as pages key them; templates word them (the ``label`` filter)
BOOTSTRAP_SAMPLES = 2000
TOPK = ("target_in_topk", "median_target_rank", "logits_near_kth")  # the test metrics of softmax_zoo.diagnostics.topk
CHUNK = 200  # corpus-BLEU bootstrap resamples per matrix product
Record = RunRecord
Row = dict[str, Any]  # a prediction row
Pair = tuple[Record, Record]  # (softmax record, sparse-softmax record)
Outputs = dict[int, tuple[list[Row], list[Row]]]  # seed -> (softmax prediction rows, sparse ones), row i the same test item


def paired_runs(records: list[Record]) -> tuple[dict[str, list[Pair]], dict[str, dict[int, str]]]:
    """(setting -> the pairs of the seeds both losses ran, by seed; setting -> {seed: its one arm} of the others),
    "+init" settings before their cold-start ones. A "+init" seed starts from its own seed's softmax run."""
    by_setting: dict[str, dict[tuple[str, int], Record]] = {}
    for r in sorted(records, key=lambda r: (r.setting("scale", "name"), r.setting("init_from") is None)):
        scale = r.setting("scale", "name")
        by_setting.setdefault(scale if r.setting("init_from") is None else f"{scale}+init", {})[r.choice("loss"), r.seed] = r
    pairs, lone = {}, {}
    for name, by in by_setting.items():
        soft, sparse = ({s for loss, s in by if loss == arm} for arm in (SOFTMAX, SPARSE))
        if both := sorted(soft & sparse):
            pairs[name] = [(by[SOFTMAX, s], by[SPARSE, s]) for s in both]
        if one := {s: ARMS[0] for s in soft - sparse} | {s: ARMS[1] for s in sparse - soft}:
            lone[name] = dict(sorted(one.items()))
    return pairs, lone


def outputs(pairs: list[Pair], runs: Path) -> Outputs:
    """Each seed's test prediction rows of both arms, checked to be the same examples in the same order."""
    out = {}
    for soft, sparse in pairs:
        a, b = read_predictions(soft, runs), read_predictions(sparse, runs)
        if [r["reference"] for r in a] != [r["reference"] for r in b]:
            raise ValueError(f"{soft.run_name} and {sparse.run_name} were not decoded on the same examples")
        out[soft.seed] = (a, b)
    return out


def corpus_bootstrap(stats_a: Any, stats_b: Any, order: int, num_samples: int, seed: int = 0) -> dict[str, float]:
    """Paired bootstrap of corpus BLEU-``order`` (b − a) from (examples, 2 + 2 * max_order) BLEU counts, as paired_bootstrap's."""
    stats_a, stats_b = np.asarray(stats_a, dtype=np.int64), np.asarray(stats_b, dtype=np.int64)
    n, rng, deltas = stats_a.shape[0], np.random.default_rng(seed), []
    for start in range(0, num_samples, CHUNK):
        w = rng.multinomial(n, np.full(n, 1.0 / n), size=min(CHUNK, num_samples - start))  # (m, E) resample counts
        sa, sb = w @ stats_a, w @ stats_b  # (m, 2 + 2 * max_order) summed counts
        deltas += [bleu_from_stats(y[None], order) - bleu_from_stats(x[None], order) for x, y in zip(sa, sb)]
    boot = np.asarray(deltas)
    return {"delta": bleu_from_stats(stats_b, order) - bleu_from_stats(stats_a, order), "low": float(np.quantile(boot, 0.025)),
            "high": float(np.quantile(boot, 0.975)), "p_le_0": float((boot <= 0).mean())}


def arm_means(pairs: list[Pair], metric: str) -> dict[str, float]:
    """Per arm, the mean over seeds of ``metric``."""
    return {arm: float(np.mean(list(per_seed([p[i] for p in pairs], metric).values()))) for i, arm in enumerate(ARMS)}


def per_beam(pairs: list[Pair], metric: str, beams: list[int]) -> dict[str, list[float]]:
    """Per arm, the mean over seeds of ``test/<metric>_beam<b>`` at each of ``beams``."""
    means = [arm_means(pairs, f"test/{metric}_beam{b}") for b in beams]
    return {arm: [m[arm] for m in means] for arm in ARMS}


def arm_rows(by_seed: Outputs) -> dict[str, list[Row]]:
    """Per arm, the prediction rows of every seed, one seed after another."""
    return {arm: [r for a_b in by_seed.values() for r in a_b[i]] for i, arm in enumerate(ARMS)}


def regime(pairs: list[Pair]) -> dict[str, Any] | None:
    """Per arm, the means over seeds of where the test targets sit among its logits (:data:`TOPK`), and where the runs
    start (None: a random init); None for records without them."""
    if not all("test/target_in_topk" in r.metrics for p in pairs for r in p):
        return None
    start = pairs[0][0].setting("init_from") or pairs[0][0].setting("model", "checkpoint")
    return {"k": int(pairs[0][1].metrics["test/diagnostics_k"]), "start": start,
            **{m: list(arm_means(pairs, f"test/{m}").values()) for m in TOPK}}


def stutters(text: str, run: int = 3) -> bool:
    """Whether some word appears ``run`` or more times in a row ("the the the"): a degenerate output. A word holds a
    letter: the digit masks and punctuation a tokenizer splits off ("# # #" for a 3-digit number) are not repeats."""
    return re.search(rf"(?<!\S)(\S*[^\W\d_]\S*)(?:\s+\1(?!\S)){{{run - 1}}}", text) is not None


def output_shares(rows: dict[str, list[Row]], beams: list[int]) -> dict[str, Any]:
    """Per arm and beam, the shares of test outputs that are degenerate (:func:`stutters`) and, where the prediction rows
    say how the search constraints shaped them, altered and ended by a constraint (else None), and blocked: a constraint
    forbade the full distribution's best token at some step, counted alike in both arms (None for rows without it)."""
    def shares(test: Callable[[Row], bool]) -> dict[str, list[float]]:
        return {arm: [float(np.mean([test(r[f"beam{b}"]) for r in recs])) for b in beams] for arm, recs in rows.items()}

    constrained = all("constraint_steps" in r[f"beam{b}"] for recs in rows.values() for r in recs for b in beams)
    return {"degenerate": shares(lambda o: stutters(o["prediction"])),
            "altered": shares(lambda o: o["constraint_steps"] > 0) if constrained else None,
            "ended": shares(lambda o: bool(o["ended_by_constraint"])) if constrained else None,
            "blocked": shares(lambda o: o["blocked_steps"] > 0) if all(
                "blocked_steps" in r[f"beam{b}"] for recs in rows.values() for r in recs for b in beams) else None}


# .paper: task -> setting -> Sun et al. 2021's §4, as its text states it; .why*: why ours; .ours: ours in words
SETTINGS_WORDS = template_words("_seq2seq_settings.j2", MIN_SEEDS=MIN_SEEDS)
def task_info(*keys: str) -> Callable[[Record], Any]:
    """A reader of what the record's task reported under ``keys`` (:meth:`RunRecord.info`)."""
    return lambda r: r.info(*keys)


SETTING_SHOWN = {  # the values shown as the records hold them (:func:`._settings.shown`)
    "batch size": setting("train", "batch_size"), "masking probability": setting("model", "mask_prob"),
    "label smoothing": setting("loss", "label_smoothing"), "epochs": setting("train", "epochs"),
    "steps": lambda r: r.timing.get("global_steps"), "train": task_info("sizes", "train"), "test": task_info("sizes", "test"),
    "source_len": setting("task", "max_source_len"), "target_len": setting("task", "max_target_len"),
}
SETTING_FIRST = {  # the values read from a column's first record
    "checkpoint": setting("model", "checkpoint"), "model": setting("model", "name"), "fresh": task_info("fresh_weights"),
    "train_size": setting("task", "train_size"), "subset": setting("task", "train_subset"), "eval_size": setting("task", "eval_size"),
    "data_seed": setting("task", "data_seed"), "lr": setting("train", "lr"), "warmup": setting("train", "warmup_ratio"),
    "schedule": setting("train", "lr_scheduler"), "cut_train": task_info("truncation", "train"),
    "cut_test": task_info("truncation", "test"),
}


def setting_facts(records: Records) -> dict[str, Any]:
    """What the template's ``ours`` words of one column's records (both arms of a setting, or the runs of one start)."""
    first = records[0] if records else RunRecord()
    sparse = [r for r in records if r.choices.get("loss") == SPARSE]
    return {name: shown(records, read) for name, read in SETTING_SHOWN.items()} | {
        **{name: read(first) for name, read in SETTING_FIRST.items()},
        "sparse-softmax k": sparse_ks(records), "seeds": seeds(records), "any": bool(records),
        "beams": shown(records, setting("task", "decode", "beams"), lambda b: " and ".join(map(str, b))),
        "pretrained": pretrained_name(first.setting("model", "checkpoint")), "init": bool(values(records, setting("init_from"))),
        "smoothing_over": values(sparse, setting("loss", "smoothing_over")), "topk": values(sparse, setting("task", "decode", "topk")),
    }


def seq2seq_settings(task: str, columns: dict[str, Records], page: str | None = None) -> dict[str, Any]:
    """The settings part of ``task`` ("gigaword" or "squad_qg") for ``columns`` (name -> records); ``page`` names a
    page whose own reasons replace some of the tables' (the template's ``why_of_page``: "sparse_regime")."""
    text = SETTINGS_WORDS
    if task not in text.paper or (page is not None and page not in text.why_of_page):
        raise ValueError(f"no settings of task {task!r} for page {page!r}")
    why = text.why | text.why_of_task[task] | text.why_of_page.get(page, {})
    rows = [Setting(name, text.paper[task].get(name), lambda rs, name=name: str(text.ours(name, setting_facts(rs), task)),
                    why[name]) for name in text.settings]
    return settings_data(rows, columns, text.source_of_page[page] if page else text.source[task])


@dataclass(frozen=True)
class Table:
    """One UniLM page: Δ = sparse − softmax of each of its metrics at each beam its records decode."""

    experiment: str  # runs/<experiment>: the page's name and its make target's (reproduce-<experiment>)
    task: str  # whose settings the page sets beside the paper's (:func:`seq2seq_settings`)
    metrics: tuple[str, ...]
    paper: dict[int, dict[str, float]]  # beam -> metric -> the paper's Δ
    unilm: dict[str, float]  # metric -> UniLM's published score at beam unilm_beam (the page's column beside ours)
    unilm_beam: int
    claim_key: str  # a claims row's id after "<experiment>_<setting>_", formatted with its beam and metric
    claim: str  # the paper's words that the rows' Δ test
    # a folder below results_dir holding a re-run of some seeds (<recount>/runs/<experiment>) whose records count the
    # search constraints alike in both arms, for settings whose own records do not (None: no such re-run)
    recount: str | None = None

    def row(self, pairs: list[Pair], rows: Outputs, beam: int, metric: str) -> dict[str, Any]:
        """One table row: each arm's metric per seed, Δ over seeds paired by test item within each seed (BLEU-n as corpus
        BLEU recomputed on each resample, another metric as the mean of its per-item scores), the paper's Δ, the verdict."""
        order = int(metric[4:]) if metric.startswith("bleu") else None
        items = {seed: tuple([r[f"beam{beam}"]["bleu_stats" if order else metric] for r in arm] for arm in arms)
                 for seed, arms in rows.items()}
        corpus = partial(corpus_bootstrap, order=order, num_samples=BOOTSTRAP_SAMPLES) if order else None
        c = compare(Comparison(*ARMS, f"{metric} at beam {beam}", Design.PAIRED_BY_ITEM), items=items, bootstrap=corpus,
                    num_samples=BOOTSTRAP_SAMPLES)
        paper, key = self.paper.get(beam, {}).get(metric), f"test/{metric}_beam{beam}"
        return {"beam": beam, "metric": metric, "unilm": self.unilm.get(metric, "") if beam == self.unilm_beam else "",
                "a": list(per_seed([p[0] for p in pairs], key).values()), "b": list(per_seed([p[1] for p in pairs], key).values()),
                "delta": c.delta, "paper": paper, "verdict": c.verdict(paper)}

    def section(self, scale: str, pairs: list[Pair], runs: Path, lone: dict[int, str],
                again: tuple[list[Pair], Path] | None = None) -> dict[str, Any]:
        """One setting's section: who ran, from where, its rows and what the template says of them; ``again``: this
        setting's pairs in the :attr:`recount` folder and that folder's runs (None: none)."""
        by_seed = outputs(pairs, runs)
        beams = sorted(int(b) for b in pairs[0][0].setting("task", "decode", "beams"))
        shares = output_shares(arm_rows(by_seed), beams)
        rows = [self.row(pairs, by_seed, beam, metric) for beam in beams for metric in self.metrics]
        for r in rows:  # the regime gate: more than half of an arm's outputs at the row's beam degenerate
            degenerate = {arm: by_beam[beams.index(r["beam"])] for arm, by_beam in shares["degenerate"].items()}
            r["verdict"] = r["verdict"] and gated(r["verdict"], failures(DEGENERATE, degenerate))
        verdicts = [r["verdict"] for r in rows if r["verdict"] is not None]
        spread = [r["delta"].sd > r["delta"].item_se for r in rows if r["paper"] is not None and r["delta"].n > 1]
        return {
            "scale": scale, "seeds": list(by_seed), "lone": lone, "record": pairs[0][0],
            "n_test": len(next(iter(by_seed.values()))[0]), "beams": beams, "rows": rows, "regime": regime(pairs),
            "inits": sorted({str(i) for p in pairs for r in p if (i := r.setting("init_from"))}),  # their checkpoints
            "cold_start": all(bool(r.info("fresh_weights")) and not r.setting("init_from") for p in pairs for r in p),
            "throughput": per_beam(pairs, "examples_per_s", beams), "outputs": shares,
            "recount": self.recounted(*again, pairs, beams) if again and shares["blocked"] is None else None,
            "counts": {kind.value: n for kind in VerdictKind if (n := sum(v.kind is kind for v in verdicts))},
            "n_verdicts": len(verdicts), "sd_above_item_se": sum(spread), "n_spread": len(spread),
            "dirty": dirty_note([r for p in pairs for r in p]), "gap": self.gap(rows),
        }

    def gap(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """How far this setting is from the paper's: our softmax arm's mean on UniLM's first published metric at UniLM's
        beam beside UniLM's score (None where this setting did not decode that beam)."""
        metric = next(iter(self.unilm))
        row = next((r for r in rows if r["beam"] == self.unilm_beam and r["metric"] == metric), None)
        return row and {"metric": metric, "beam": self.unilm_beam, "ours": sum(row["a"]) / len(row["a"]),
                        "unilm": self.unilm[metric]}

    def recounted(self, pairs: list[Pair], runs: Path, own: list[Pair], beams: list[int]) -> dict[str, Any]:
        """A re-run of some seeds (``pairs``, under ``runs``) whose records count the search constraints alike in both arms:
        its seeds, commits and commands, its output shares (:func:`output_shares`), and each arm's mean of UniLM's first
        metric per beam beside the page's own pairs (``own``) of the same seeds (None where it has none)."""
        by_seed, metric = outputs(pairs, runs), next(iter(self.unilm))
        own = [p for p in own if p[0].seed in by_seed]
        return {"seeds": list(by_seed), "folder": shown_path(runs / self.experiment), "metric": metric,
                "commits": commits([r for p in pairs for r in p]), "commands": [r.command for p in pairs for r in p if r.command],
                "outputs": output_shares(arm_rows(by_seed), beams), "scores": per_beam(pairs, metric, beams),
                "own_scores": per_beam(own, metric, beams) if own else None}

    def form(self, row: dict[str, Any]) -> ClaimForm:
        """A row's claim, the paper's table: sparse-softmax above softmax on the row's metric at its beam (superiority)."""
        return ClaimForm(ClaimKind.SUPERIORITY, f"{self.claim} ({row['metric']}, beam {row['beam']})",
                         measure=f"{row['metric']} at beam {row['beam']}, sparse-softmax − softmax", better="higher")

    def summarise(self, results_dir: str | Path = "results") -> dict[str, Any]:
        """The page's data: per setting its section; a claims row per row with a paper Δ, also untested at scale=paper without its pairs."""
        runs = runs_dir(results_dir)
        records = load_runs(runs, self.experiment)
        by_setting, lone = paired_runs(records)
        if not by_setting:
            raise FileNotFoundError(f"no paired softmax/sparse-softmax records under {runs / self.experiment}; "
                                    f"run `make reproduce-{self.experiment}`")
        again_runs = runs_dir(Path(results_dir) / self.recount) if self.recount else None
        again = paired_runs(load_runs(again_runs, self.experiment))[0] if again_runs else {}
        sections = [self.section(scale, pairs, runs, lone.get(scale, {}), (again[scale], again_runs) if scale in again else None)
                    for scale, pairs in by_setting.items()]
        claims = [r | {"key": (key := self.claim_key.format(**r)), "id": f"{self.experiment}_{s['scale']}_{key}", "section": s,
                       "source": self.experiment, "untested": False, "form": self.form(r)}
                  for s in sections for r in s["rows"] if r["paper"] is not None]
        untested = {c["key"]: c | {"id": f"{self.experiment}_paper_{c['key']}", "verdict": not_tested("needs scale=paper"),
                                   "untested": True} for c in claims if "paper" not in by_setting}
        columns = {f"scale={setting}": [r for pair in pairs for r in pair] for setting, pairs in by_setting.items()}
        return {"command": page_command(self.experiment, results_dir), "folder": shown_path(runs / self.experiment),
                "commits": commits(records), "bootstrap_samples": BOOTSTRAP_SAMPLES, "sections": sections,
                "settings": seq2seq_settings(self.task, columns), "claims": claims + list(untested.values()),
                "unilm": self.unilm, "unilm_beam": self.unilm_beam}

    def build(self, results_dir: str | Path = "results", out: str | Path | None = None) -> None:
        """Write ``<out>/<experiment>.md`` and its claims rows (``out`` defaults to ``results_dir``)."""
        publish(out or results_dir, self.experiment, self.summarise(results_dir))
