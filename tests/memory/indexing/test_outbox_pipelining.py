"""With ``deliveries_in_flight=2`` the outbox keeps two batches in flight: while RetrievalService embeds
one batch, the next full one is claimed and sent (issue 18.1), each document's jobs still in order.

The store is real (SQLite, and PostgreSQL when STRATA_TEST_POSTGRES_URL is set) and the worker runs
its own loops (``start``). RetrievalService is a stand-in that holds the first batch until the test
releases it: only to observe what the worker sends meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import cast

import pytest_asyncio
from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, PassageRecord
from tests.store_backends import postgres_schema, store_url

__all__ = ["postgres_schema", "store_url"]

BATCH = 16
WITHIN = 30.0  # seconds: a deadline for what must happen, never a measured duration


class HoldsFirstBatch:
    """Holds the first upsert until ``release`` is set; records every batch as it starts."""

    def __init__(self) -> None:
        self.started: list[list[str]] = []
        self.acknowledged: list[str] = []
        self.first_started = asyncio.Event()
        self.second_started = asyncio.Event()
        self.release = asyncio.Event()

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        self.started.append([d.id for d in documents])
        if len(self.started) == 1:
            self.first_started.set()
            await self.release.wait()
        else:
            self.second_started.set()
        self.acknowledged.extend(d.id for d in documents)

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        return None


def _write(db: Database, tenant: str, count: int, first: int = 0) -> list[str]:
    """Store passages ``first .. first + count - 1`` of ``tenant`` with their upsert jobs."""
    passages = [
        PassageRecord(f"passage-{tenant}-{i:04}", tenant, f"archive-{tenant}", f"fact {i}", created_us=i + 1)
        for i in range(first, first + count)
    ]
    with db.writing() as conn:
        if not first:
            archive_rows.insert_archive(conn, ArchiveRecord(f"archive-{tenant}", tenant, "facts", "", 0))
        archive_rows.insert_passages(conn, passages)
        index_jobs.enqueue(conn, tenant, index_jobs.UPSERT, [p.id for p in passages])
    return [p.id for p in passages]


async def _until(condition: asyncio.Event) -> None:
    async with asyncio.timeout(WITHIN):
        await condition.wait()


Pipeline = tuple[Database, HoldsFirstBatch, OutboxWorker]


@pytest_asyncio.fixture
async def pipeline(store_url: str) -> AsyncIterator[Pipeline]:
    """A migrated store, and a worker (not started) with two deliveries in flight to a held Retrieval."""
    db = Database(store_url)
    db.migrate()
    retrieval = HoldsFirstBatch()
    worker = OutboxWorker(
        db,
        cast(RetrievalConnection, retrieval),
        policy=OutboxPolicy(batch_size=BATCH, deliveries_in_flight=2),
    )
    try:
        yield db, retrieval, worker
    finally:
        await worker.stop()
        db.close()


async def test_the_next_batch_is_sent_while_the_first_is_still_being_indexed(pipeline: Pipeline) -> None:
    db, retrieval, worker = pipeline
    written = _write(db, "t", 3 * BATCH)
    worker.start()
    await _until(retrieval.second_started)  # before the first batch was acknowledged
    assert retrieval.acknowledged == retrieval.started[1]
    assert not set(retrieval.started[0]) & set(retrieval.started[1])  # each job in one batch
    retrieval.release.set()
    async with asyncio.timeout(WITHIN):
        while await db.read(index_jobs.pending):
            await worker.wait_delivered([], within=1.0)
    assert sorted(retrieval.acknowledged) == written  # each exactly once


async def test_a_documents_later_job_waits_for_its_earlier_job_in_flight(pipeline: Pipeline) -> None:
    db, retrieval, worker = pipeline
    written = _write(db, "t", BATCH)
    worker.start()
    await _until(retrieval.first_started)
    with db.writing() as conn:  # the same documents changed again while their first jobs are in flight
        index_jobs.enqueue(conn, "t", index_jobs.UPSERT, written)
    [fresh] = _write(db, "t", 1, first=BATCH)
    worker.notify()
    await _until(retrieval.second_started)
    assert retrieval.started[1] == [fresh]  # the other delivery may send only the new document
    retrieval.release.set()
    async with asyncio.timeout(WITHIN):
        while await db.read(index_jobs.pending):
            await worker.wait_delivered([], within=1.0)
    again = [batch for batch in retrieval.started[2:] if set(batch) & set(written)]
    assert sorted(doc for batch in again for doc in batch) == written  # after the first was acknowledged
    assert retrieval.acknowledged[: 1 + BATCH] == [fresh, *retrieval.started[0]]


async def test_small_writes_gather_behind_the_batch_in_flight_until_they_fill_one(pipeline: Pipeline) -> None:
    db, retrieval, worker = pipeline
    looked = asyncio.Event()
    loop = asyncio.get_running_loop()
    window_waiting = worker._window_waiting

    def observed(conn: Connection) -> bool:  # only observed: the test waits for the worker's decision
        full = window_waiting(conn)
        loop.call_soon_threadsafe(looked.set)
        return full

    worker._window_waiting = observed  # type: ignore[method-assign]
    first = _write(db, "t", 1)
    worker.start()
    await _until(retrieval.first_started)
    looked.clear()
    small = _write(db, "t", 1, first=1)
    worker.notify()
    await _until(looked)  # the idle delivery saw one job waiting: too few to fill a batch
    rest = _write(db, "t", BATCH - 1, first=2)
    worker.notify()
    await _until(retrieval.second_started)
    assert retrieval.started[1] == small + rest  # the small write was not sent alone
    retrieval.release.set()
    async with asyncio.timeout(WITHIN):
        while await db.read(index_jobs.pending):
            await worker.wait_delivered([], within=1.0)
    assert sorted(retrieval.acknowledged) == sorted(first + small + rest)


async def test_while_a_batch_is_in_flight_a_round_without_a_full_window_settles_nothing(
    pipeline: Pipeline,
) -> None:
    """``deliver_once`` returns how many jobs it settled: a round that found too few jobs to fill a
    batch behind the one in flight settles none (the loop then waits for a write or its poll instead
    of going round again at once), and leaves the jobs for the next batch."""
    db, retrieval, worker = pipeline
    first = _write(db, "t", 1)
    in_flight = asyncio.ensure_future(worker.deliver_once())
    await _until(retrieval.first_started)
    small = _write(db, "t", 1, first=1)
    assert await worker.deliver_once() == 0
    assert retrieval.started == [first]
    assert await db.read(index_jobs.pending) == 2  # both still undelivered: none was settled
    retrieval.release.set()
    assert await in_flight == 1
    assert await worker.deliver_once() == 1  # nothing in flight now: the small write goes alone
    assert retrieval.started == [first, small]
