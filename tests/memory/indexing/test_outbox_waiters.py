"""``wait_delivered`` (a write's ``wait_searchable``) hears from the worker which jobs it completed:
waiters cost no store reads while this worker delivers their jobs, yet a job another worker (a
replica) delivered is still seen, and a parked or undelivered job is never reported delivered.

Real SQLite store and real worker; RetrievalService is a stand-in that records what it was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy.engine import Connection

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata_memory.indexing.outbox import OutboxPolicy, OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import archives as archive_rows
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import ArchiveRecord, PassageRecord

HANG = 30.0  # a hang detector only: each wait below ends within a second when the code is right
NEVER = 3600.0  # a poll interval no test waits for


class Retrieval:
    def __init__(self) -> None:
        self.indexed: list[str] = []

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        self.indexed.extend(d.id for d in documents)

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        pass


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database(f"sqlite:///{tmp_path}/m.sqlite3")
    database.migrate()
    yield database
    database.close()


def worker(db: Database, retrieval: Retrieval, *, poll: float = NEVER) -> OutboxWorker:
    return OutboxWorker(db, cast(RetrievalConnection, retrieval), policy=OutboxPolicy(idle_poll_seconds=poll))


@pytest.fixture(autouse=True)
def archive(db: Database) -> None:
    with db.writing() as conn:
        archive_rows.insert_archive(conn, ArchiveRecord("archive-t", "t", "facts", "", 0))


def write(db: Database, name: str) -> list[int]:
    """One write of one passage with its upsert job, as ``Archival.insert`` does; returns the job ids."""
    with db.writing() as conn:
        archive_rows.insert_passages(
            conn, [PassageRecord(f"passage-{name}", "t", "archive-t", name, created_us=1)]
        )
        return index_jobs.enqueue(conn, "t", index_jobs.UPSERT, [f"passage-{name}"])


@pytest.fixture
def store_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times anything asked the store how many jobs are pending."""
    calls: list[int] = []
    pending = index_jobs.pending

    def counted(conn: Connection, job_ids: Sequence[int] | None = None) -> int:
        calls.append(1)
        return pending(conn, job_ids)

    monkeypatch.setattr(index_jobs, "pending", counted)
    return calls


async def test_waiters_hear_of_their_delivered_jobs_without_reading_the_store(
    db: Database, store_reads: list[int]
) -> None:
    retrieval = Retrieval()
    sender = worker(db, retrieval)
    writes = [write(db, f"w{i}") for i in range(20)]
    waits = [asyncio.create_task(sender.wait_delivered(ids, within=NEVER)) for ids in writes]
    await asyncio.sleep(0)  # every waiter is waiting
    sender.start()
    try:
        assert await asyncio.wait_for(asyncio.gather(*waits), HANG) == [True] * 20
    finally:
        await sender.stop()
    assert sorted(retrieval.indexed) == sorted(f"passage-w{i}" for i in range(20))
    assert store_reads == []  # before: each waiter read the store, and again after every delivery


