"""The training loops of the stable study (:mod:`softmax_zoo.studies.stable`): data, model, losses, one run.

Modular addition (a + b mod P from the pair (a, b); the grokking setting of Power et al. 2022),
full batch, a small MLP. A run's logits are float32, bfloat16 (CPU autocast) or float64 (the
model in float64). The loss "form" is one of :data:`FORMS`:

- ``standard``: the usual formula in the logits' own dtype (``F.cross_entropy``; the KL through
  ``softmax(z_S) − softmax(z_T)``, :func:`softmax_zoo.losses.methods.distill.kd_loss` form "standard");
- ``cast``: the same standard formula on the logits cast to float32 first. For bfloat16 logits it
  separates the effect of computing in float32 from the effect of the rewritten formula;
- ``stable``: the package's rewritten loss (softplus form for CE, expm1 form for KD), which
  computes in float32 for bfloat16 logits;
- ``rewrite`` (KD only): the expm1 form without the zero-sum correction g_i = u_i − q_i Σ_j u_j, to
  credit the rewrite and the correction each with its share.

Each *regime* (:data:`REGIMES`) fixes a run's optimiser and budget (:func:`collapse_schedule`,
:func:`distill_schedule`): ``memorise`` (Adam, no weight decay: the training set is fitted and
nothing generalises), ``generalise`` (AdamW with weight decay 1: test accuracy rises to near
100%) and ``saturate`` (Adam with β₂ = 0.9, no weight decay: the margins keep growing, so the float32
probability of the target rounds to 1 for most training examples within a few hundred steps).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ..losses.methods.distill import kd_loss
from ..losses.methods.stable import stable_cross_entropy
from ..losses.methods.stable_kd import stable_kd_loss

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float64": torch.float64}
FORMS = ("standard", "cast", "stable")
KD_FORMS = (*FORMS, "rewrite")
REGIMES = ("memorise", "generalise", "saturate")


@dataclass(frozen=True)
class Setting:
    """The sizes and schedules of every run (the page prints them)."""

    modulus: int = 59  # P: P² pairs, P classes
    train_fraction: float = 0.5
    embed: int = 64
    hidden: int = 256
    collapse_steps: int = 3000  # memorise: Adam, no weight decay
    collapse_lr: float = 1e-2
    teacher_steps: int = 3000
    teacher_lr: float = 3e-3
    teacher_weight_decay: float = 1.0
    distill_steps: int = 600  # memorise: Adam, no weight decay
    distill_lr: float = 1e-3
    generalise_steps: int = 2000  # generalise: AdamW, CE and KD students alike
    generalise_lr: float = 3e-3
    generalise_weight_decay: float = 1.0
    saturate_steps: int = 1500  # saturate: Adam with a short second-moment memory, no weight decay, CE only
    saturate_lr: float = 1e-2
    saturate_beta2: float = 0.9
    log_every: int = 10
    eval_every: int = 50


@dataclass(frozen=True)
class Schedule:
    """Optimiser and budget of one run: Adam when ``weight_decay`` is 0, else AdamW."""

    steps: int
    lr: float
    weight_decay: float = 0.0
    beta2: float = 0.999

    def optimizer(self, params) -> torch.optim.Optimizer:
        betas = (0.9, self.beta2)
        if self.weight_decay:
            return torch.optim.AdamW(params, lr=self.lr, betas=betas, weight_decay=self.weight_decay)
        return torch.optim.Adam(params, lr=self.lr, betas=betas)


def collapse_schedule(regime: str, s: Setting) -> Schedule:
    if regime == "memorise":
        return Schedule(s.collapse_steps, s.collapse_lr)
    if regime == "generalise":
        return Schedule(s.generalise_steps, s.generalise_lr, s.generalise_weight_decay)
    if regime == "saturate":
        return Schedule(s.saturate_steps, s.saturate_lr, beta2=s.saturate_beta2)
    raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")


def distill_schedule(regime: str, s: Setting) -> Schedule:
    if regime == "memorise":
        return Schedule(s.distill_steps, s.distill_lr)
    if regime == "generalise":
        return Schedule(s.generalise_steps, s.generalise_lr, s.generalise_weight_decay)
    raise ValueError(f"distillation regime must be 'memorise' or 'generalise', got {regime!r}")


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


def new_model(s: Setting, seed: int, dtype: torch.dtype) -> ModAddMLP:
    """A fresh MLP from ``seed``; its parameters are float64 for float64 logits, else float32."""
    torch.manual_seed(seed)
    model = ModAddMLP(s.modulus, s.embed, s.hidden)
    return model.double() if dtype == torch.float64 else model


def logits_of(model: nn.Module, x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(N, P) logits in ``dtype``: float32/float64 as the model is, bfloat16 through CPU autocast."""
    if dtype != torch.bfloat16:
        return model(x)
    with torch.autocast("cpu", dtype=dtype):
        return model(x)


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype) -> float:
    with torch.no_grad():
        return float((logits_of(model, x, dtype).argmax(1) == y).float().mean())


