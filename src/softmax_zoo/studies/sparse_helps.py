"""When does sparse-softmax help? The share of targets inside Ω_k as a dial, in a controlled study.

Sparse-softmax (Sun et al. 2021, eq. 2-3) trains logsumexp over Ω_k, the k largest logits, minus the
target's logit (:class:`softmax_zoo.losses.SparseSoftmaxHead`). A wrong class gets gradient only while it
is inside Ω_k, and a target outside Ω_k is pushed up until it enters; when many targets fall outside,
the tail gathers at the k-th logit (the "crowd", :func:`softmax_zoo.diagnostics.topk.topk_rows`). This
study sets how often targets fall outside and measures both arms:

- **The task.** A fixed random teacher over C classes: contexts x ~ N(0, I_d), teacher logits
  u(x) = (s · A x / √d + b) / τ with A (C, d) standard normal from ``teacher_seed`` and b_j = −log j
  (a Zipf prior: class 1 is the most frequent), labels drawn from softmax(u(x)). Each **dial level**
  is the teacher's mean probability mass inside its own top-``dial_k`` classes (:data:`LEVELS`); its
  temperature τ is solved for that mass by bisection on a fixed calibration sample (:func:`temperature`).
  Training draws a fresh batch every step (no example is seen twice, so neither arm overfits); the test
  set is one fixed sample per level, the same for every seed and arm.
- **The students.** One size: a two-layer GELU MLP (d -> h -> h) and a linear head over C, built from the
  training seed. The arms of a seed share that initialisation and that stream of batches:
  ``softmax`` (:class:`~softmax_zoo.losses.SoftmaxHead`), ``sparse`` at each k of ``ks``
  (:class:`~softmax_zoo.losses.SparseSoftmaxHead`), and ``+init`` arms (``start="init"``) that continue
  the seed's trained softmax student for the same number of steps on the same batches, with softmax and
  with sparse at each k (the paper's fine-tuning from a trained model).
- **Per run** (:func:`evaluate`): argmax accuracy against the teacher's mode, the test log-likelihood of
  the drawn labels under the full softmax of the student's logits (both arms alike), and at each k of
  ``ks``: the share of test targets in the student's Ω_k, the crowd (logits within ``NEAR`` of the k-th
  largest, the k-th included: the mean count and that count over C), and the target's median rank; also
  the share of argmax choices among the ``frequent`` most frequent classes, beside the teacher's mode's.

Each run writes one JSON record into ``out`` in the training records' schema
(:func:`softmax_zoo.records.study_record`); a rerun skips the records that exist, so an interrupted
study resumes (a missing ``+init`` run retrains its seed's softmax start, which is deterministic on one
thread). Run: ``python -m softmax_zoo.studies.sparse_helps out=results/runs/sparse_helps [seeds=3]``
(``make reproduce-sparse-helps``); the page is ``python -m softmax_zoo.reports sparse_helps``.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..cli_args import ArgumentError, Option, Parser, fail
from ..diagnostics.topk import NEAR, topk_rows
from ..losses import SoftmaxHead, SparseSoftmaxHead
from ..records import record_path, study_record, write_record

EXPERIMENT = "sparse_helps"
LEVELS = (0.35, 0.5, 0.8, 0.9, 0.95, 0.99)  # the teacher's mean mass inside its top-dial_k classes
LOSSES = ("softmax", "sparse")
STARTS = ("cold", "init")  # from the seed's initialisation, or continuing its trained softmax student


@dataclass(frozen=True)
class Setting:
    """The sizes and the schedule of every run (the page prints them)."""

    classes: int = 200  # C
    context_dim: int = 16  # d
    hidden: int = 128  # h, both hidden layers
    teacher_seed: int = 1234
    teacher_scale: float = 3.0  # s
    dial_k: int = 20  # the dial's k: the teacher's mass inside its top-dial_k classes
    ks: tuple[int, ...] = (20, 5)  # the sparse arms' k; the diagnostics are measured at each
    levels: tuple[float, ...] = LEVELS
    steps: int = 1000  # Adam steps of every run (+init: as many again)
    batch: int = 256  # fresh (x, y) pairs per step
    lr: float = 2e-3
    test_size: int = 4000
    calibration_size: int = 4000  # contexts the temperature is solved on
    frequent: int = 10  # "frequent classes": the 10 with the largest prior b_j
    log_every: int = 50


def check_setting(s: Setting) -> None:
    """Raise ValueError naming the first bad value of ``s``."""
    if not s.ks or min(s.ks) < 1 or max(s.ks) >= s.classes or s.dial_k not in s.ks:
        raise ValueError(f"ks must be in [1, classes={s.classes}) and hold dial_k={s.dial_k}, got {s.ks}")
    if not s.levels or not all(s.dial_k / s.classes < m < 1 for m in s.levels):
        raise ValueError(f"levels must lie in (dial_k / classes = {s.dial_k / s.classes:g}, 1), got {s.levels}")


class Teacher:
    """The fixed random teacher: logits (N, C) of contexts (N, d) at temperature τ (module docstring)."""

    def __init__(self, s: Setting) -> None:
        self.s = s
        self.weight = torch.randn(s.classes, s.context_dim, generator=torch.Generator().manual_seed(s.teacher_seed))
        self.prior = -torch.log(torch.arange(1, s.classes + 1, dtype=torch.float32))  # (C,) b_j = −log j

    def logits(self, x: torch.Tensor, tau: float) -> torch.Tensor:
        return (self.s.teacher_scale * x @ self.weight.T / math.sqrt(self.s.context_dim) + self.prior) / tau

    def sample(self, n: int, tau: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(x (n, d), labels drawn from the teacher (n,), the teacher's mode (n,))."""
        x = torch.randn(n, self.s.context_dim, generator=generator)
        u = self.logits(x, tau)
        return x, torch.multinomial(u.softmax(1), 1, generator=generator).squeeze(1), u.argmax(1)

    def top_mass(self, tau: float, k: int, x: torch.Tensor) -> float:
        """The mean over ``x`` of the teacher's probability mass inside its top-k classes."""
        return float(self.logits(x, tau).softmax(1).topk(k, dim=1).values.sum(1).mean())


