"""Run a check on several gloo processes on this machine (loopback only), for the vocabulary-parallel tests.

``run_ranks(check, world_size, tmp_path, *args)`` spawns ``world_size`` processes that join one
gloo group through a FileStore in ``tmp_path`` and call ``check(rank, world_size, *args)``; a
failing rank fails the test with its traceback (``torch.multiprocessing.spawn`` ends the others).
"""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _worker(rank: int, world_size: int, store_file: str, check, args) -> None:
    torch.set_num_threads(1)
    store = dist.FileStore(store_file, world_size)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=120))
    try:
        check(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def run_ranks(check, world_size: int, tmp_path, *args) -> None:
    """``check(rank, world_size, *args)`` on ``world_size`` processes of one gloo group."""
    store_file = str(tmp_path / f"store-{world_size}-{check.__name__}")
    mp.spawn(_worker, args=(world_size, store_file, check, args), nprocs=world_size, join=True)


def single_process_group(tmp_path):
    """A one-process gloo group in this process (for gradcheck); destroy it with ``dist.destroy_process_group()``."""
    store = dist.FileStore(str(tmp_path / "store-1"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
