"""The collapse/cancellation study at toy size, and its page (softmax_zoo.studies.stable, reports/stable.py)."""

from __future__ import annotations

import json

from softmax_zoo.reports import stable as page
from softmax_zoo.studies.stable import Setting, run_all

TINY = Setting(modulus=11, embed=8, hidden=16, collapse_steps=20, teacher_steps=20, distill_steps=10, log_every=5, eval_every=10)


def test_study_resumes_and_builds_its_page(tmp_path):
    runs = tmp_path / "runs" / "stable"
    written = run_all(runs, seeds=2, setting=TINY)
    assert len(written) == 2 * (4 + 8)
    assert run_all(runs, seeds=2, setting=TINY) == []  # a rerun skips every finished record
    equal = [json.loads(p.read_text()) for p in runs.glob("cancellation_equal_stable_*.json")]
    assert all(p["logit_grad_norm"] == 0 and p["drift"] == 0 and p["identical_logits"] for r in equal for p in r["curve"])
    (tmp_path / "claims.md").write_text("")
    page.build(tmp_path)
    text = (tmp_path / "stable.md").read_text()
    assert "## Softmax collapse" in text and (tmp_path / "stable_drift.png").is_file()
    claims = (tmp_path / "claims.md").read_text()
    assert "| stable-collapse |" in claims and "| stable-cancellation |" in claims
