"""The Edge shard with its write journal (:mod:`.journal`): an acknowledged write survives a host
crash, so the vector leg never misses what the text leg kept.

A write is journaled (fsynced) and then applied to the shard, one at a time under one lock. The
shard is flushed and the journal emptied by :meth:`DurableEdgeShard.checkpoint`: from a background
thread every ``flush_seconds`` while writes are waiting, at once when the journal passes
``MAX_JOURNAL_BYTES``, on open after the journal's records were applied again, and at close.
``EdgeShard.flush`` holds the GIL for its whole run (every thread of the process waits: about 20 ms
here, most of it fsyncs, up to half a second on a busy disk, whatever the writes since the last),
so flushes are rare; the journal, replayed in order at start, is what makes a write durable.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.model import Document
from strata_retrieval.vectors.edge_shard import EdgeShardIndex
from strata_retrieval.vectors.journal import WriteJournal, decode_vector, encode_vector
from strata_retrieval.vectors.payload import VECTOR_NAME, to_payload

log = logging.getLogger("strata.retrieval.vectors")
DEFAULT_FLUSH_SECONDS = 30.0
MAX_JOURNAL_BYTES = 64 * 1024 * 1024


class DurableEdgeShard(EdgeShardIndex):
    """An :class:`EdgeShardIndex` whose writes are journaled before they are applied."""

    def __init__(
        self, path: Path, dimension: int, journal: Path, *, flush_seconds: float = DEFAULT_FLUSH_SECONDS
    ) -> None:
        super().__init__(path, dimension)
        self._journal = WriteJournal(journal)
        self._writes = threading.Lock()  # a journal append and its shard update, or a checkpoint
        pending = self._journal.pending()
        if pending:
            log.warning("applying %d journaled writes the vector index had not flushed", len(pending))
            for record in pending:
                self._apply(record)
        self.checkpoint()
        self._stop = threading.Event()
        self._flusher = threading.Thread(
            target=self._flush_every, args=(flush_seconds,), name="vector-flush", daemon=True
        )
        self._flusher.start()

    def upsert(self, documents: Sequence[Document], vectors: Vectors) -> None:
        points = [
            {"key": doc.key, "payload": to_payload(doc), "vector": encode_vector(row)}
            for doc, row in zip(documents, vectors, strict=True)
        ]
        self._write(
            {"op": "upsert", "points": points},
            lambda: super(DurableEdgeShard, self).upsert(documents, vectors),
        )

    def delete(self, keys: Sequence[str]) -> None:
        if keys:
            self._write(
                {"op": "delete", "keys": list(keys)}, lambda: super(DurableEdgeShard, self).delete(keys)
            )

    def checkpoint(self) -> None:
        """Flush the shard and empty the journal (writes wait meanwhile)."""
        with self._writes:
            if self._journal.last == self._journal.flushed:
                return
            with self._lock:
                self._shard.flush()
            self._journal.checkpoint()

    def close(self) -> None:
        self._stop.set()
        self._flusher.join()
        self.checkpoint()
        self._journal.close()
        super().close()

    def _write(self, record: dict[str, Any], apply: Callable[[], None]) -> None:
        with self._writes:
            self._journal.append(record)
            apply()
            full = self._journal.bytes > MAX_JOURNAL_BYTES
        if full:
            self.checkpoint()

    def _apply(self, record: dict[str, Any]) -> None:
        """One journaled write, again, on the shard as it was found."""
        if record.get("op") == "delete":
            keys: list[qe.PointId] = [str(key) for key in record.get("keys", [])]
            with self._lock:
                self._shard.update(qe.UpdateOperation.delete_points(keys))
            return
        points = [
            qe.Point(
                id=str(point["key"]),
                vector={VECTOR_NAME: decode_vector(point["vector"])},
                payload=point["payload"],
            )
            for point in record.get("points", [])
        ]
        with self._lock:
            self._shard.update(qe.UpdateOperation.upsert_points(points))

    def _flush_every(self, seconds: float) -> None:
        while not self._stop.wait(seconds):
            try:
                self.checkpoint()
            except Exception:
                log.exception("flushing the vector index failed; its journal keeps the writes")
