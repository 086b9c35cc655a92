"""The embedded vector index's write journal: what makes an acknowledged write survive a host crash.

The Edge shard writes through memory maps and reaches the disk when it is flushed, not when a write
returns: after a power loss or a kernel crash (a killed process loses nothing: the kernel still
writes its pages) the last acknowledged writes could be missing from the vector leg while the text
leg, which commits with an fsync, kept them. So every write is first appended to this journal and
the journal fsynced, then applied to the shard (:class:`~.edge_durable.DurableEdgeShard`):

- each record is one line of JSON with its sequence number (``seq``), an upsert's documents (the
  payload, which holds each document whole, and the vector) or a delete's keys;
- every so often the shard is flushed and the sequence it holds is written to ``flushed`` (written
  to a temporary file, fsynced, renamed), and the journal emptied;
- on open, the records after ``flushed`` are applied again, in order, on top of what the shard
  kept (upserts and deletes by key are idempotent), then flushed.

A record torn by a crash in the middle of its append was never acknowledged, and is skipped.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from strata_retrieval.embedding.protocol import Vectors

JOURNAL = "journal.jsonl"
FLUSHED = "flushed"


def encode_vector(row: Vectors) -> str:
    return base64.b64encode(np.asarray(row, dtype=np.float32).tobytes()).decode()


def decode_vector(text: str) -> list[float]:
    return [float(value) for value in np.frombuffer(base64.b64decode(text), dtype=np.float32)]


class WriteJournal:
    """An append-only, fsynced log of the writes the shard may not have flushed yet."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self._folder = folder
        self.flushed = _read_flushed(folder / FLUSHED)
        self._pending = self._read()
        self.last = max([self.flushed, *(int(record["seq"]) for record in self._pending)])
        self._file = (folder / JOURNAL).open("ab")
        self.bytes = self._file.tell()

    def pending(self) -> list[dict[str, Any]]:
        """The records after the flushed sequence as found on open, in order (to apply again)."""
        return self._pending

    def append(self, record: dict[str, Any]) -> int:
        """Write ``record`` with the next sequence number and fsync it; returns the number."""
        self.last += 1
        line = json.dumps({"seq": self.last, **record}, separators=(",", ":")).encode() + b"\n"
        self._file.write(line)
        self._file.flush()
        os.fdatasync(self._file.fileno())
        self.bytes += len(line)
        return self.last

    def checkpoint(self) -> None:
        """The shard has flushed every record appended so far: record that, and empty the journal."""
        temporary = self._folder / f"{FLUSHED}.tmp"
        temporary.write_text(str(self.last))
        with temporary.open("rb") as written:
            os.fsync(written.fileno())
        temporary.replace(self._folder / FLUSHED)
        _fsync_folder(self._folder)
        self.flushed = self.last
        self._file.truncate(0)
        self._file.seek(0)
        os.fsync(self._file.fileno())
        self.bytes = 0
        self._pending = []

    def close(self) -> None:
        self._file.close()

    def _read(self) -> list[dict[str, Any]]:
        """The records after ``flushed``; a torn tail is cut off, so the next append starts a line."""
        path = self._folder / JOURNAL
        if not path.exists():
            return []
        records, intact = [], 0
        with path.open("rb") as lines:
            for line in lines:
                try:
                    record = json.loads(line) if line.endswith(b"\n") else None
                except ValueError:
                    record = None
                if not isinstance(record, dict):
                    break  # torn by a crash mid-append: never acknowledged
                intact += len(line)
                if int(record.get("seq", 0)) > self.flushed:
                    records.append(record)
        if intact < path.stat().st_size:
            os.truncate(path, intact)
        return records


def _read_flushed(path: Path) -> int:
    with contextlib.suppress(FileNotFoundError, ValueError):
        return int(path.read_text().strip() or 0)
    return 0


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
