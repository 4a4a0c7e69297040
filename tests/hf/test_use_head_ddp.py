"""use_head under DistributedDataParallel: 2 gloo processes, one SGD step each on its own batch.

DDP averages the gradients, so both ranks must end with equal parameters, equal to one process
stepping on the mean of the two batches' losses computed with the model's own loss.
"""

from __future__ import annotations

import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from softmax_zoo.hf import use_head

from .conftest import batch, make_model

LR = 0.5
WORLD = 2


def sgd_step(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= LR * p.grad


def rank_main(rank: int, out_dir: str) -> None:
    """One rank: a chunked softmax head on the tiny Llama, one step on batch(seed=10 + rank)."""
    torch.set_num_threads(1)
    # A file store, not a TCP port: no port to pick, none shared with other jobs on the machine.
    dist.init_process_group("gloo", init_method=f"file://{out_dir}/store", rank=rank, world_size=WORLD,
                            timeout=datetime.timedelta(seconds=60))
    try:
        model = use_head(make_model("llama"), "softmax", chunk_size=5).train()
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        ids, labels = batch("llama", seed=10 + rank)
        sgd_step(ddp, ddp(input_ids=ids, labels=labels).loss)
        path = os.path.join(out_dir, f"rank{rank}.pt")
        torch.save({n: p.detach() for n, p in model.named_parameters()}, path + ".tmp")
        os.replace(path + ".tmp", path)  # whole or absent: the test reads it while the rank may still be exiting
    finally:
        dist.destroy_process_group()


def own_loss(model, ids, labels):
    """The model's causal loss in float64 (transformers' own casts the logits to float32)."""
    logits = model(input_ids=ids).logits[:, :-1]  # (B, T - 1, C): position t predicts t + 1
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))


def run_ranks(out_dir, deadline_s: float = 120.0) -> None:
    """Spawn the ranks and wait until both have saved their parameters (a rank's error is raised).

    A rank can block in gloo's teardown after its work is saved (seen with the file store); the
    saved results decide, and such a straggler is ended rather than left to hang the suite."""
    ctx = mp.spawn(rank_main, args=(str(out_dir),), nprocs=WORLD, join=False)
    deadline = time.monotonic() + deadline_s
    saved = lambda: all((out_dir / f"rank{r}.pt").is_file() for r in range(WORLD))  # noqa: E731
    while not ctx.join(timeout=1) and not saved() and time.monotonic() < deadline:
        pass
    for process in ctx.processes:
        if process.is_alive():
            process.terminate()
            process.join(5)
    assert saved(), f"the {WORLD} ranks did not save their parameters within {deadline_s:g} s"


def test_ddp_ranks_end_with_equal_parameters(tmp_path):
    run_ranks(tmp_path)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(WORLD)]
    ref = make_model("llama")
    sgd_step(ref, sum(own_loss(ref, *batch("llama", seed=10 + r)) for r in range(WORLD)) / WORLD)
    for n, p in ref.named_parameters():
        torch.testing.assert_close(ranks[0][n], ranks[1][n], rtol=0, atol=0, msg=n)
        torch.testing.assert_close(ranks[0][n], p.detach(), rtol=0, atol=1e-12, msg=n)
