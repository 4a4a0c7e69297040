"""The stable page's claims rows as data, from hand-made records of the toy study."""

from __future__ import annotations

from softmax_zoo.reports import stable
from softmax_zoo.run_record import RunRecord


def cancellation_run(form: str, seed: int, drift: float, dirty_paths=()) -> RunRecord:
    config = {"study": "cancellation", "start": "equal", "dtype": "float32", "form": form, "seed": seed, "setting": {"distill_steps": 10}}
    return RunRecord.of({"seed": seed, "config": config, "metrics": {"drift": drift}, "history": [{"step": 0, "logit_grad_norm": drift}],
                         "git": {"commit": "0123456789", "dirty": bool(dirty_paths), "dirty_paths": list(dirty_paths)}})


def test_a_row_with_a_dirty_run_carries_the_note_and_a_clean_row_does_not():
    runs = [cancellation_run("standard", s, 1e-6 * (s + 1), ["src/softmax_zoo/losses/methods/stable.py"] * (s == 0)) for s in range(3)]
    runs += [cancellation_run("stable", s, 0.0) for s in range(3)]
    row = next(r for r in stable.claims(runs) if r["id"] == "stable-cancellation")
    assert row["dirty"] == "rests on 1 of 6 records made with uncommitted changes (src/softmax_zoo/losses/methods/stable.py)"
    runs[0] = cancellation_run("standard", 0, 1e-6)
    assert next(r for r in stable.claims(runs) if r["id"] == "stable-cancellation")["dirty"] == ""


def test_arms_of_one_seed_are_compared_paired_not_by_welch():
    """Between-seed spread 10x the per-seed gap: the paired t over seeds decides, Welch over the two arms would not."""
    runs = [cancellation_run("standard", s, 10.0 * (s + 1) + 1.0 + 0.01 * s) for s in range(3)]
    runs += [cancellation_run("stable", s, 10.0 * (s + 1)) for s in range(3)]
    verdict = next(r for r in stable.claims(runs) if r["id"] == "stable-cancellation")["verdict"]
    assert verdict.kind.value == "supported"
    assert verdict.data["d"].method.startswith("paired t")  # not Welch
