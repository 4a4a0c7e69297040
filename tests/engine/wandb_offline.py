"""Read what an offline wandb run wrote: the run record (name, group, tags, job type, config) and the summary.

An offline run is ``wandb/offline-run-*/run-<id>.wandb``: a LevelDB-style log (a 7-byte header,
then 32 KiB blocks of chunks, each ``crc32 (4) | length (2, LE) | type (1) | data``, type 1 a whole
record, 2/3/4 its first/middle/last piece) of ``wandb_internal_pb2.Record`` protobufs.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from wandb.proto import wandb_internal_pb2

HEADER, BLOCK, CHUNK_HEADER = 7, 32768, 7
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: str | Path) -> list[Any]:
    """Every ``Record`` protobuf of a ``.wandb`` file, in order."""
    data = Path(path).read_bytes()
    out, pending, pos = [], b"", HEADER
    while pos + CHUNK_HEADER <= len(data):
        left = BLOCK - pos % BLOCK
        if left < CHUNK_HEADER:  # the block's tail is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + CHUNK_HEADER])
        if kind == 0 and length == 0:
            pos += left
            continue
        chunk = data[pos + CHUNK_HEADER : pos + CHUNK_HEADER + length]
        pos += CHUNK_HEADER + length
        pending = chunk if kind in (FULL, FIRST) else pending + chunk
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            out.append(record)
    return out


def run_summary(path: str | Path) -> dict[str, Any]:
    """``{"name", "group", "job_type", "tags", "config": {key: value}, "summary": {key: value}}`` of one offline run."""
    run: dict[str, Any] = {"config": {}, "summary": {}}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            r = record.run
            run.update(name=r.display_name, group=r.run_group, job_type=r.job_type, tags=list(r.tags))
            run["config"].update({item.key: json.loads(item.value_json) for item in r.config.update})
        elif kind == "config":
            run["config"].update({item.key: json.loads(item.value_json) for item in record.config.update})
        elif kind == "summary":
            run["summary"].update({item.key: json.loads(item.value_json) for item in record.summary.update})
    return run
