"""Evaluation: smoke runs on a subset of each split (``train.eval_subset``), and one process evaluates under DDP."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys

import pytest
import torch

from softmax_zoo import engine
from softmax_zoo.data.lm_stream import LMStream
from softmax_zoo.data.seq2seq import Seq2SeqDataset
from softmax_zoo.tasks.base import first_examples
from softmax_zoo.tasks.lm import FirstRows, collate
from softmax_zoo.tasks.seq2seq import first_pairs


def test_smoke_evaluates_the_first_examples_and_the_record_says_so(make_cfg, caplog):
    cfg = make_cfg("scale=smoke", "task.n_validation=300", "train.eval_subset=200")
    with caplog.at_level(logging.INFO, logger="softmax_zoo.engine"):
        record = engine.run(cfg)
    assert record["config"]["train"]["eval_subset"] == 200 == make_cfg("scale=smoke").train.eval_subset
    assert "validation (" in caplog.text and "the first 200 of 300 examples, train.eval_subset=200" in caplog.text
    assert record["data"]["examples"]["validation"] == 300  # the split as prepared; the metrics are on 200

    task = engine.build_task(cfg)
    by_hand = task.evaluate(task.model, "validation", first_examples(task.eval_datasets["validation"], 200))
    untrained = engine.evaluate_splits(task, task.model, engine.evaluation_datasets(task, 200), on_main=True)[0]
    assert untrained["val/nll"] == by_hand.metrics["val/nll"]
    assert engine.evaluation_datasets(task, None)["validation"] is task.eval_datasets["validation"]
    with pytest.raises(ValueError, match="train.eval_subset must be an integer >= 1 or null, got 0"):
        engine.evaluation_datasets(task, 0)


def test_lm_subset_is_the_first_rows_in_whole_batches(tmp_path):
    corpus = tmp_path / "valid.txt"
    corpus.write_text("".join(" ".join(str(i + j) for j in range(1, 9)) + "\n" for i in range(60)))
    stream = LMStream([corpus], lambda line: [int(w) for w in line.split()], eos_id=0, batch_size=4, bptt=3)
    first = FirstRows(stream, 5)  # 5 rows: two batches of 4
    rows = list(first)
    assert len(rows) == len(first) == 8 < len(stream)
    for a, b in zip(rows, list(stream)[:8]):
        assert all(torch.equal(a[k], b[k]) for k in ("input_ids", "labels", "reset"))
    assert collate(rows[:4])["input_ids"].shape == (4, 3)
    assert len(FirstRows(stream, 10**6)) == len(stream)


def test_seq2seq_subset_keeps_the_first_pairs_whole():
    data = Seq2SeqDataset([[1, 2], [3], [4, 5, 6]], [[7], [8], [9]], ["a", "b", "c"], ["A", "B", "C"])
    first = first_pairs(data, 2)
    assert (first.source_ids, first.target_ids, first.references, first.sources) == ([[1, 2], [3]], [[7], [8]], ["a", "b"], ["A", "B"])
    assert len(first_pairs(data, 10)) == 3


def test_only_the_main_process_evaluates(make_cfg, caplog):
    task = engine.build_task(make_cfg("scale=smoke"))
    called = []
    task.evaluate = lambda *args: called.append(args)
    with caplog.at_level(logging.INFO, logger="softmax_zoo.engine"):
        assert engine.evaluate_splits(task, task.model, task.eval_datasets, on_main=False) is None
    assert called == [] and "evaluation runs on the main process (rank 0) only" in caplog.text


@pytest.mark.slow
def test_two_gloo_processes_record_the_metrics_of_one(tmp_path):
    """torchrun with 2 CPU processes and lr 0 (the weights stay those of the seed) gives the metrics of 1 process; ~40 s."""
    common = ["scale=smoke", "train.lr=0.0", "task.n_validation=300", "train.eval_subset=250"]
    env = {**os.environ, "WANDB_MODE": "disabled", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}

    def launch(name: str, *prefix: str) -> dict:
        out = tmp_path / name
        cmd = [sys.executable, *prefix, "-m", "softmax_zoo.train", *common, f"results_dir={out / 'r'}",
               f"output_dir={out / 'c'}", f"hydra.run.dir={out / 'h'}"]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        (record,) = (out / "r" / "runs").rglob("*.json")
        return {"record": json.loads(record.read_text()), "output": done.stdout + done.stderr}

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    two = launch("two", "-m", "torch.distributed.run", "--nproc_per_node=2", f"--master_port={port}")
    one = launch("one")
    assert two["record"]["device"]["world_size"] == 2 and one["record"]["device"]["world_size"] == 1
    metrics = lambda r: {k: v for k, v in r["metrics"].items() if "per_s" not in k}  # noqa: E731
    assert metrics(two["record"]) == metrics(one["record"]) and "val/micro_f1" in metrics(one["record"])
    assert two["output"].count("evaluation runs on the main process (rank 0) only") == 1
    assert two["output"].count("the first 250 of 300 examples") == 1  # validation evaluated once, on rank 0
