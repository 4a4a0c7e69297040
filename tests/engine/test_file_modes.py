"""Every file the atomic writer makes (records, predictions, pages, figures) gets the mode a plain write gives.

A temporary file from ``tempfile.mkstemp`` is owner-only (0600); renamed onto a record as it is,
it would hide the record from the group on a shared results folder. The expected mode is that of
a file written with ``open(path, "w")`` beside it, under the same umask.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from softmax_zoo import files, records
from softmax_zoo.reports._pages import line_plot, write_page
from softmax_zoo.reports._sweep import build_sweep


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def plain_write_mode(folder: Path) -> int:
    """The mode of a file written with ``open(path, "w")`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    probe = folder / "plain.txt"
    with open(probe, "w") as f:
        f.write("plain")
    return mode(probe)


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_file_mode_is_the_umasks():
    mask = umask()
    assert files.file_mode() == 0o666 & ~mask
    assert umask() == mask  # reading it left it as it was


def test_importing_the_writer_leaves_the_umask_alone():
    """Nothing at import: the umask is read on the first write, not when the module loads."""
    code = ("import os, sys; os.umask(0o027); import softmax_zoo.files, softmax_zoo.records; "
            "m = os.umask(0); sys.exit(0 if m == 0o027 and softmax_zoo.files.file_mode.cache_info().currsize == 0 else 1)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_records_and_predictions_get_a_plain_writes_mode(tmp_path):
    expected = plain_write_mode(tmp_path)
    record = {"experiment": "exp", "run_name": "run", "seed": 0, "metrics": {"test/micro_f1": 0.5},
              "job": {"overrides": ["seed=0"]}, "git": {"commit": "abc1234", "dirty": False}}
    written = [
        records.write_record(record, tmp_path / "runs"),
        records.write_predictions([{"index": 0}], tmp_path / "runs", "exp", "run", "test"),
        files.write_text(tmp_path / "page.md", "text"),
        files.atomic_write(tmp_path / "blob.pt", lambda tmp: tmp.write_bytes(b"\0")),
    ]
    assert {p.name: mode(p) for p in written} == {p.name: expected for p in written}
    assert expected != 0o600 or umask() & 0o077 == 0o077  # 0600 only under an owner-only umask


def test_pages_claims_figures_and_sweeps_get_a_plain_writes_mode(tmp_path):
    expected = plain_write_mode(tmp_path)
    write_page(tmp_path, "page", "# A page\n", [{"id": "c", "claim": "x", "paper": "1", "ours": "1", "verdict": "holds", "source": "page",
                                             "form": {"kind": "descriptive", "cue": "x"}}])
    with line_plot(tmp_path / "figure.png", xlabel="x", ylabel="y", title="t") as ax:
        ax.plot([0, 1], [0, 1], label="line")
    folder = tmp_path / "runs" / "sweep"
    folder.mkdir(parents=True)
    for k in (1, 2):
        (folder / f"r{k}.json").write_text(json.dumps({"run_name": f"r{k}", "metrics": {"test/micro_f1": 0.1 * k},
                                                        "job": {"overrides": [f"loss.k={k}"]}}))
    build_sweep(str(folder), out=tmp_path / "sweeps")
    written = [tmp_path / "page.md", tmp_path / "claims.md", tmp_path / "figure.png", *sorted((tmp_path / "sweeps").iterdir())]
    assert len(written) == 5
    assert {p.name: mode(p) for p in written} == {p.name: expected for p in written}