def cross_entropy(logits: torch.Tensor, y: torch.Tensor, form: str) -> torch.Tensor:
    """Mean CE in the ``form`` of :data:`FORMS` (module docstring)."""
    if form == "standard":
        return F.cross_entropy(logits, y)
    if form == "cast":
        return F.cross_entropy(logits.float(), y)
    if form == "stable":
        return stable_cross_entropy(logits, y)
    raise ValueError(f"CE form must be one of {FORMS}, got {form!r}")


def distill_loss(z_student: torch.Tensor, z_teacher: torch.Tensor, form: str) -> torch.Tensor:
    """Pure KD, T = 1, in the ``form`` of :data:`FORMS`; "cast" is the standard KL on float32 logits."""
    if form == "cast":
        return kd_loss(z_student.float(), z_teacher.float(), temperature=1.0, form="standard")
    if form == "rewrite":
        return stable_kd_loss(z_student, z_teacher.detach(), zero_sum_correction=False)
    if form not in FORMS:
        raise ValueError(f"KL form must be one of {KD_FORMS}, got {form!r}")
    return kd_loss(z_student, z_teacher, temperature=1.0, form=form)


def grad_norm(model: nn.Module) -> float:
    """‖∂L/∂θ‖ over every parameter (float64)."""
    return float(torch.cat([p.grad.double().flatten() for p in model.parameters() if p.grad is not None]).norm())


def collapse_stats(logits: torch.Tensor, grad: torch.Tensor, y: torch.Tensor) -> dict[str, float]:
    """Per-example gradient diagnostics of a mean loss; grad (N, C) is ∂(mean L)/∂z.

    ``target_prob_one_share`` is the share of examples whose target probability softmax(z)_t is
    exactly 1 with the logits taken in float32 (float64 logits: in float64).
    """
    g = grad.double() * len(y)  # (N, C) per-example ∂L_i/∂z_i
    target = g.gather(1, y[:, None]).squeeze(1)
    z = logits.detach()
    q_t = torch.softmax(z if z.dtype == torch.float64 else z.float(), dim=1).gather(1, y[:, None])
    return {
        "zero_target_grad_share": float((target == 0).double().mean()),
        "target_prob_one_share": float((q_t == 1).double().mean()),
        "zero_sum_violation": float(g.sum(1).abs().mean()),
        "loss": float(F.cross_entropy(z.double(), y)),
        "train_accuracy": float((z.argmax(1) == y).double().mean()),
    }


def collapse_run(form: str, dtype_name: str, seed: int, s: Setting, regime: str = "memorise") -> dict[str, Any]:
    """One run trained with CE of ``form`` under ``regime``'s schedule: its per-step curves and final numbers."""
    dtype, schedule = DTYPES[dtype_name], collapse_schedule(regime, s)
    data = modular_data(s.modulus, s.train_fraction, seed)
    model = new_model(s, seed, dtype)
    opt = schedule.optimizer(model.parameters())
    x, y = data["x_train"], data["y_train"]
    curve: list[dict[str, float]] = []
    for step in range(schedule.steps + 1):
        logits = logits_of(model, x, dtype)  # (N, P)
        logits.retain_grad()
        opt.zero_grad(set_to_none=True)
        cross_entropy(logits, y, form).backward()
        if step % s.log_every == 0:
            point = {"step": step, **collapse_stats(logits, logits.grad, y), "param_grad_norm": grad_norm(model)}
            if step % s.eval_every == 0:
                point["test_accuracy"] = accuracy(model, data["x_test"], data["y_test"], dtype)
            curve.append(point)
        if step < schedule.steps:
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


def cancellation_run(form: str, dtype_name: str, seed: int, start: str, s: Setting, teacher: nn.Module, data,
                     regime: str = "memorise") -> dict[str, Any]:
    """One distillation run (pure KD, T = 1) from ``start`` "equal" (a copy of the teacher) or "fresh"."""
    dtype, schedule = DTYPES[dtype_name], distill_schedule(regime, s)
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
    opt = schedule.optimizer(student.parameters())
    curve: list[dict[str, float]] = []
    for step in range(schedule.steps + 1):
        z = logits_of(student, x, dtype)
        z.retain_grad()
        opt.zero_grad(set_to_none=True)
        distill_loss(z, z_teacher, form).backward()
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
        if step < schedule.steps:
            opt.step()
    final = {**curve[-1], "test_accuracy": accuracy(student, xt, yt, dtype), "teacher_test_accuracy": accuracy(teacher, xt, yt, dtype),
             "agreement": float((logits_of(student, xt, dtype).argmax(1) == logits_of(teacher, xt, dtype).argmax(1)).float().mean())}
    return {"curve": curve, "final": final}
