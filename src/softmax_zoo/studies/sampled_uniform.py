"""Why the sampled-softmax LM with the uniform sampler ends near perplexity = vocabulary size.

    python -m softmax_zoo.studies.sampled_uniform [--steps 600] [--probe-every 100]
        [--probe-tokens 4096] [--results-dir results] [OVERRIDES ...]

Trains ``experiment=lm1b_sampled_uniform scale=cpu`` with :data:`RECORD_SETTINGS` (OVERRIDES are appended; the run record and
checkpoints go to a temporary folder, never into results/runs) through the normal training
pipeline (:func:`softmax_zoo.engine.run`, the same Trainer, optimiser and head), with a callback
that, before training and every ``--probe-every`` steps, measures on the first ``--probe-tokens``
validation tokens:

* the full-softmax NLL = mean(logsumexp_j o_j − o_t) and the sampled loss (the head's training
  objective, uniform draws) on the same positions;
* per bucket of words by training-count rank: the mean output bias, the mean norm of the output
  embedding rows, the mean and SD of the logits, the full-softmax mass on the bucket against the
  bucket's share of the validation tokens, and the bias gradient of the full softmax and of the
  sampled loss summed over the bucket (the push on the bucket each objective asks for);
* the share of the vocabulary never drawn as a negative so far, and the full-softmax mass on it.

It also checks that evaluation is the full softmax of the trained weights (``model.log_probs``
against ``log_softmax(h·Wᵀ + b)``) and counts accidental hits (a negative equal to its row's
target) over all of training. Writes ``<results_dir>/diagnostics/sampled_uniform_check.json`` (atomically) and its page
``<results_dir>/sampled_uniform.md`` (``python -m softmax_zoo.reports sampled_uniform`` rebuilds it from the JSON alone).
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader
from transformers import TrainerCallback

from ..cli_args import ArgumentError, Option, Parser, fail
from ..config import compose
from ..data.layout import IGNORE_INDEX
from ..engine import build_task, run
from ..files import write_text
from ..losses import Sampler
from ..models import evaluating
from ..provenance import measurement_provenance
from ..reports import sampled_uniform as page
from ..reports.sampled_uniform import COMMITTED_RECORD, RECORD_SETTINGS
from ..run_record import RunRecord
from ..tasks.lm import collate

MODULE = page.STUDY
BUCKETS = ((0, 10), (10, 100), (100, 1000), (1000, 10000), (10000, None))  # word-id (= count-rank) ranges


class CountingSampler(Sampler):
    """Wraps the head's sampler; counts each class's draws and the draws equal to their row's target."""

    def __init__(self, inner: Sampler, num_classes: int) -> None:
        self.inner, self.num_classes = inner, inner.num_classes
        self.drawn = torch.zeros(num_classes, dtype=torch.long)
        self.accidental_hits = 0
        self.draws = 0

    def refresh(self, weight):
        self.inner.refresh(weight)

    def log_prob(self, *args, **kwargs):
        return self.inner.log_prob(*args, **kwargs)

    def sample(self, hidden, weight, num_samples, exclude=None, bias=None):
        ids, log_q = self.inner.sample(hidden, weight, num_samples, exclude=exclude, bias=bias)
        if self.counting:
            self.drawn += torch.bincount(ids.flatten().cpu(), minlength=self.drawn.numel())
            self.draws += ids.numel()
            if exclude is not None:
                self.accidental_hits += int((ids == exclude[:, None]).sum())
        return ids, log_q

    counting = True  # False while a probe draws


