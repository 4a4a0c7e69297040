"""README.md's results status table between :data:`BEGIN` and :data:`END`: per committed experiment its runs, scales,
seeds and the verdict of its headline claim (:data:`HEADLINES`, from the claims ledger), with a link to its page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..records import REPO_ROOT, load_records, runs_dir, write_text
from ._pages import CLAIMS_FILE, COMMAND, read_claims, render
from ._settings import values

BEGIN = f"<!-- results status: made by `{COMMAND} readme` from results/; do not edit by hand -->"
END = "<!-- end of results status -->"
README = REPO_ROOT / "README.md"
# experiment (a folder of results/runs) -> (its page, the claims-ledger row that heads it)
HEADLINES = {
    "fig2_clinc_oos": ("fig2", "fig2-robust-k-clinc_oos"),
    "fig2_finetune_clinc_oos": ("fig2", "fig2-finetune-robust-k-clinc_oos"),
    "fig2_iflytek": ("fig2", "fig1-convergence-iflytek"),
    "fig2_wos": ("fig2", "fig2-robust-k-wos"),
    "table5": ("table5", "table5_cpu+init_beam1_rouge1"),
    "table3": ("table3", "table3_cpu+init_bleu4"),
    "sparse_regime": ("sparse_regime", "sparse-regime-trend-k20"),
    "lm1b": ("lm1b", "lm1b-adaptive-speed-ppl"),
    "kernel_bias": ("kernel_bias", "kernel-bias-10-100x"),
    "kernel_bias_paper": ("kernel_bias", "kernel-bias-10-100x-paper-like"),
    "stable": ("stable", "stable-collapse"),
    "stable_kd_ptb": ("stable", "stable-kd-ptb"),
}


def first_clause(text: str) -> str:
    """``text`` up to its first "; " outside parentheses (a verdict cell's decision, without its caveats)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith("; ", i):
            return text[:i]
    return text


def summarise(results_dir: str | Path = "results") -> list[dict[str, Any]]:
    """One row per experiment of :data:`HEADLINES` that has records: its runs, scales, seeds, headline claim and page."""
    runs, ledger = runs_dir(results_dir), read_claims(Path(results_dir) / CLAIMS_FILE)
    rows = []
    for experiment, (page, claim_id) in HEADLINES.items():
        if records := load_records(runs, experiment):
            claim = ledger.get(claim_id, {})
            rows.append({"experiment": experiment, "page": page, "runs": len(records), "claim_id": claim_id,
                         "scales": sorted(map(str, values(records, "config.scale.name"))), "seeds": sorted(values(records, "seed")),
                         "claim": claim.get("claim", ""), "verdict": first_clause(claim["verdict"]) if "verdict" in claim else None})
    return rows


def status_block(results_dir: str | Path = "results") -> str:
    """The README's block rebuilt from ``results_dir``, markers included."""
    return f"{BEGIN}\n{render('readme_status.md.j2', rows=summarise(results_dir))}{END}"


def with_status(text: str, block: str) -> str:
    """``text`` (the README) with its block between the markers replaced by ``block``."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"README.md has no results status block ({BEGIN!r} ... {END!r})")
    return text[:start] + block + text[end + len(END):]


def write_readme(results_dir: str | Path = "results", readme: Path = README) -> Path:
    """Rewrite the README's status block from ``results_dir``."""
    return write_text(readme, with_status(readme.read_text(encoding="utf-8"), status_block(results_dir)))


def readme_differs(results_dir: str | Path = "results", readme: Path = README) -> bool:
    """Whether the README's status block differs from one rebuilt from ``results_dir``."""
    text = readme.read_text(encoding="utf-8")
    return with_status(text, status_block(results_dir)) != text
