"""One tenant's backlog delays another tenant's fresh write by at most one batch (issue 14.5), and
two workers on one store deliver each job once (issue 15.2).

The store is real (a SQLite file, and a PostgreSQL schema when STRATA_TEST_POSTGRES_URL is set) and
the worker the real one. RetrievalService is replaced by a
recorder that acknowledges at once: what is measured is the order and number of deliveries, which
does not depend on how fast RetrievalService embeds (bench/perf/outbox_fairness.py measures the wall-clock
delay through real services).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import cast

from sqlalchemy import select

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs, schema
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, PassageRecord, now_us
from tests.store_backends import postgres_schema, store_url

__all__ = ["postgres_schema", "store_url"]  # fixtures: each test runs on SQLite and on PostgreSQL

BATCH = 64


class Recorder:
    """Acknowledges every upsert and remembers the documents in the order they were sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        await asyncio.sleep(0)  # let another worker run between its claim and this delivery
        self.sent.extend(document.id for document in documents)

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        await asyncio.sleep(0)


def _store(url: str) -> Database:
    db = Database(url)
    db.migrate()
    return db


def _write(db: Database, tenant: str, count: int, start: int = 0) -> list[str]:
    """Store ``count`` passages of ``tenant`` with their upsert jobs, as a write would."""
    archive = f"archive-{tenant}"
    passages = [
        PassageRecord(f"passage-{tenant}-{i}", tenant, archive, f"fact {i}", created_us=i + 1)
        for i in range(start, start + count)
    ]
    with db.writing() as conn:
        if not start:
            archive_rows.insert_archive(conn, ArchiveRecord(archive, tenant, "facts", "", 0))
        archive_rows.insert_passages(conn, passages)
        index_jobs.enqueue(conn, tenant, index_jobs.UPSERT, [p.id for p in passages])
    return [p.id for p in passages]


async def test_a_fresh_write_waits_behind_at_most_one_batch_of_another_tenants_backlog(
    store_url: str,
) -> None:
    db = _store(store_url)
    recorder = Recorder()
    worker = OutboxWorker(db, cast(RetrievalConnection, recorder), policy=OutboxPolicy(batch_size=BATCH))
    try:
        _write(db, "noisy", 6_000)
        await worker.deliver_once()
        await worker.deliver_once()  # the noisy tenant's backlog is being worked off
        before = len(recorder.sent)
        [fresh] = _write(db, "quiet", 1)
        while fresh not in recorder.sent:
            assert await worker.deliver_once()
        ahead = recorder.sent.index(fresh) - before
        assert ahead <= BATCH - 1  # the bound fairness.py states: less than one batch
        assert ahead == 0  # and the smaller share of the batch is sent first
        assert await db.read(index_jobs.pending) > 5_000  # while the backlog is still there
    finally:
        db.close()


async def test_two_workers_on_one_store_send_each_document_once(store_url: str) -> None:
    db = _store(store_url)
    recorder = Recorder()
    workers = [
        OutboxWorker(
            db, cast(RetrievalConnection, recorder), policy=OutboxPolicy(batch_size=BATCH), name=f"w{i}"
        )
        for i in range(2)
    ]
    try:
        written = _write(db, "t1", 500) + _write(db, "t2", 300)

        async def drain(worker: OutboxWorker) -> None:
            while await db.read(index_jobs.pending):
                await worker.deliver_once()
                await asyncio.sleep(0)

        await asyncio.gather(*(drain(worker) for worker in workers))
        assert sorted(recorder.sent) == sorted(written)  # each exactly once: 1.0 upserts per job
    finally:
        db.close()


async def test_a_dead_workers_leases_expire_and_another_worker_takes_the_jobs_over(store_url: str) -> None:
    db = _store(store_url)
    recorder = Recorder()
    dead = OutboxWorker(
        db, cast(RetrievalConnection, recorder), policy=OutboxPolicy(lease_seconds=3600), name="dead"
    )
    alive = OutboxWorker(db, cast(RetrievalConnection, recorder), name="alive")
    try:
        written = _write(db, "t", 10)
        before = now_us()
        assert len(await dead.claim()) == 10  # claimed, then the worker dies before delivering
        leases = await db.read(
            lambda conn: conn.execute(select(schema.index_jobs.c.lease_until_us)).scalars().all()
        )
        assert all(before + 3600 * 10**6 <= lease <= now_us() + 3600 * 10**6 for lease in leases)
        assert await alive.deliver_once() == 0  # leased: not another worker's to deliver yet
        with db.writing() as conn:  # the hour passes: the dead worker's leases run out
            conn.execute(schema.index_jobs.update().values(lease_until_us=now_us() - 1))
        assert await alive.deliver_once() == 10
        assert sorted(recorder.sent) == sorted(written)
    finally:
        db.close()


async def test_a_documents_jobs_are_delivered_in_the_order_they_were_written(store_url: str) -> None:
    db = _store(store_url)
    recorder = Recorder()
    holder = OutboxWorker(db, cast(RetrievalConnection, recorder), name="holder")
    other = OutboxWorker(db, cast(RetrievalConnection, recorder), name="other")
    try:
        [first] = _write(db, "t", 1)
        assert [job.document_id for job in await holder.claim()] == [first]
        with db.writing() as conn:  # a later job of the same document, while the first is leased
            index_jobs.enqueue(conn, "t", index_jobs.UPSERT, [first])
        assert await other.claim() == []  # it waits for the earlier job of its document
    finally:
        db.close()
