"""Run a check on several gloo processes on this machine (loopback only), for the vocabulary-parallel tests.

``run_ranks(check, world_size, tmp_path, *args)`` spawns ``world_size`` processes that join one
gloo group through a FileStore in ``tmp_path`` and call ``check(rank, world_size, *args)``; a
failing rank fails the test with its traceback (``torch.multiprocessing.spawn`` ends the others).
``timeout``: the group's collective timeout, and the bound on the whole run: a rank left waiting
in a collective fails the test within it instead of hanging it.
"""

from __future__ import annotations

import datetime
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

STARTUP_S = 60.0  # a process's start-up (importing torch) on a busy machine, beside the check's own time


def _worker(rank: int, world_size: int, store_file: str, check, args, timeout: float) -> None:
    torch.set_num_threads(1)
    store = dist.FileStore(store_file, world_size)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=timeout))
    try:
        check(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def run_ranks(check, world_size: int, tmp_path, *args, timeout: float = 120.0) -> None:
    """``check(rank, world_size, *args)`` on ``world_size`` processes of one gloo group, all done
    within ``timeout`` + ``STARTUP_S`` seconds (else the processes are killed and the test fails)."""
    store_file = str(tmp_path / f"store-{world_size}-{check.__name__}")
    context = mp.spawn(_worker, args=(world_size, store_file, check, args, timeout), nprocs=world_size, join=False)
    deadline = time.monotonic() + timeout + STARTUP_S
    while not context.join(timeout=max(0.1, deadline - time.monotonic())):
        if time.monotonic() >= deadline:
            for process in context.processes:
                process.kill()
            raise AssertionError(f"{check.__name__} on {world_size} ranks did not end within {timeout} s: a rank waits")


def single_process_group(tmp_path):
    """A one-process gloo group in this process (for gradcheck); destroy it with ``dist.destroy_process_group()``."""
    store = dist.FileStore(str(tmp_path / "store-1"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