async def test_a_new_job_reusing_a_settled_jobs_id_is_not_reported_delivered(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite a job id is reused once the table is empty: a write committed while a settlement of
    the same id is returning must not be told that its own (new) job was delivered."""
    sender = worker(db, Retrieval())
    [old] = write(db, "old")
    completing = sender._db.write
    reused: list[int] = []
    started: list[asyncio.Task[bool]] = []

    async def write_then_a_new_job_lands(work: Callable[[Connection], Any]) -> Any:
        result = await completing(work)
        if not reused and not await db.read(index_jobs.pending):  # the old job is gone
            reused.extend(write(db, "new"))
            started.append(asyncio.create_task(sender.wait_delivered(reused, within=0.3)))
            await asyncio.sleep(0)  # it waits before the settlement tells its waiters
        return result

    monkeypatch.setattr(sender._db, "write", write_then_a_new_job_lands)
    assert await sender.deliver_once() == 1
    assert reused == [old]  # the id was reused
    assert await asyncio.wait_for(started[0], HANG) is False  # nothing delivered the new job


async def test_a_job_another_worker_delivered_is_seen_at_the_next_poll(db: Database) -> None:
    here = worker(db, Retrieval(), poll=0.05)  # never started: its replica's worker is elsewhere
    elsewhere = worker(db, Retrieval())
    ids = write(db, "replica")
    waiting = asyncio.create_task(here.wait_delivered(ids, within=NEVER))
    await asyncio.sleep(0)
    assert await elsewhere.deliver_once() == 1
    assert await asyncio.wait_for(waiting, HANG) is True


async def test_a_waiter_whose_time_runs_out_says_so_and_is_forgotten(db: Database) -> None:
    sender = worker(db, Retrieval(), poll=0.05)  # never started: nothing delivers
    ids = write(db, "late")
    assert await sender.wait_delivered(ids, within=0.2) is False
    assert await sender.wait_delivered([*ids, *write(db, "later")], within=0.1) is False
    assert sender._waiters.waited_for() == []  # no waiter stays registered after it returned
    assert await sender.deliver_once() == 2
    assert await sender.wait_delivered(ids, within=0.1) is True


async def test_many_waiters_cost_one_store_read_per_poll_interval(db: Database) -> None:
    """A tenant holding many ``wait_searchable`` calls open while nothing delivers (RetrievalService
    down, or its jobs far back in the queue) must not make MemoryService read the store once per
    waiter per poll interval: 2,000 such calls kept one core busy and slowed every other tenant's
    reads 3-4x (/tmp probe, 2026-12-04). One read per interval serves every waiter."""
    poll, waiting_for = 0.05, 0.5
    sender = worker(db, Retrieval(), poll=poll)  # never started: nothing delivers
    reads: list[int] = []
    read = db.read

    async def counted(work: Callable[[Connection], Any]) -> Any:
        reads.append(1)
        return await read(work)

    writes = [write(db, f"w{i}") for i in range(40)]
    db.read = counted  # type: ignore[method-assign]
    waits = [asyncio.create_task(sender.wait_delivered(ids, within=NEVER)) for ids in writes]
    try:
        await asyncio.sleep(waiting_for)
        # at most one read per interval that passed (a slow machine makes fewer, never more)
        assert len(reads) <= waiting_for / poll + 2, len(reads)
        assert not any(wait.done() for wait in waits)
    finally:
        for wait in waits:
            wait.cancel()
        await asyncio.gather(*waits, return_exceptions=True)
        db.read = read  # type: ignore[method-assign]
    assert sender._waiters.waited_for() == []


async def test_a_poll_releases_only_the_waiters_registered_before_it_read(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The poll reads which of the waited-for jobs are still pending. A waiter that registered while
    that read ran may wait for a new job that took a delivered job's id (SQLite reuses ids once the
    table is empty): the read's answer is about the old job, so it must not release the new waiter."""
    here = worker(db, Retrieval(), poll=0.05)  # never started: another replica's worker delivers
    elsewhere = worker(db, Retrieval())
    [old] = write(db, "old")
    first = asyncio.create_task(here.wait_delivered([old], within=NEVER))
    await asyncio.sleep(0)
    assert await elsewhere.deliver_once() == 1  # the table is empty: the next job reuses the id
    read = db.read
    later: list[asyncio.Task[bool]] = []

    async def a_new_job_lands_while_the_poll_reads(work: Callable[[Connection], Any]) -> Any:
        result = await read(work)
        if not later:
            [new] = write(db, "new")
            assert new == old
            later.append(asyncio.create_task(here.wait_delivered([new], within=0.3)))
            await asyncio.sleep(0)  # it registers before the poll's answer is applied
        return result

    monkeypatch.setattr(db, "read", a_new_job_lands_while_the_poll_reads)
    assert await asyncio.wait_for(first, HANG) is True
    assert await asyncio.wait_for(later[0], HANG) is False  # its job is still pending
