"""Softmax collapse and softmax cancellation, measured in training ("A Fix for Softmax and Cross-Entropy").

Both studies train a small MLP on modular addition (a + b mod P from the pair (a, b); the
grokking setting of Power et al. 2022), full batch, with the logits in float32 or bfloat16
(autocast), 3+ seeds, and write one JSON record per run into ``out`` in the training records'
schema (:func:`softmax_zoo.records.study_record`; a rerun skips the records that exist, so an
interrupted study resumes):

- *collapse*: train with ``F.cross_entropy`` ("standard", computed in the logits' dtype) or
  :func:`stable_cross_entropy` ("stable") without weight decay, until the loss is tiny. Per logged
  step: the share of training examples whose target gradient ∂L_i/∂z_it is exactly 0, the
  zero-sum violation mean_i |Σ_j ∂L_i/∂z_ij| (per-example gradients), the loss (in float64 from
  the same logits, so both arms are measured alike), train and test accuracy.
- *cancellation*: distil a student from a teacher (trained here with weight decay) with pure KD
  (α = 1, T = 1), the KL in the standard or the stable form (:mod:`softmax_zoo.losses.distill`),
  starting either equal to the teacher (``equal``: self-distillation at identical logits) or from
  a fresh initialisation (``fresh``). Per logged step: the norm of the logit gradient, the
  parameter drift ‖θ − θ_0‖, max |z_S − z_T|, the KL (float64) and test accuracy.

Run: ``python -m softmax_zoo.studies.stable out=results/runs/stable [seeds=3] [only=collapse|cancellation]``
(``make reproduce-stable``); the page is ``python -m softmax_zoo.reports stable``.
"""

from __future__ import annotations

import copy
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..losses.distill import kd_loss
from ..losses.stable import stable_cross_entropy
from ..cli_args import ArgumentError, Option, Parser, fail
from ..records import record_path, study_record, write_record

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
CE_FORMS = ("standard", "stable")


@dataclass(frozen=True)
class Setting:
    """The sizes both studies share (the page prints them)."""

    modulus: int = 59  # P: P² pairs, P classes
    train_fraction: float = 0.5
    embed: int = 64
    hidden: int = 256
    collapse_steps: int = 3000
    collapse_lr: float = 1e-2
    teacher_steps: int = 3000
    teacher_lr: float = 3e-3
    teacher_weight_decay: float = 1.0
    distill_steps: int = 600
    distill_lr: float = 1e-3
    log_every: int = 10
    eval_every: int = 50


class ModAddMLP(nn.Module):
    """(a, b) -> shared embedding of each, concatenated -> Linear-ReLU -> Linear -> P logits."""

    def __init__(self, modulus: int, embed: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(modulus, embed)
        self.body = nn.Sequential(nn.Linear(2 * embed, hidden), nn.ReLU(), nn.Linear(hidden, modulus))

    def forward(self, pairs: torch.Tensor) -> torch.Tensor:
        """pairs (N, 2) long -> logits (N, P)."""
        return self.body(self.embed(pairs).flatten(1))


def modular_data(modulus: int, train_fraction: float, seed: int) -> dict[str, torch.Tensor]:
    """Every pair (a, b) with label (a + b) mod P, split at random (``seed``) into train and test."""
    a, b = torch.meshgrid(torch.arange(modulus), torch.arange(modulus), indexing="ij")
    pairs = torch.stack([a.flatten(), b.flatten()], dim=1)  # (P², 2)
    labels = (pairs.sum(1) % modulus).long()
    order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(seed))
    n = int(train_fraction * len(pairs))
    tr, te = order[:n], order[n:]
    return {"x_train": pairs[tr], "y_train": labels[tr], "x_test": pairs[te], "y_test": labels[te]}


