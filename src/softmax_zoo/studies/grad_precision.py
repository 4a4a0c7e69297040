"""The precision of cross-entropy's logit gradient at confident predictions, per head and precision.

    python -m softmax_zoo.studies.grad_precision [classes=32000] [rows=4] [seeds=5] [k=20] [chunk_size=2]
        [target_probs=0.9,0.99,0.999,0.9999,0.99999,0.999999] [tail_scale=1.0]
        [out=results/diagnostics/grad_precision.json]

"A Fix for Softmax and Cross-Entropy" (softmax collapse): the target's gradient q_t − 1 loses its
digits when q_t rounds towards 1; the softplus form −σ(a), a = logsumexp_{j≠t}(z_j − z_t), keeps
them. Here each row of logits has a target of probability p_t (the row's other C − 1 logits a
Gaussian tail of SD ``tail_scale``, the target set to ln(p_t / (1 − p_t)) + logsumexp(tail)), and
every path's logit gradient is compared with its float64 value: the target's entry (relative
error) and the whole row (relative L2 error), in float32, and in bfloat16 and float16 autocast.

The logits are rounded to numbers bfloat16 and float16 both hold exactly (a model's logits under
autocast are such numbers), so every error is the loss's arithmetic and the gradient's own
rounding, not the rounding of its input; the reference is the float64 gradient at those logits
(:func:`reference_grad`). The gradient is read through the linear layer: hidden = I_N (N, N) and
weight = Z^T (C, N), so hidden @ weight.T is Z exactly in any precision and ∂L/∂weight = G^T (one
nonzero term a sum, exact). Paths: torch's ``F.cross_entropy`` on the materialised logits,
torch's ``F.linear_cross_entropy`` (where this torch has it), and ``softmax_zoo.losses.
linear_cross_entropy`` with the losses softmax, stable_softmax and sparse_softmax (k), whole
(chunk_size None) and ``chunk_size`` rows at a time. Reduction "sum", so G = ∂ℓ_i/∂z_i per row.
The sparse head's reference is its own gradient (softmax over Ω_k minus onehot): the tail is
nudged so that no logit outside Ω_k ties the k-th largest.

Writes ``out`` (JSON, atomically): per (path, precision, p_t) the rows' relative errors, with the
settings, the sparse head's backward, machine, CPU capability, versions, date, command and the
code's commit (``git``). ``reports/grad_precision.py`` makes the page of it.
"""

from __future__ import annotations

import json
import logging
import math
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from ..cli_args import ArgumentError, Option, Parser, fail
from ..files import write_text
from ..losses import linear_cross_entropy
from ..losses.methods.sparse import SparseSoftmaxHead
from ..provenance import measurement_provenance

log = logging.getLogger(__name__)

COMMAND = "python -m softmax_zoo.studies.grad_precision"
TARGET_PROBS = [0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999]
PRECISIONS = ("float32", "bfloat16", "float16")  # float32: no autocast; the others: CPU autocast to that dtype
PARSER = Parser(COMMAND, [
    Option("classes", 32000, "C, classes a row", minimum=2),
    Option("rows", 4, "rows of logits per seed and target probability", minimum=1),
    Option("seeds", 5, "generator seeds 0..seeds-1 (each draws its own tails)", minimum=1),
    Option("k", 20, "the sparse head's support size", minimum=1),
    Option("chunk_size", 2, "rows a chunk in the chunked paths", minimum=1),
    Option("target_probs", TARGET_PROBS, "the target's probabilities p_t, each in (0, 1)"),
    Option("tail_scale", 1.0, "SD of the non-target logits", minimum=0.0),
    Option("out", "results/diagnostics/grad_precision.json", "the JSON written"),
], max_positional=0)


def exact_in_half(z: torch.Tensor) -> torch.Tensor:
    """``z`` rounded to values bfloat16 and float16 both represent (float64 out)."""
    return z.to(torch.bfloat16).to(torch.float16).to(torch.float64)


