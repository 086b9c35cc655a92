"""After a delivery that released ``wait_searchable`` callers, the outbox waits (``linger_seconds``)
for as many new writes before claiming, so writers that write again at once share one batch; with no
waiter released (an import) it claims at once.

Real SQLite store and real worker; RetrievalService is a stand-in that records each batch.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, PassageRecord

HANG = 30.0  # a hang detector only
LONG = 3600.0  # a linger or poll no test waits out


class Retrieval:
    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.sent = asyncio.Event()

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        self.batches.append([d.id for d in documents])
        self.sent.set()

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        pass


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    database.migrate()
    with database.writing() as conn:
        archive_rows.insert_archive(conn, ArchiveRecord("archive-t", "t", "facts", "", 0))
    yield database
    database.close()


def write(db: Database, worker: OutboxWorker, name: str) -> list[int]:
    """One write of one passage with its job, announced as ``Archival.insert`` does."""
    with db.writing() as conn:
        archive_rows.insert_passages(
            conn, [PassageRecord(f"passage-{name}", "t", "archive-t", name, created_us=1)]
        )
        job_ids = index_jobs.enqueue(conn, "t", index_jobs.UPSERT, [f"passage-{name}"])
    worker.notify()
    return job_ids


async def test_writers_released_together_share_the_next_batch(db: Database) -> None:
    retrieval = Retrieval()
    sender = OutboxWorker(
        db,
        cast(RetrievalConnection, retrieval),
        policy=OutboxPolicy(idle_poll_seconds=LONG, linger_seconds=LONG),
    )
    first = [write(db, sender, "a1"), write(db, sender, "b1")]
    waits = [asyncio.create_task(sender.wait_delivered(ids, within=HANG)) for ids in first]
    await asyncio.sleep(0)
    sender.start()
    try:
        assert await asyncio.wait_for(asyncio.gather(*waits), HANG) == [True, True]
        retrieval.sent.clear()
        write(db, sender, "a2")
        await asyncio.sleep(0.2)  # room for the worker to claim a2 alone (it did before)
        write(db, sender, "b2")
        await asyncio.wait_for(retrieval.sent.wait(), HANG)
    finally:
        await sender.stop()
    assert retrieval.batches == [["passage-a1", "passage-b1"], ["passage-a2", "passage-b2"]]


async def test_with_no_waiter_released_the_next_write_is_claimed_at_once(db: Database) -> None:
    retrieval = Retrieval()
    sender = OutboxWorker(
        db,
        cast(RetrievalConnection, retrieval),
        policy=OutboxPolicy(idle_poll_seconds=LONG, linger_seconds=LONG),
    )
    write(db, sender, "imported")
    sender.start()
    try:
        await asyncio.wait_for(retrieval.sent.wait(), HANG)
        retrieval.sent.clear()
        write(db, sender, "next")
        await asyncio.wait_for(retrieval.sent.wait(), HANG)  # not after the hour's linger
    finally:
        await sender.stop()
    assert retrieval.batches == [["passage-imported"], ["passage-next"]]


async def test_a_lingering_worker_claims_when_the_linger_runs_out(db: Database) -> None:
    retrieval = Retrieval()
    sender = OutboxWorker(
        db,
        cast(RetrievalConnection, retrieval),
        policy=OutboxPolicy(idle_poll_seconds=LONG, linger_seconds=0.1),
    )
    first = [write(db, sender, "a1"), write(db, sender, "b1")]
    waits = [asyncio.create_task(sender.wait_delivered(ids, within=HANG)) for ids in first]
    await asyncio.sleep(0)
    sender.start()
    try:
        assert await asyncio.wait_for(asyncio.gather(*waits), HANG) == [True, True]
        retrieval.sent.clear()
        write(db, sender, "a2")  # one of the two writes it waits for; the other never comes
        await asyncio.wait_for(retrieval.sent.wait(), HANG)
    finally:
        await sender.stop()
    assert retrieval.batches == [["passage-a1", "passage-b1"], ["passage-a2"]]
