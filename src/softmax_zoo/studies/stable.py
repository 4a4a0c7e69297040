"""Softmax collapse and softmax cancellation, measured in training ("A Fix for Softmax and Cross-Entropy").

Every run trains a small MLP on modular addition, full batch (:mod:`._stable_runs`: data, model,
loss forms "standard", "cast" (standard on float32-cast logits) and "stable", and the regimes
"memorise", "generalise", "saturate"), 3+ seeds, and writes one JSON record into ``out`` in the
training records' schema (:class:`softmax_zoo.run_record.RunRecord`; a rerun skips the records
that exist, so an interrupted study resumes). The studies (``only=``):

- ``collapse`` (memorise): CE in each form, float32 and bfloat16 logits, Adam without weight decay,
  until the loss is tiny. Per logged step: the share of training examples whose target gradient
  ∂L_i/∂z_it is exactly 0 and whose float32 target probability is exactly 1, the zero-sum
  violation mean_i |Σ_j ∂L_i/∂z_ij| (per-example gradients), the loss (float64 from the same
  logits, so every arm is measured alike), the parameter-gradient norm, train and test accuracy.
- ``cancellation`` (memorise): distil a student from a teacher (trained here with weight decay)
  with pure KD (α = 1, T = 1), the KL in each form, starting equal to the teacher (``equal``:
  self-distillation at identical logits) or fresh; a fresh float32 arm with the expm1 rewrite but no
  zero-sum correction (form "rewrite") credits the rewrite and the correction each with its share. Per logged step: the norm of the logit
  gradient, the parameter drift ‖θ − θ_0‖, max |z_S − z_T|, the KL (float64) and test accuracy.
- ``generalise``: the collapse comparison and the fresh-student distillation with AdamW (weight
  decay 1), where test accuracy rises to near 100%.
- ``saturate``: CE until float32 target probabilities round to 1 (Adam, β₂ = 0.9): standard and
  stable CE on float32 logits, and standard CE on float64 logits as the control.

Run: ``python -m softmax_zoo.studies.stable out=results/runs/stable [seeds=3] [only=<study>] [first_seed=0]``
(``make reproduce-stable``); the page is ``python -m softmax_zoo.reports stable``.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from ..cli_args import ArgumentError, Option, Parser, fail
from ..records import write_record
from ..run_record import RunRecord, record_path
from ._stable_runs import (
    DTYPES,
    FORMS,
    REGIMES,
    ModAddMLP,
    Setting,
    accuracy,
    cancellation_run,
    collapse_run,
    collapse_stats,
    cross_entropy,
    distill_loss,
    logits_of,
    modular_data,
    train_teacher,
)

__all__ = [  # the study's public names, its loops' among them
    "DTYPES", "FORMS", "REGIMES", "ModAddMLP", "Setting", "accuracy", "cancellation_run", "collapse_run", "collapse_stats",
    "cross_entropy", "distill_loss", "logits_of", "modular_data", "train_teacher", "plan", "run_name", "run_all", "main",
]

CE_FORMS = ("standard", "stable")  # the arms of every dtype; "cast" runs on bfloat16 logits only
STUDIES = ("collapse", "cancellation", "generalise", "saturate")


def arms(dtypes=("float32", "bfloat16")) -> list[tuple[str, str]]:
    """(form, dtype) pairs: standard and stable for every dtype, and the cast arm for bfloat16."""
    return [(f, d) for d in dtypes for f in (FORMS if d == "bfloat16" else CE_FORMS)]


def plan(seeds: int) -> list[dict[str, Any]]:
    """Every run of every study (module docstring), seed by seed."""
    runs = []
    for k in range(seeds):
        runs += [{"study": "collapse", "form": f, "dtype": d, "seed": k} for f, d in arms()]
        runs += [{"study": "cancellation", "start": st, "form": f, "dtype": d, "seed": k}
                 for st in ("equal", "fresh") for f, d in arms()]
        runs += [{"study": "cancellation", "start": "fresh", "form": "rewrite", "dtype": "float32", "seed": k}]
        runs += [{"study": "generalise", "loss": loss, "form": f, "dtype": d, "seed": k} for loss in ("ce", "kd") for f, d in arms()]
        runs += [{"study": "saturate", "form": f, "dtype": d, "seed": k}
                 for f, d in (("standard", "float32"), ("stable", "float32"), ("standard", "float64"))]
    return runs


def run_name(spec: dict[str, Any]) -> str:
    """<study>[_<start>|_<loss>]_<form>_<dtype>_seed<k>."""
    kind = "".join(f"_{spec[k]}" for k in ("start", "loss") if k in spec)
    return f"{spec['study']}{kind}_{spec['form']}_{spec['dtype']}_seed{spec['seed']}"


def run_one(spec: dict[str, Any], setting: Setting, teacher_of) -> dict[str, Any]:
    """The spec's run; ``teacher_of(seed)`` gives the (teacher, data) of a distillation."""
    form, dtype, seed = spec["form"], spec["dtype"], spec["seed"]
    if spec["study"] == "collapse":
        return collapse_run(form, dtype, seed, setting)
    if spec["study"] == "saturate":
        return collapse_run(form, dtype, seed, setting, regime="saturate")
    if spec["study"] == "generalise" and spec["loss"] == "ce":
        return collapse_run(form, dtype, seed, setting, regime="generalise")
    teacher, data = teacher_of(seed)
    if spec["study"] == "generalise":
        return cancellation_run(form, dtype, seed, "fresh", setting, teacher, data, regime="generalise")
    return cancellation_run(form, dtype, seed, spec["start"], setting, teacher, data)


