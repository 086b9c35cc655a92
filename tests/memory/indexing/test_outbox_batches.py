"""The outbox shrinks a batch that ran out of time, so a slow RetrievalService still catches up.

RetrievalService is replaced by a stand-in here only to inject the fault (a deadline that any batch
over 8 documents exceeds); the store is a real SQLite file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import cast

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.domain.errors import RetrievalUnavailable
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs, schema
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, PassageRecord


class SlowRetrieval:
    """Accepts batches of at most ``capacity`` documents; larger ones time out."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.batches: list[int] = []
        self.indexed: set[str] = set()

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        self.batches.append(len(documents))
        if len(documents) > self.capacity:
            raise RetrievalUnavailable("deadline exceeded", metadata={"status": "DEADLINE_EXCEEDED"})
        self.indexed.update(d.id for d in documents)


async def test_a_batch_that_times_out_is_retried_smaller_until_everything_is_indexed(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    db.migrate()
    passages = [
        PassageRecord(f"passage-{i:03}", "t", "archive-1", f"fact {i}", created_us=i + 1) for i in range(40)
    ]
    with db.writing() as conn:
        archive_rows.insert_archive(conn, ArchiveRecord("archive-1", "t", "a", "", 0))
        archive_rows.insert_passages(conn, passages)
        index_jobs.enqueue(conn, "t", index_jobs.UPSERT, [p.id for p in passages])
    retrieval = SlowRetrieval(capacity=8)
    worker = OutboxWorker(
        db, cast(RetrievalConnection, retrieval), policy=OutboxPolicy(batch_size=32, max_backoff_seconds=0.0)
    )
    try:
        for _ in range(20):
            await worker.deliver_once()
            if not await db.read(index_jobs.pending):
                break
            with db.writing() as conn:  # make postponed jobs due again at once
                conn.execute(schema.index_jobs.update().values(next_attempt_us=0))
        assert retrieval.indexed == {p.id for p in passages}
        assert retrieval.batches[0] == 32
        assert max(retrieval.batches[1:]) <= 32
        assert min(retrieval.batches) <= 8
    finally:
        db.close()