def logits(target_prob: float, rows: int, classes: int, *, k: int, tail_scale: float,
           generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(Z (rows, C) float64, target (rows,)): target logits ln(p_t / (1 − p_t)) + logsumexp(tail) over a Gaussian tail,
    all exact in bfloat16 and float16, no tail logit outside the k − 1 largest equal to the smallest of them."""
    if not 0 < target_prob < 1:
        raise ValueError(f"target_probs must be in (0, 1), got {target_prob}")
    if not 1 <= k < classes:
        raise ValueError(f"k must be in [1, classes={classes}), got {k}")
    target = torch.randint(classes, (rows,), generator=generator)
    z = exact_in_half(tail_scale * torch.randn(rows, classes, generator=generator, dtype=torch.float64))
    onehot = F.one_hot(target, classes).bool()
    tail = z.masked_fill(onehot, -math.inf)
    if k > 1:  # Ω_k = the target and the k − 1 largest tail logits: push the tail logits tying the smallest of them below it
        order = tail.argsort(dim=1, descending=True, stable=True)
        edge = tail.gather(1, order[:, k - 2:k - 1])  # (rows, 1) the smallest tail logit in Ω_k
        ulp = torch.exp2(torch.floor(torch.log2(edge.abs().clamp_min(2.0 ** -14))) - 7)  # bfloat16's spacing at it
        outside = torch.ones_like(onehot).scatter_(1, order[:, :k - 1], False) & ~onehot
        z = torch.where(outside & (z >= edge), exact_in_half(edge - ulp).expand_as(z), z)
    tail = z.masked_fill(onehot, -math.inf)
    z_t = math.log(target_prob / (1 - target_prob)) + torch.logsumexp(tail, dim=1)
    z = z.scatter(1, target[:, None], exact_in_half(z_t)[:, None])
    return z, target


def support(z: torch.Tensor, k: int | None) -> torch.Tensor:
    """(rows, C) bool: Ω_k, the k largest logits a row (every class for k None)."""
    if k is None:
        return torch.ones_like(z, dtype=torch.bool)
    return torch.zeros_like(z, dtype=torch.bool).scatter_(1, z.topk(k, dim=1).indices, True)


def reference_grad(z: torch.Tensor, target: torch.Tensor, k: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(G (rows, C), G's target entries (rows,)) in float64: softmax over Ω_k (all classes for k None) − onehot(t);
    the target's entry as −exp(logsumexp_{j∈Ω_k, j≠t} z_j − logsumexp_{Ω_k} z), which loses no digit near p_t = 1."""
    z = z.to(torch.float64)
    inside = support(z, k)
    if not inside.gather(1, target[:, None]).all():
        raise ValueError("a target outside Ω_k: raise its probability or k")
    masked = z.masked_fill(~inside, -math.inf)
    lse = torch.logsumexp(masked, dim=1, keepdim=True)
    others = masked.scatter(1, target[:, None], -math.inf)
    g_t = -torch.exp(torch.logsumexp(others, dim=1) - lse[:, 0])
    g = torch.exp(masked - lse).scatter(1, target[:, None], g_t[:, None])
    return g, g_t


def torch_cross_entropy(hidden, weight, target, **_):
    return F.cross_entropy(F.linear(hidden, weight), target, reduction="sum")


def torch_linear_cross_entropy(hidden, weight, target, **_):
    return F.linear_cross_entropy(hidden, weight, target, reduction="sum")


def ours(loss: str, chunked: bool) -> Callable[..., torch.Tensor]:
    """``linear_cross_entropy`` with ``loss``, whole or ``chunk_size`` rows at a time (k: the sparse head's)."""
    def run(hidden, weight, target, *, k: int, chunk_size: int) -> torch.Tensor:
        extra = {"k": k} if loss == "sparse_softmax" else {}
        return linear_cross_entropy(hidden, weight, target, loss=loss, chunk_size=chunk_size if chunked else None,
                                    reduction="sum", **extra)
    return run


def paths() -> dict[str, tuple[Callable[..., torch.Tensor], str | None]]:
    """name -> (the loss of hidden, weight, target; the loss whose gradient is its reference: "sparse" or None)."""
    found: dict[str, tuple[Callable[..., torch.Tensor], str | None]] = {"torch F.cross_entropy": (torch_cross_entropy, None)}
    if hasattr(F, "linear_cross_entropy"):
        found["torch F.linear_cross_entropy"] = (torch_linear_cross_entropy, None)
    for loss in ("softmax", "stable_softmax", "sparse_softmax"):
        for chunked in (False, True):
            found[f"{loss}{' chunked' if chunked else ''}"] = (ours(loss, chunked), "sparse" if loss == "sparse_softmax" else None)
    return found


def logit_grad(loss_fn: Callable[..., torch.Tensor], z: torch.Tensor, target: torch.Tensor, precision: str,
               **options: Any) -> torch.Tensor:
    """∂loss/∂Z (rows, C) float64 of ``loss_fn`` at Z, through hidden = I and weight = Z^T, in ``precision``."""
    if precision not in PRECISIONS and precision != "float64":
        raise ValueError(f"precision must be one of {PRECISIONS + ('float64',)}, got {precision!r}")
    dtype = torch.float64 if precision == "float64" else torch.float32
    hidden = torch.eye(z.shape[0], dtype=dtype)
    weight = z.T.to(dtype).contiguous().requires_grad_(True)  # (C, rows)
    cast = getattr(torch, precision)
    context = torch.autocast("cpu", dtype=cast) if precision in ("bfloat16", "float16") else nullcontext()
    with context:
        loss = loss_fn(hidden, weight, target, **options)
    loss.backward()
    return weight.grad.T.to(torch.float64)


def errors(g: torch.Tensor, ref: torch.Tensor, ref_t: torch.Tensor, target: torch.Tensor) -> tuple[list[float], list[float]]:
    """(the target entry's relative error, the row's relative L2 error) per row."""
    g_t = g.gather(1, target[:, None])[:, 0]
    target_rel = ((g_t - ref_t).abs() / ref_t.abs()).tolist()
    row_rel = (torch.linalg.vector_norm(g - ref, dim=1) / torch.linalg.vector_norm(ref, dim=1)).tolist()
    return target_rel, row_rel


def sparse_backward(k: int, classes: int) -> str:
    """"sparse" where the sparse head's backward takes its gradient's k + 1 nonzeros a row (sparse_linear.py), else "dense"."""
    return "sparse" if SparseSoftmaxHead(1, classes, k=k).row_loss().has_sparse_grad else "dense"


def measure(*, classes: int, rows: int, seeds: int, k: int, chunk_size: int, target_probs: Sequence[float],
            tail_scale: float) -> dict[str, Any]:
    """Every path's errors against float64 at each p_t, precision and seed.

    Returns:
        ``{"rows": [{path, precision, target_prob, realised_target_prob, target_rel, row_rel}, ...], "paths",
        "precisions", "settings", "sparse_backward"}``; target_rel, row_rel and realised_target_prob: one value per
        row of every seed.
    """
    if k >= classes:
        raise ValueError(f"k must be below classes={classes}, got {k}")
    found = paths()
    out: dict[tuple[str, str, float], dict[str, list[float]]] = {}
    for p in target_probs:
        for seed in range(seeds):
            z, target = logits(p, rows, classes, k=k, tail_scale=tail_scale, generator=torch.Generator().manual_seed(seed))
            refs = {None: reference_grad(z, target), "sparse": reference_grad(z, target, k)}
            realised = (1 + refs[None][1]).tolist()  # the target's probability at the rounded logits
            for name, (fn, ref) in found.items():
                for precision in PRECISIONS:
                    g = logit_grad(fn, z, target, precision, k=k, chunk_size=chunk_size)
                    t_rel, r_rel = errors(g, *refs[ref], target)
                    cell = out.setdefault((name, precision, p), {"realised_target_prob": [], "target_rel": [], "row_rel": []})
                    cell["realised_target_prob"] += realised
                    cell["target_rel"] += t_rel
                    cell["row_rel"] += r_rel
    return {
        "rows": [{"path": name, "precision": precision, "target_prob": p, **cell} for (name, precision, p), cell in out.items()],
        "paths": list(found), "precisions": list(PRECISIONS),
        "torch_linear_cross_entropy": hasattr(F, "linear_cross_entropy"),
        "sparse_backward": sparse_backward(k, classes),
        "settings": {"classes": classes, "rows": rows, "seeds": seeds, "k": k, "chunk_size": chunk_size,
                     "target_probs": list(target_probs), "tail_scale": tail_scale},
    }


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        options = PARSER.parse(argv).options
        out = Path(options.pop("out"))
        result = measure(**options)
    except (ArgumentError, ValueError) as e:
        return fail(PARSER, ArgumentError(str(e)))
    result.update(measurement_provenance(COMMAND, argv))
    write_text(out, json.dumps(result, indent=1) + "\n")
    log.info("wrote %s (%d cells, sparse backward: %s)", out, len(result["rows"]), result["sparse_backward"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
