"""Why the sampled-softmax LM with the uniform sampler ends near perplexity = V: results/sampled_uniform.md.

Built from the measurement ``python -m softmax_zoo.studies.sampled_uniform`` writes (:data:`MEASUREMENT`, under
results_dir): the loss and full-softmax perplexity over training, the push on each bucket of words by frequency, and the
verdict's figures, read off the probes here (:func:`summarise`). The page is a diagnostic that lm1b's flags link to; it
has no claims rows. Words: templates/sampled_uniform.md.j2.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from ..run_record import below
from ._pages import page_command, publish, shown_path

PAGE = "sampled_uniform"
HEADLINES: dict[str, str] = {}  # no experiment of README.md's status table: the page explains the lm1b uniform arm's flag
MEASUREMENT = Path("diagnostics") / "sampled_uniform_check.json"  # under results_dir
STUDY = "softmax_zoo.studies.sampled_uniform"
# The run the study retrains, and its settings where the cpu scale now differs (its vocabulary of every training word,
# no dropout); the study evaluates its last weights and saves nothing, so no checkpoint is chosen by validation.
COMMITTED_RECORD = Path("results/runs/lm1b/lm1b_sampled_uniform_cpu_seed0.json")  # in the repository
RECORD_SETTINGS = ("task.min_count=1", "model.dropout=0.0", "train.eval_steps=0")


def rerun_command(command: str) -> str:
    """``command`` (as the measurement recorded it) under the study's module name: the same arguments, as one runs them now."""
    return shlex.join(["python", "-m", STUDY, *shlex.split(command)[3:]])


def summarise(results_dir: str | Path = "results") -> dict[str, Any]:
    """The page's data: the measurement as written, the probes the page picks out, the figures its verdict reads."""
    path = Path(results_dir) / MEASUREMENT
    if not path.is_file():
        raise FileNotFoundError(f"no {shown_path(path)}; run `python -m {STUDY}` first")
    measured = json.loads(path.read_text(encoding="utf-8"))
    study = below(measured, ("config",))  # the study's own settings (steps, m, V, tokens per step), not a run record's config
    points = measured["points"]
    last = points[-1]
    buckets = list(last["buckets"].items())
    return {
        "m": measured, "study": study, "points": points, "command": rerun_command(measured["command"]), "module": STUDY,
        "json": shown_path(path), "page_command": page_command(PAGE, results_dir),
        "record": COMMITTED_RECORD.stem, "settings": " ".join(RECORD_SETTINGS), "rec": measured.get("committed_record"),
        "probed": [points[0], points[len(points) // 2], last],  # the bucket table's probes: first, middle, last
        "last": last, "best": min(points, key=lambda p: p["full_nll"]), "low": min(points, key=lambda p: p["sampled_loss"]),
        "top": buckets[0], "rare": buckets[-1],  # (word-id range, bucket) of the most frequent and the rarest words
        "eval_gap": max(p["eval_vs_full_softmax_max_abs"] for p in points),
        "draws_per_word": study["batch_tokens"] * study["num_samples"] / study["vocab_size"],
    }


def build(results_dir: str | Path = "results", out: str | Path | None = None) -> None:
    """Write sampled_uniform.md into ``out`` (default ``results_dir``)."""
    publish(Path(out or results_dir), PAGE, summarise(results_dir))
