"""A worker settles only the jobs it still holds.

A lease can run out while its worker is still delivering (a slow RetrievalService, a paused process).
Another worker then claims the job, delivers it and completes it; on SQLite the job's id is free
again once the table is empty, and the next job written takes it. The first worker's late
settlement must touch neither: completing by id alone deleted the newer job, so a stored message
would never become searchable, and a late retry or park would hold back or hide another worker's job.
"""

from __future__ import annotations

import pytest
from sqlalchemy import select

from strata_memory.store import index_jobs, schema
from strata_memory.store.database import Database
from strata_memory.store.records import IndexJob

TENANT = "t"
ONE = {TENANT: 10}


def _claim(db: Database, owner: str, *, lease_us: int) -> list[IndexJob]:
    with db.writing() as conn:
        return index_jobs.claim(conn, ONE, owner=owner, lease_us=lease_us)


def _pending(db: Database) -> list[tuple[int, str, int]]:
    """(id, document, attempts) of the jobs not parked."""
    jobs = schema.index_jobs
    with db.reading() as conn:
        rows = conn.execute(
            select(jobs.c.id, jobs.c.document_id, jobs.c.attempts)
            .where(jobs.c.parked_us.is_(None))
            .order_by(jobs.c.id)
        )
        return [(int(job_id), str(document), int(attempts)) for job_id, document, attempts in rows]


def _parked(db: Database) -> list[str]:
    jobs = schema.index_jobs
    with db.reading() as conn:
        query = select(jobs.c.document_id).where(jobs.c.parked_us.is_not(None)).order_by(jobs.c.id)
        return [str(document) for document in conn.execute(query).scalars()]


def _taken_over(db: Database) -> tuple[IndexJob, IndexJob]:
    """Worker A's lease on message-1 ran out; B claimed it, delivered it and completed it; then
    message-2 was written. Returns A's stale claim and the newer job."""
    with db.writing() as conn:
        index_jobs.enqueue(conn, TENANT, index_jobs.UPSERT, ["message-1"])
    [stale] = _claim(db, "worker-a", lease_us=0)  # expired at once: claimable again
    [taken] = _claim(db, "worker-b", lease_us=60_000_000)
    assert taken.id == stale.id
    with db.writing() as conn:
        assert index_jobs.complete(conn, [taken]) == [taken.id]
        [newer_id] = index_jobs.enqueue(conn, TENANT, index_jobs.UPSERT, ["message-2"])
    return stale, IndexJob(newer_id, TENANT, index_jobs.UPSERT, "message-2", 0)


def test_a_late_completion_leaves_a_newer_job_alone(db: Database) -> None:
    stale, newer = _taken_over(db)
    with db.writing() as conn:
        assert index_jobs.complete(conn, [stale]) == []
    assert [(job_id, document) for job_id, document, _ in _pending(db)] == [(newer.id, "message-2")]


@pytest.mark.parametrize("late", ["retry", "park"])
def test_a_late_retry_or_park_leaves_a_newer_job_alone(db: Database, late: str) -> None:
    stale, newer = _taken_over(db)
    with db.writing() as conn:
        if late == "retry":
            index_jobs.retry_later(conn, [stale], delay_us=60_000_000, error="late")
        else:
            index_jobs.park(conn, [stale], reason="late")
    assert _pending(db) == [(newer.id, "message-2", 0)]
    assert _parked(db) == []
    [claimed] = _claim(db, "worker-c", lease_us=60_000_000)  # due now, not held back or parked
    assert claimed.document_id == "message-2"


def test_a_worker_settles_what_it_still_holds(db: Database) -> None:
    with db.writing() as conn:
        index_jobs.enqueue(conn, TENANT, index_jobs.UPSERT, ["message-1", "message-2", "message-3"])
    first, second, third = _claim(db, "worker-a", lease_us=60_000_000)
    with db.writing() as conn:
        assert index_jobs.complete(conn, [first]) == [first.id]
        index_jobs.retry_later(conn, [second], delay_us=0, error="refused for now")
        index_jobs.park(conn, [third], reason="refused for good")
    assert _pending(db) == [(second.id, "message-2", 1)]
    assert _parked(db) == ["message-3"]