def temperature(teacher: Teacher, mass: float, s: Setting) -> float:
    """τ at which the teacher's mean top-``dial_k`` mass on the calibration contexts is ``mass`` (bisection on log τ;
    the mass falls as τ grows)."""
    x = torch.randn(s.calibration_size, s.context_dim, generator=torch.Generator().manual_seed(s.teacher_seed + 1))
    low, high = math.log(1e-2), math.log(1e2)
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if teacher.top_mass(math.exp(mid), s.dial_k, x) > mass else (low, mid)
    return math.exp((low + high) / 2)


class Student(nn.Module):
    """x (N, d) -> hidden (N, h) by a two-layer GELU MLP; ``head`` the output layer and its loss."""

    def __init__(self, s: Setting, head: SoftmaxHead) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(s.context_dim, s.hidden), nn.GELU(), nn.Linear(s.hidden, s.hidden), nn.GELU())
        self.head = head

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.head.logits(self.body(x))


def head_of(loss: str, k: int | None, s: Setting) -> SoftmaxHead:
    if loss == "softmax":
        return SoftmaxHead(s.hidden, s.classes)
    if loss == "sparse":
        return SparseSoftmaxHead(s.hidden, s.classes, k=k)
    raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")


def initial_state(s: Setting, seed: int) -> dict[str, torch.Tensor]:
    """The seed's initial student parameters, which every arm of the seed starts from (the heads' parameters are alike)."""
    torch.manual_seed(seed)
    return copy.deepcopy(Student(s, SoftmaxHead(s.hidden, s.classes)).state_dict())


def batches(teacher: Teacher, tau: float, seed: int, s: Setting) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """The seed's stream of ``steps`` fresh training batches at τ, the same for every arm of the seed."""
    generator = torch.Generator().manual_seed(100_000 + seed)
    for _ in range(s.steps):
        x, y, _ = teacher.sample(s.batch, tau, generator)
        yield x, y


