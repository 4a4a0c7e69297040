"""A page built with wandb=offline logs its figures and text to one offline run of job type "report"."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .wandb_offline import run_summary

REPO = Path(__file__).resolve().parents[2]


def test_page_figures_go_to_an_offline_wandb_run(tmp_path):
    out = tmp_path / "pages"
    out.mkdir()
    command = [sys.executable, "-m", "softmax_zoo.reports", "lm1b", f"results_dir={REPO / 'results'}", f"out={out}", "wandb=offline"]
    env = {**os.environ, "WANDB_MODE": "offline"}
    subprocess.run(command, cwd=tmp_path, env=env, check=True, capture_output=True, timeout=120)  # wandb writes ./wandb
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    images = sorted(p.name for p in runs[0].glob("files/media/images/**/*.png"))
    assert images and all(name.startswith("lm1b") for name in images), images
    assert list(runs[0].glob("files/media/html/**/*.html")), "the page's markdown was not logged"
    run = run_summary(next(runs[0].glob("run-*.wandb")))
    assert (run["name"], run["group"], run["job_type"]) == ("lm1b", "reports", "report")