def logits_of(model: nn.Module, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(N, P) logits in ``dtype``: float32 as is, bfloat16 through CPU autocast."""
    if dtype == torch.float32:
        return model(x)
    with torch.autocast("cpu", dtype=dtype):
        return model(x)


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype) -> float:
    with torch.no_grad():
        return float((logits_of(model, x, dtype).argmax(1) == y).float().mean())


def cross_entropy(logits: torch.Tensor, y: torch.Tensor, form: str) -> torch.Tensor:
    """Mean CE: "standard" is F.cross_entropy in the logits' dtype, "stable" the softplus form."""
    if form == "standard":
        return F.cross_entropy(logits, y)
    if form == "stable":
        return stable_cross_entropy(logits, y)
    raise ValueError(f"CE form must be one of {CE_FORMS}, got {form!r}")


def collapse_stats(logits: torch.Tensor, grad: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """Per-example gradient diagnostics of a mean loss; grad (N, C) is ∂(mean L)/∂z."""
    g = grad.double() * len(y)  # (N, C) per-example ∂L_i/∂z_i
    target = g.gather(1, y[:, None]).squeeze(1)
    return {
        "zero_target_grad_share": float((target == 0).double().mean()),
        "zero_sum_violation": float(g.sum(1).abs().mean()),
        "loss": float(F.cross_entropy(logits.detach().double(), y)),
        "train_accuracy": float((logits.argmax(1) == y).double().mean()),
    }


def collapse_run(form: str, dtype_name: str, seed: int, s: Setting) -> dict[str, Any]:
    """One collapse run: its per-step curves and final numbers."""
    dtype = DTYPES[dtype_name]
    data = modular_data(s.modulus, s.train_fraction, seed)
    torch.manual_seed(seed)
    model = ModAddMLP(s.modulus, s.embed, s.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=s.collapse_lr)
    x, y = data["x_train"], data["y_train"]
    curve: list[dict[str, float]] = []
    for step in range(s.collapse_steps + 1):
        logits = logits_of(model, x, dtype)  # (N, P)
        logits.retain_grad()
        opt.zero_grad(set_to_none=True)
        cross_entropy(logits, y, form).backward()
        if step % s.log_every == 0:
            point = {"step": step, **collapse_stats(logits, logits.grad, y)}
            if step % s.eval_every == 0:
                point["test_accuracy"] = accuracy(model, data["x_test"], data["y_test"], dtype)
            curve.append(point)
        if step < s.collapse_steps:
            opt.step()
    return {"curve": curve, "final": {**curve[-1], "test_accuracy": accuracy(model, data["x_test"], data["y_test"], dtype)}}


def train_teacher(seed: int, s: Setting) -> tuple[nn.Module, dict[str, torch.Tensor]]:
    """A float32 teacher trained with CE and weight decay (AdamW), on the seed's split."""
    data = modular_data(s.modulus, s.train_fraction, seed)
    torch.manual_seed(10_000 + seed)
    model = ModAddMLP(s.modulus, s.embed, s.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=s.teacher_lr, weight_decay=s.teacher_weight_decay)
    for _ in range(s.teacher_steps):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(data["x_train"]), data["y_train"]).backward()
        opt.step()
    return model, data


def flat_params(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def cancellation_run(form: str, dtype_name: str, seed: int, start: str, s: Setting, teacher: nn.Module, data) -> dict[str, Any]:
    """One distillation run (pure KD, T = 1) from ``start`` "equal" (a copy of the teacher) or "fresh"."""
    dtype = DTYPES[dtype_name]
    if start == "equal":
        student = copy.deepcopy(teacher)
    elif start == "fresh":
        torch.manual_seed(20_000 + seed)
        student = ModAddMLP(s.modulus, s.embed, s.hidden)
    else:
        raise ValueError(f"start must be 'equal' or 'fresh', got {start!r}")
    x, xt, yt = data["x_train"], data["x_test"], data["y_test"]
    with torch.no_grad():
        z_teacher = logits_of(teacher, x, dtype)  # (N, P) in the run's dtype
    theta0 = flat_params(student)
    opt = torch.optim.Adam(student.parameters(), lr=s.distill_lr)
    curve: list[dict[str, float]] = []
    for step in range(s.distill_steps + 1):
        z = logits_of(student, x, dtype)
        z.retain_grad()
        opt.zero_grad(set_to_none=True)
        kd_loss(z, z_teacher, temperature=1.0, form=form).backward()
        if step % s.log_every == 0:
            g = z.grad.double() * len(x)  # per-example ∂L_i/∂z_i
            point = {
                "step": step,
                "logit_grad_norm": float(g.norm(dim=1).mean()),
                "zero_sum_violation": float(g.sum(1).abs().mean()),
                "drift": float((flat_params(student) - theta0).norm()),
                "max_logit_gap": float((z.detach().double() - z_teacher.double()).abs().max()),
                "identical_logits": bool(torch.equal(z.detach(), z_teacher)),
                "kl": float(F.kl_div(F.log_softmax(z.detach().double(), 1), F.log_softmax(z_teacher.double(), 1),
                                     log_target=True, reduction="batchmean")),
            }
            if step % s.eval_every == 0:
                point["test_accuracy"] = accuracy(student, xt, yt, dtype)
            curve.append(point)
        if step < s.distill_steps:
            opt.step()
    final = {**curve[-1], "test_accuracy": accuracy(student, xt, yt, dtype), "teacher_test_accuracy": accuracy(teacher, xt, yt, dtype),
             "agreement": float((logits_of(student, xt, dtype).argmax(1) == logits_of(teacher, xt, dtype).argmax(1)).float().mean())}
    return {"curve": curve, "final": final}


def plan(seeds: int) -> list[dict[str, Any]]:
    """Every run of both studies: collapse (form × dtype × seed), cancellation (start × form × dtype × seed)."""
    runs = [{"study": "collapse", "form": f, "dtype": d, "seed": k} for k in range(seeds) for d in DTYPES for f in CE_FORMS]
    runs += [{"study": "cancellation", "start": st, "form": f, "dtype": d, "seed": k}
             for k in range(seeds) for st in ("equal", "fresh") for d in DTYPES for f in CE_FORMS]
    return runs


def run_name(spec: dict[str, Any]) -> str:
    start = f"_{spec['start']}" if "start" in spec else ""
    return f"{spec['study']}{start}_{spec['form']}_{spec['dtype']}_seed{spec['seed']}"


def record_of(spec: dict[str, Any], setting: Setting, result: dict[str, Any], seconds: float, experiment: str,
              command: list[str]) -> dict[str, Any]:
    """The run's record in the training records' schema (:func:`softmax_zoo.records.study_record`).

    ``choices`` are the run's arms (study, form, dtype, and start for cancellation), ``config``
    the arms, the seed and the :class:`Setting`; ``metrics`` the final numbers, ``history`` the curve.
    """
    return study_record(
        experiment=experiment, run_name=run_name(spec), seed=spec["seed"],
        choices={k: v for k, v in spec.items() if k != "seed"},
        config={**spec, "setting": asdict(setting), "torch_threads": torch.get_num_threads()},
        metrics=result["final"], history=result["curve"], timing={"wall_s": seconds}, command=command,
    )


def run_all(out: Path, seeds: int, only: str | None = None, setting: Setting = Setting(),
            command: list[str] | None = None) -> list[Path]:
    """Run every planned run whose record is missing in ``out`` (records ``out/<run>.json``); return the records written."""
    written, teachers = [], {}
    for spec in plan(seeds):
        path = record_path(out.parent, out.name, run_name(spec))
        if path.is_file() or (only and spec["study"] != only):
            continue
        t0 = time.perf_counter()
        if spec["study"] == "collapse":
            result = collapse_run(spec["form"], spec["dtype"], spec["seed"], setting)
        else:
            if spec["seed"] not in teachers:
                teachers[spec["seed"]] = train_teacher(spec["seed"], setting)
            teacher, data = teachers[spec["seed"]]
            result = cancellation_run(spec["form"], spec["dtype"], spec["seed"], spec["start"], setting, teacher, data)
        seconds = time.perf_counter() - t0
        write_record(record_of(spec, setting, result, seconds, out.name, command or [COMMAND]), out.parent)
        print(f"{run_name(spec)}: {seconds:.1f} s, final {({k: v for k, v in result['final'].items() if isinstance(v, float)})}", flush=True)
        written.append(path)
    return written


COMMAND = "python -m softmax_zoo.studies.stable"
PARSER = Parser(COMMAND, [
    Option("out", "results/runs/stable", "folder of the records (results_dir/runs/<experiment>)"),
    Option("seeds", 3, "seeds per arm", minimum=1),
    Option("only", None, "run one study only", kind=str, choices=("collapse", "cancellation")),
], max_positional=0)


def main(argv: list[str] | None = None) -> int:
    """Run the study (``argv`` defaults to ``sys.argv[1:]``); 2 on a bad command line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = PARSER.parse(argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    torch.set_num_threads(1)  # the page states one thread's time
    run_all(Path(args["out"]), args["seeds"], args["only"], command=[*COMMAND.split(), *argv])
    return 0


if __name__ == "__main__":
    sys.exit(main())
