"""The BPTT stream: every token once per epoch across workers and ranks, rows that continue."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils.data import DataLoader

from softmax_zoo.data.layout import IGNORE_INDEX
from softmax_zoo.data.lm_stream import LMStream, byte_ranges, read_lines
from softmax_zoo.tasks.lm import collate

EOS = 0


def encode(line: str) -> list[int]:
    return [int(w[1:]) for w in line.split()]


@pytest.fixture
def corpus(tmp_path):
    """Two files of sentences of distinct word ids w1..wN (lengths 1..11), with a blank line."""
    gen = torch.Generator().manual_seed(0)
    next_id, files = 1, []
    for f in range(2):
        lines = []
        for _ in range(150 + 37 * f):
            n = int(torch.randint(1, 12, (1,), generator=gen))
            lines.append(" ".join(f"w{i}" for i in range(next_id, next_id + n)))
            next_id += n
        lines.insert(5, "")
        path = tmp_path / f"part{f}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files.append(path)
    return files, next_id - 1, 150 + 187


def batches(stream: LMStream, workers: int) -> list[dict[str, torch.Tensor]]:
    loader = DataLoader(stream, batch_size=stream.batch_size, num_workers=workers, collate_fn=collate)
    return list(loader)


def check_continuity(out: list[dict[str, torch.Tensor]]) -> None:
    """Row b of batch k+1 continues row b of batch k unless flagged reset."""
    assert bool(out[0]["reset"].all())
    for prev, nxt in zip(out, out[1:]):
        cont = ~nxt["reset"]
        assert bool((prev["labels"][cont, -1] == nxt["input_ids"][cont, 0]).all())
        assert bool((prev["labels"][cont] != IGNORE_INDEX).all())  # a continued row was full


def test_every_token_once_across_two_workers_and_two_ranks(corpus):
    files, num_words, num_sentences = corpus
    labels = Counter()
    steps = []
    for rank in range(2):
        stream = LMStream(files, encode, eos_id=EOS, batch_size=3, bptt=7, world_size=2, rank=rank)
        out = batches(stream, workers=2)
        check_continuity(out)
        steps.append(len(out))
        for b in out:
            labels.update(b["labels"][b["labels"] != IGNORE_INDEX].tolist())
    assert labels[EOS] == num_sentences
    del labels[EOS]
    assert sorted(labels) == list(range(1, num_words + 1))
    assert set(labels.values()) == {1}


def test_workers_do_not_change_the_batches(corpus):
    files, _, _ = corpus
    stream = LMStream(files, encode, eos_id=EOS, batch_size=4, bptt=5)
    one, two = batches(stream, workers=0), batches(stream, workers=2)
    assert len(one) == len(two)
    for a, b in zip(one, two):
        assert all(torch.equal(a[k], b[k]) for k in a)


def test_global_layout_splits_into_the_rank_streams(corpus):
    """Batch k*P + p of the global layout is rank p's batch k (what accelerate hands process p)."""
    files, _, _ = corpus
    glob = batches(LMStream(files, encode, eos_id=EOS, batch_size=2, bptt=6, world_size=2), workers=0)
    for rank in range(2):
        own = batches(LMStream(files, encode, eos_id=EOS, batch_size=2, bptt=6, world_size=2, rank=rank), workers=0)
        assert len(glob) >= 2 * len(own)
        for k, b in enumerate(own):
            assert all(torch.equal(b[key], glob[2 * k + rank][key]) for key in b)
        # past its own end, the rank's rows in the global layout are padding (the longest stream sets the end)
        assert all(bool((g["labels"] == IGNORE_INDEX).all()) for g in glob[2 * len(own) + rank :: 2])


def test_byte_ranges_cover_each_line_once(tmp_path):
    path = tmp_path / "t.txt"
    lines = [f"line {i} " + "x" * (i % 7) for i in range(40)]
    path.write_text("\n".join(lines) + "\n")
    got = [line.rstrip("\n") for s, e in byte_ranges(path.stat().st_size, 9) for line in read_lines(path, s, e)]
    assert got == lines


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_size": 0}, "batch_size must be >= 1, got 0"),
    ({"bptt": 0}, "bptt must be >= 1, got 0"),
    ({"rank": 2, "world_size": 2}, "rank must be in [0, 2) or None, got 2"),
])
def test_bad_arguments(corpus, kwargs, message):
    args = {"eos_id": EOS, "batch_size": 2, "bptt": 4, **kwargs}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        LMStream(corpus[0], encode, **args)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        LMStream([tmp_path / "nope.txt"], encode, eos_id=EOS, batch_size=1, bptt=2)


def test_accelerate_sharding_of_the_global_layout_gives_each_process_its_streams(corpus):
    """Under torchrun, accelerate wraps the train stream in IterableDatasetShard (or dispatches the
    same slices): process p must see rows that continue each other, and all tokens once."""
    from accelerate.data_loader import IterableDatasetShard

    files, num_words, num_sentences = corpus
    stream = LMStream(files, encode, eos_id=EOS, batch_size=3, bptt=7, world_size=2)
    labels = Counter()
    for p in range(2):
        shard = IterableDatasetShard(stream, batch_size=3, num_processes=2, process_index=p)
        out = list(DataLoader(shard, batch_size=3, collate_fn=collate))
        assert len(out) == len(stream) // (3 * 2)
        check_continuity(out)
        for b in out:
            labels.update(b["labels"][b["labels"] != IGNORE_INDEX].tolist())
    assert labels[EOS] == num_sentences
    del labels[EOS]
    assert sorted(labels) == list(range(1, num_words + 1)) and set(labels.values()) == {1}


def test_len_counts_every_example_yielded(corpus):
    files, _, _ = corpus
    for kwargs in ({"world_size": 2}, {"world_size": 2, "rank": 1}, {}):
        stream = LMStream(files, encode, eos_id=EOS, batch_size=3, bptt=7, **kwargs)
        assert len(stream) == sum(1 for _ in stream)
