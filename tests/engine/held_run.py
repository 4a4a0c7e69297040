"""``python -m softmax_zoo.train`` that holds one optimiser step, so that a test can signal a run at a known step.

    python tests/engine/held_run.py <folder> <step> <overrides...>   (or under torchrun)

After optimiser step ``<step>``, each process writes its process id to ``<folder>/rank<r>.pid`` and
waits (at most :data:`WAIT_S` seconds) until ``<folder>/go`` exists: the test signals the processes
it chooses, then writes ``go``. A run that never reaches ``<step>`` at its end (a resumed one) does
not wait. Everything else is the entry point as a user runs it: its log, its exit code.
:func:`wait_for` waits for the pid files (tests/engine/test_interrupt.py).
"""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
import time
from pathlib import Path

from transformers import TrainerCallback

WAIT_S = 120


class HoldStep(TrainerCallback):
    """Write this process's id after optimiser step ``step``, then wait for ``folder/go``."""

    def __init__(self, folder: Path, step: int) -> None:
        self.folder, self.step = folder, step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step != self.step:
            return control
        (self.folder / f"rank{args.process_index}.pid").write_text(str(os.getpid()))
        deadline = time.monotonic() + WAIT_S
        while not (self.folder / "go").exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {self.folder / 'go'} within {WAIT_S} s")
            time.sleep(0.05)
        return control


def wait_for(paths: list[Path], child: subprocess.Popen, timeout: float) -> None:
    """Wait until every one of ``paths`` exists; fail with the child's output if it ends first or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            out, _ = child.communicate()
            raise AssertionError(f"{[p.name for p in paths]} never appeared (exit {child.returncode}):\n{out[-8000:]}")
        time.sleep(0.1)


if __name__ == "__main__":
    from softmax_zoo import engine

    folder, step, overrides = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    run = engine.run
    engine.run = lambda cfg, callbacks=(): run(cfg, callbacks=[*callbacks, HoldStep(folder, step)])
    sys.argv = ["softmax_zoo.train", *overrides]
    runpy.run_module("softmax_zoo.train", run_name="__main__", alter_sys=True)