def train(student: Student, teacher: Teacher, tau: float, seed: int, s: Setting) -> list[dict[str, float]]:
    """Adam over the seed's stream; the training loss every ``log_every`` steps."""
    opt = torch.optim.Adam(student.parameters(), lr=s.lr)
    curve = []
    for step, (x, y) in enumerate(batches(teacher, tau, seed, s)):
        loss = student.head(student.body(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % s.log_every == 0 or step == s.steps - 1:
            curve.append({"step": step, "loss": loss.item()})
    return curve


def held_out(teacher: Teacher, tau: float, s: Setting) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The level's fixed test sample (x, drawn labels, the teacher's mode), the same for every seed and arm."""
    return teacher.sample(s.test_size, tau, torch.Generator().manual_seed(999_999))


def evaluate(student: Student, test: tuple[torch.Tensor, torch.Tensor, torch.Tensor], s: Setting) -> dict[str, float]:
    """The run's test metrics (module docstring): ``mode_accuracy``, ``log_likelihood`` (nats per test label, full softmax),
    ``argmax_frequent``, and per k ``target_in_top{k}``, ``median_target_rank``, ``logits_near_kth_k{k}`` (mean count)
    and ``logits_near_kth_share_k{k}`` (that count over C)."""
    x, y, mode = test
    with torch.no_grad():
        z = student.logits(x).double()  # (N, C)
    out = {"mode_accuracy": float((z.argmax(1) == mode).double().mean()),
           "log_likelihood": float(-F.cross_entropy(z, y)),
           "argmax_frequent": float((z.argmax(1) < s.frequent).double().mean())}
    for k in s.ks:
        rank, near = topk_rows(z, y, k)  # rank (N,) is the same at every k
        out |= {f"target_in_top{k}": float((rank <= k).double().mean()), f"logits_near_kth_k{k}": float(near.double().mean()),
                f"logits_near_kth_share_k{k}": float(near.double().mean() / s.classes)}
    out["median_target_rank"] = float(rank.double().quantile(0.5))
    return {f"test/{name}": value for name, value in out.items()}


def plan(seeds: int, s: Setting = Setting()) -> list[dict[str, Any]]:
    """Every run, level by level and seed by seed; a seed's cold softmax arm first (its +init arms start from it)."""
    arms = [("softmax", None)] + [("sparse", k) for k in s.ks]
    return [{"level": m, "loss": loss, "k": k, "start": start, "seed": seed}
            for m in s.levels for seed in range(seeds) for start in STARTS for loss, k in arms]


def run_name(spec: dict[str, Any]) -> str:
    """mass<level>_<softmax|sparse-k<k>>_<cold|init>_seed<seed>, e.g. mass0.900_sparse-k20_init_seed1."""
    arm = "softmax" if spec["k"] is None else f"sparse-k{spec['k']}"
    return f"mass{spec['level']:.3f}_{arm}_{spec['start']}_seed{spec['seed']}"


def run_one(spec: dict[str, Any], s: Setting, teacher: Teacher, tau: float, softmax_start: Student | None) -> tuple[Student, dict]:
    """Train the spec's student (from the seed's initialisation, or a copy of ``softmax_start`` for +init) and evaluate it."""
    student = Student(s, head_of(spec["loss"], spec["k"], s))
    student.load_state_dict(initial_state(s, spec["seed"]) if spec["start"] == "cold" else softmax_start.state_dict())
    curve = train(student, teacher, tau, spec["seed"], s)
    return student, {"curve": curve, "final": evaluate(student, held_out(teacher, tau, s), s)}


def record_of(spec: dict[str, Any], s: Setting, tau: float, teacher_mass: dict[str, float], result: dict[str, Any],
              timing: dict[str, float], command: list[str], experiment: str) -> dict[str, Any]:
    """The run's record: ``choices`` its arm (loss, k, start) and level, ``config`` the spec, τ, the crowd's distance
    and the :class:`Setting`, ``metrics`` the test metrics and the teacher's own on the test set (``teacher/…``),
    ``timing`` its wall and CPU seconds (``wall_s``, ``cpu_s``)."""
    return study_record(
        experiment=experiment, run_name=run_name(spec), seed=spec["seed"],
        choices={"level": spec["level"], "loss": spec["loss"], "k": spec["k"], "start": spec["start"]},
        config={**spec, "temperature": tau, "near": NEAR, "setting": asdict(s), "torch_threads": torch.get_num_threads()},
        metrics={**result["final"], **teacher_mass}, history=result["curve"], timing=timing, command=command,
    )


def teacher_metrics(teacher: Teacher, tau: float, s: Setting) -> dict[str, float]:
    """The teacher on the level's test set: its top-k mass at each k, and how often its mode is a frequent class."""
    x, _, mode = held_out(teacher, tau, s)
    return {**{f"teacher/top{k}_mass": teacher.top_mass(tau, k, x) for k in s.ks},
            "teacher/mode_frequent": float((mode < s.frequent).double().mean())}


def run_all(out: Path, seeds: int, setting: Setting = Setting(), command: list[str] | None = None) -> list[Path]:
    """Run every planned run whose record is missing in ``out`` (``out/<run>.json``); return the records written."""
    check_setting(setting)
    teacher, written, taus = Teacher(setting), [], {}
    starts: dict[tuple[float, int], Student] = {}  # (level, seed) -> the trained cold softmax student
    for spec in plan(seeds, setting):
        path = record_path(out.parent, out.name, run_name(spec))
        if path.is_file():
            continue
        level, seed = spec["level"], spec["seed"]
        tau = taus.setdefault(level, temperature(teacher, level, setting))
        if spec["start"] == "init" and (level, seed) not in starts:
            starts[(level, seed)], _ = run_one({**spec, "loss": "softmax", "k": None, "start": "cold"}, setting, teacher, tau, None)
        t0, cpu0 = time.perf_counter(), time.process_time()
        student, result = run_one(spec, setting, teacher, tau, starts.get((level, seed)))
        # CPU seconds beside wall seconds: on a shared machine the wall time overstates one thread's cost.
        timing = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0}
        if spec["start"] == "cold" and spec["loss"] == "softmax":
            starts[(level, seed)] = student
        record = record_of(spec, setting, tau, teacher_metrics(teacher, tau, setting), result, timing,
                           command or COMMAND.split(), out.name)
        write_record(record, out.parent)
        print(f"{run_name(spec)}: {timing['wall_s']:.1f} s ({timing['cpu_s']:.1f} s CPU), "
              f"accuracy {result['final']['test/mode_accuracy']:.3f}, "
              f"targets in Ω_{setting.dial_k} {result['final'][f'test/target_in_top{setting.dial_k}']:.3f}", flush=True)
        written.append(path)
    return written


COMMAND = "python -m softmax_zoo.studies.sparse_helps"
PARSER = Parser(COMMAND, [
    Option("out", f"results/runs/{EXPERIMENT}", "folder of the records (results_dir/runs/<experiment>)"),
    Option("seeds", 3, "training seeds per arm and level", minimum=1),
    Option("levels", list(LEVELS), "the dial: the teacher's mean mass inside its top-20 classes, each in (0.1, 1)"),
    Option("steps", Setting.steps, "Adam steps of every run", minimum=1),
], max_positional=0)


def main(argv: list[str] | None = None) -> int:
    """Run the study (``argv`` defaults to ``sys.argv[1:]``); 2 on a bad command line."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = PARSER.parse(argv)
        setting = replace(Setting(), levels=tuple(args["levels"]), steps=args["steps"])
        check_setting(setting)
    except (ArgumentError, ValueError) as e:
        return fail(PARSER, e)
    torch.set_num_threads(1)  # the page states one thread's time
    run_all(Path(args["out"]), args["seeds"], setting, command=[*COMMAND.split(), *argv])
    return 0


if __name__ == "__main__":
    sys.exit(main())
