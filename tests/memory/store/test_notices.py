"""Index jobs written through one replica wake the outbox worker of every other (PostgreSQL LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio

from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.notices import JobNotices


async def test_jobs_committed_by_one_replica_wake_another_replicas_listener(postgres_schema: str) -> None:
    woken = asyncio.Event()
    notices = JobNotices(postgres_schema, woken.set)  # the other replica's side
    notices.start()
    writer = Database(postgres_schema)
    try:
        await asyncio.wait_for(notices.listening.wait(), timeout=60)
        woken.clear()  # the wake-up every listener gives itself on connecting
        await writer.write(lambda conn: index_jobs.enqueue(conn, "t", index_jobs.UPSERT, ["doc-1"]))
        await asyncio.wait_for(woken.wait(), timeout=60)
    finally:
        await notices.stop()
        writer.close()


async def test_on_sqlite_nothing_listens(tmp_path: object) -> None:
    notices = JobNotices(f"sqlite:///{tmp_path}/memory.sqlite3", lambda: None)
    notices.start()
    assert notices._task is None
    await notices.stop()