def probe_positions(model, stream, tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Output-layer inputs (N, d) and targets (N,) of the first ``tokens`` labelled tokens of ``stream``."""
    hidden, labels, count = [], [], 0
    with evaluating(model):
        model.reset_eval_state()
        for batch in DataLoader(stream, batch_size=stream.batch_size, collate_fn=collate):
            h = model(batch["input_ids"], reset=batch["reset"])["hidden"]  # (B, T, d)
            keep = batch["labels"] != IGNORE_INDEX
            hidden.append(h[keep])
            labels.append(batch["labels"][keep])
            count += int(keep.sum())
            if count >= tokens:
                break
        model.reset_eval_state()
    return torch.cat(hidden)[:tokens], torch.cat(labels)[:tokens]


def bucket_slices(vocab_size: int) -> list[tuple[str, slice]]:
    return [(f"{lo}-{hi or vocab_size}", slice(lo, hi or vocab_size)) for lo, hi in BUCKETS if lo < vocab_size]


def measure(model, stream, tokens: int, sampler: CountingSampler, step: int) -> dict[str, Any]:
    """The numbers of the module docstring at the current weights."""
    head = model.head
    hidden, target = probe_positions(model, stream, tokens)  # (N, d), (N,)
    W, b = head.weight.detach(), head.bias.detach()
    logits = hidden @ W.T + b  # (N, V)
    lse = torch.logsumexp(logits, 1)
    o_t = logits.gather(1, target[:, None])[:, 0]
    probs = torch.softmax(logits, 1)
    with torch.no_grad():
        eval_gap = float((model.log_probs(hidden) - (logits - lse[:, None])).abs().max())

    # Bias gradients of the two objectives on the same positions (d loss / d b_j, summed over rows).
    # Mean over rows of d loss / d b_j = d loss / d o_j for the full softmax (eval mode) and the sampled loss.
    grads, rng = {}, torch.get_rng_state()
    sampler.counting = False  # probe draws are not training draws; the RNG is restored after them
    for mode in ("full", "sampled"):
        head.train(mode == "sampled")
        head.bias.grad = None
        loss = head(hidden, target)
        loss.backward()
        grads[mode] = head.bias.grad.detach().clone()
        grads[f"{mode}_loss"] = loss.item()
    sampler.counting = True
    torch.set_rng_state(rng)
    head.train()
    head.zero_grad(set_to_none=True)

    never = sampler.drawn == 0
    target_share = torch.bincount(target, minlength=W.shape[0]).double() / len(target)
    buckets = {}
    for name, s in bucket_slices(W.shape[0]):
        lg = logits[:, s]
        buckets[name] = {
            "bias_mean": float(b[s].mean()),
            "row_norm_mean": float(W[s].norm(dim=1).mean()),
            "logit_mean": float(lg.mean()),
            "logit_sd": float(lg.std()),
            "model_mass": float(probs[:, s].sum(1).mean()),
            "token_share": float(target_share[s].sum()),
            "full_bias_grad": float(grads["full"][s].sum()),
            "sampled_bias_grad": float(grads["sampled"][s].sum()),
            "nll_of_its_tokens": float((lse - o_t)[(target >= s.start) & (target < s.stop)].mean()),
        }
    return {
        "step": step,
        "full_nll": float((lse - o_t).mean()),
        "full_perplexity": math.exp(float((lse - o_t).mean())),
        "sampled_loss": grads["sampled_loss"],
        "logsumexp_mean": float(lse.mean()),
        "target_logit_mean": float(o_t.mean()),
        "eval_vs_full_softmax_max_abs": eval_gap,
        "never_drawn_share_of_vocab": float(never.double().mean()),
        "mass_on_never_drawn": float(probs[:, never].sum(1).mean()),
        "buckets": buckets,
    }


class Probe(TrainerCallback):
    def __init__(self, stream, every: int, tokens: int) -> None:
        self.stream, self.every, self.tokens = stream, every, tokens
        self.points: list[dict[str, Any]] = []
        self.sampler: CountingSampler | None = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.sampler = CountingSampler(model.head.sampler, model.head.num_classes)
        model.head.sampler = self.sampler
        self.points.append(measure(model, self.stream, self.tokens, self.sampler, 0))

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step % self.every == 0:
            self.points.append(measure(model, self.stream, self.tokens, self.sampler, state.global_step))


PARSER = Parser(f"python -m {MODULE}", [
    Option("steps", 600, "training steps", minimum=1),
    Option("probe_every", 100, "steps between probes", minimum=1),
    Option("probe_tokens", 4096, "validation tokens probed", minimum=1),
    Option("results_dir", "results", "folder receiving diagnostics/sampled_uniform_check.json and sampled_uniform.md"),
], rest="overrides", dashed=True, max_positional=0)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = PARSER.parse(argv)
    except ArgumentError as e:
        return fail(PARSER, e)
    scratch = tempfile.mkdtemp(prefix="sampled_uniform_")
    cfg = study_config(args["steps"], scratch, args.rest)

    stream = build_task(cfg).eval_datasets["validation"]
    probe = Probe(stream, args["probe_every"], args["probe_tokens"])
    record = RunRecord.of(run(cfg, callbacks=[probe]))
    s = probe.sampler
    result = {
        "config": {"steps": args["steps"], "num_samples": int(cfg.loss.num_samples), "vocab_size": int(record.info("vocab_size")),
                   "batch_tokens": int(cfg.train.batch_size * cfg.task.bptt), "probe_tokens": args["probe_tokens"]},
        "threshold_frequency": cfg.loss.num_samples / (record.info("vocab_size") - 1),
        "accidental_hits": s.accidental_hits,
        "training_draws": s.draws,
        "final_val_perplexity_full_split": record.metrics["val/perplexity"],
        "final_train_loss": record.train_loss["loss"][-1],
        "points": probe.points,
        **measurement_provenance(f"python -m {MODULE}", argv),  # the command line, the code's commit, the machine
    }
    result["committed_record"] = compare_with_record(record.train_loss, COMMITTED_RECORD)
    write_text(Path(args["results_dir"]) / page.MEASUREMENT, json.dumps(result, indent=1) + "\n")
    page.build(args["results_dir"])
    return 0


def study_config(steps: int, scratch: str, overrides: list[str] = ()):
    """The uniform arm as :data:`COMMITTED_RECORD` trained it (:data:`RECORD_SETTINGS`), for ``steps`` steps, into ``scratch``."""
    return compose([
        "experiment=lm1b_sampled_uniform", "scale=cpu", *RECORD_SETTINGS, f"train.max_steps={steps}", "train.save_steps=0",
        "task.curve_every=0", "task.eval_splits=[validation]", f"results_dir={scratch}", f"output_dir={scratch}/ckpt",
        *overrides,
    ])


def compare_with_record(train_loss: dict[str, list], path: Path) -> dict[str, Any] | None:
    """The committed run's curve and the largest |Δ train loss| over the logged steps both runs have."""
    if not path.exists():
        return None
    committed = RunRecord.load(path)
    theirs = dict(zip(committed.train_loss["step"], committed.train_loss["loss"]))
    shared = [(theirs[step], loss) for step, loss in zip(train_loss["step"], train_loss["loss"]) if step in theirs]
    return {
        "path": str(path),
        "test_perplexity": committed.metrics["test/perplexity"],
        "curve": [[h["step"], h["val/curve_perplexity"]] for h in committed.history if "val/curve_perplexity" in h],
        "train_loss_first_last": [committed.train_loss["loss"][0], committed.train_loss["loss"][-1]],
        "max_abs_train_loss_diff": max(abs(a - b) for a, b in shared) if shared else None,
        "shared_logged_steps": len(shared),
    }


if __name__ == "__main__":
    sys.exit(main())