def record_of(spec: dict[str, Any], setting: Setting, result: dict[str, Any], seconds: float, experiment: str,
              command: list[str]) -> RunRecord:
    """The run's record in the training records' schema (:class:`softmax_zoo.run_record.RunRecord`).

    ``choices`` are the run's arms (study, form, dtype; start or loss where the study has one), ``config``
    the arms, the seed and the :class:`Setting`; ``metrics`` the final numbers, ``history`` the curve.
    """
    return RunRecord.new(
        experiment=experiment, run_name=run_name(spec), seed=spec["seed"],
        choices={k: v for k, v in spec.items() if k != "seed"},
        config={**spec, "setting": asdict(setting), "torch_threads": torch.get_num_threads()},
        metrics=result["final"], history=result["curve"], timing={"wall_s": seconds}, command=command,
    )


def run_all(out: Path, seeds: int, only: str | None = None, setting: Setting = Setting(),
            command: list[str] | None = None, first_seed: int = 0) -> list[Path]:
    """Run every planned run of seeds ``first_seed`` .. ``seeds`` − 1 whose record is missing in ``out``
    (records ``out/<run>.json``); return the records written."""
    written, teachers = [], {}

    def teacher_of(seed: int):
        if seed not in teachers:
            teachers[seed] = train_teacher(seed, setting)
        return teachers[seed]

    for spec in plan(seeds):
        path = record_path(out.parent, out.name, run_name(spec))
        if path.is_file() or (only and spec["study"] != only) or spec["seed"] < first_seed:
            continue
        t0 = time.perf_counter()
        result = run_one(spec, setting, teacher_of)
        seconds = time.perf_counter() - t0
        write_record(record_of(spec, setting, result, seconds, out.name, command or [COMMAND]), out.parent)
        final = {k: v for k, v in result["final"].items() if isinstance(v, float)}
        print(f"{run_name(spec)}: {seconds:.1f} s, final {final}", flush=True)
        written.append(path)
    return written


COMMAND = "python -m softmax_zoo.studies.stable"
PARSER = Parser(COMMAND, [
    Option("out", "results/runs/stable", "folder of the records (results_dir/runs/<experiment>)"),
    Option("seeds", 3, "seeds per arm", minimum=1),
    Option("first_seed", 0, "skip the seeds below it (two processes can share the seeds of one study)", minimum=0),
    Option("only", None, "run one study only", kind=str, choices=STUDIES),
], max_positional=0)


def main(argv: list[str] | None = None) -> int:
    """Run the study (``argv`` defaults to ``sys.argv[1:]``); 2 on a bad command line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = PARSER.parse(argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    torch.set_num_threads(1)  # the page states one thread's time
    run_all(Path(args["out"]), args["seeds"], args["only"], command=[*COMMAND.split(), *argv], first_seed=args["first_seed"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
