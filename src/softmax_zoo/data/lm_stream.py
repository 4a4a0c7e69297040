"""Truncated-BPTT segments streamed from a one-sentence-a-line corpus, in bounded memory.

The corpus (one or more text files) is cut into ``G`` parallel *streams*, each a contiguous run of
lines, so that an LSTM can carry its hidden state from one segment of a stream to the next (the
classic "batchify" layout of language-model training, without loading the corpus). Each file is
split into ``G`` byte ranges; a line belongs to the range that holds its first byte, so a stream
finds its lines with one ``seek`` and never needs a pass over the file (Hadoop's rule for split
text files). Stream ``g`` reads its range of every file in turn, so memory is one line per stream
whatever the corpus size (0.8B tokens for One Billion Word).

Each stream is the token sequence ``<eos> s_1 <eos> s_2 <eos> ...`` (a sentence's words, then its
``<eos>``; the leading ``<eos>`` is the context the first word is predicted from), cut into
segments of ``bptt`` predictions: ``input_ids = x[i : i+T]``, ``labels = x[i+1 : i+T+1]``. So
every token of the corpus (words and each sentence's ``<eos>``) is a label exactly once per epoch,
which is what perplexity averages over. Blank lines are skipped (no words, no ``<eos>``).

Layout of what is yielded (one example = one row of a batch)::

    step k, batch-unit u: rows b = 0..B-1 are segment k of streams u*B + b

Streams end at slightly different steps (byte ranges hold different token counts); a stream that
has ended yields padding rows (``labels`` all ``-100``) until the longest one ends, so that every
step has ``B`` rows and, in the global layout, every process does the same number of steps (in
the last few, one process's rows may all be padding: the model then returns a zero loss).

``len()`` is exact (batches x rows), so the Trainer can count epochs; it costs one pass over the
files (``encode`` on every line), made the first time it is asked for and then cached.

Sharding (every token once per epoch across workers and processes):

- ``rank=None`` (global layout, what the Trainer path uses): the iterator yields all
  ``G = world_size * B`` streams, unit ``u = p`` of step ``k`` being process ``p``'s batch. accelerate
  (``dispatch_batches`` or ``IterableDatasetShard``) hands batch ``k * world_size + p`` to process
  ``p``, so process ``p``'s row ``b`` is always stream ``p*B + b`` and the hidden state carries over.
- ``rank=r``: the iterator yields only process ``r``'s streams (for a loop that does not reshard,
  e.g. plain DDP). Each process then reads only its own byte ranges.
- DataLoader workers: worker ``w`` of ``W`` yields the batch-units ``j ≡ w (mod W)`` of the
  sequence above; the DataLoader takes batches from its workers in turn, so the batches come out in
  the same order as with one worker. Each worker reads all of its streams' lines (to know where
  segments start) but builds tensors only for its own units.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import torch
from torch.utils.data import IterableDataset, get_worker_info

from softmax_zoo.data.layout import IGNORE_INDEX


def byte_ranges(size: int, parts: int) -> list[tuple[int, int]]:
    """Split ``[0, size)`` into ``parts`` contiguous ranges of near-equal length."""
    bounds = [size * i // parts for i in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def read_lines(path: Path, start: int, end: int) -> Iterator[str]:
    """Yield the lines of ``path`` whose first byte lies in ``[start, end)``, decoded as UTF-8."""
    with open(path, "rb") as f:
        if start > 0:
            f.seek(start - 1)
            f.readline()  # finish the line holding byte start-1: it belongs to the previous range
        while f.tell() < end:
            line = f.readline()
            if not line:
                return
            yield line.decode("utf-8")


class LMStream(IterableDataset):
    """BPTT segments of a sentence stream; see the module docstring for the layout.

    Args:
        files: text files read in order, one sentence a line (whitespace-tokenised words).
        encode: sentence (str) -> word ids (``list[int]``), without ``<eos>``.
        eos_id: id of ``<eos>``.
        batch_size: B, rows per process per step.
        bptt: T, predictions per segment.
        world_size: number of data-parallel processes P (``G = P * B`` streams).
        rank: ``None`` for the global layout, or the process whose streams alone are yielded.

    Yields:
        ``{"input_ids": (T,) long, "labels": (T,) long (-100 = padding), "reset": () bool}``;
        ``reset`` is True on the first segment of a stream and on padding rows: the model zeroes
        that row's hidden state before the segment.
    """

    def __init__(
        self,
        files: Sequence[str | os.PathLike],
        encode: Callable[[str], list[int]],
        *,
        eos_id: int,
        batch_size: int,
        bptt: int,
        world_size: int = 1,
        rank: int | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("batch_size", batch_size), ("bptt", bptt), ("world_size", world_size)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if rank is not None and not 0 <= rank < world_size:
            raise ValueError(f"rank must be in [0, {world_size}) or None, got {rank}")
        if not files:
            raise ValueError("files must name at least one text file, got none")
        self.files = [Path(f) for f in files]
        missing = [str(f) for f in self.files if not f.is_file()]
        if missing:
            raise FileNotFoundError(f"LM stream files not found: {missing}")
        self.encode = encode
        self.eos_id = eos_id
        self.batch_size = batch_size
        self.bptt = bptt
        self.world_size = world_size
        self.rank = rank
        self._length: int | None = None

    @property
    def num_streams(self) -> int:
        """G, the number of parallel streams across all processes."""
        return self.world_size * self.batch_size

    def owned_streams(self) -> list[list[int]]:
        """Streams this iterator yields, grouped by batch-unit: ``[[p*B + b for b in range(B)] for p]``."""
        parts = range(self.world_size) if self.rank is None else [self.rank]
        return [[p * self.batch_size + b for b in range(self.batch_size)] for p in parts]

    def __len__(self) -> int:
        """Examples per epoch: steps (the longest owned stream's segments) x owned streams."""
        if self._length is None:
            streams = [g for unit in self.owned_streams() for g in unit]
            steps = max(math.ceil((sum(1 for _ in self.stream_tokens(g)) - 1) / self.bptt) for g in streams)
            self._length = steps * len(streams)
        return self._length

    def stream_tokens(self, g: int) -> Iterator[int]:
        """Token ids of stream ``g``: ``<eos>``, then each of its sentences followed by ``<eos>``."""
        yield self.eos_id
        for path in self.files:
            start, end = byte_ranges(path.stat().st_size, self.num_streams)[g]
            for line in read_lines(path, start, end):
                ids = self.encode(line)
                if ids:
                    yield from ids
                    yield self.eos_id

    def stream_segments(self, g: int) -> Iterator[list[int]]:
        """Stream ``g`` cut into windows of ``T + 1`` tokens overlapping by one (the last may be shorter)."""
        window: list[int] = []
        for token in self.stream_tokens(g):
            window.append(token)
            if len(window) == self.bptt + 1:
                yield window
                window = window[-1:]
        if len(window) > 1:
            yield window

    def make_row(self, window: list[int] | None, first: bool) -> dict[str, torch.Tensor]:
        """One example from a window of ``n + 1 <= T + 1`` tokens (``None``: a padding row)."""
        inputs = torch.full((self.bptt,), self.eos_id, dtype=torch.long)
        labels = torch.full((self.bptt,), IGNORE_INDEX, dtype=torch.long)
        if window is not None:
            n = len(window) - 1
            inputs[:n] = torch.tensor(window[:-1])
            labels[:n] = torch.tensor(window[1:])
        return {"input_ids": inputs, "labels": labels, "reset": torch.tensor(first or window is None)}

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        units = self.owned_streams()
        segments = [self.stream_segments(g) for unit in units for g in unit]
        info = get_worker_info()
        worker, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        unit = 0  # index of the next batch-unit (B rows) in the sequence every worker walks
        step = 0
        while True:
            windows = [next(it, None) for it in segments]
            if all(w is None for w in windows):
                return
            for u in range(len(units)):
                if unit % num_workers == worker:
                    for w in windows[u * self.batch_size : (u + 1) * self.batch_size]:
                        yield self.make_row(w, first=step == 0)
                unit += 1
            step += 1
