"""A claim of the outbox holds the store's write lock only for the claim itself, not for counting
every job waiting.

The worker deals a batch over the tenants by their backlogs (``fair_shares``), counted with one
aggregate over every ready job. Counted inside the claim's write transaction, a tenant's import of a
few hundred thousand documents made every claim hold the write lock (SQLite: the whole database)
for that count, ~58 ms at 300k jobs measured here, ahead of every other tenant's writes, once per
batch. The counts only shape the deal (the claim re-checks every job it takes), so they are read
in a read transaction first. Both backends.
"""

from __future__ import annotations

from typing import cast

from strata_memory.indexing.outbox import OutboxWorker
from strata_memory.indexing.retrieval_connection import RetrievalConnection
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from tests.memory.store.sent import recorded


def aggregates(statement: str) -> str | None:
    """The statements that count (``count(*)``), by their first words."""
    return statement.split("\n", maxsplit=1)[0] if "count(" in statement.lower() else None


async def test_a_claim_counts_the_backlogs_outside_its_write_transaction(db: Database) -> None:
    with db.writing() as conn:
        index_jobs.enqueue(conn, "big", index_jobs.UPSERT, [f"passage-{i}" for i in range(40)])
        index_jobs.enqueue(conn, "small", index_jobs.UPSERT, ["passage-s"])
    worker = OutboxWorker(db, cast(RetrievalConnection, None))
    with recorded((db._writer,), aggregates) as written, recorded((db._reader,), aggregates) as read:
        claimed = await worker.claim()
    assert {job.tenant_id for job in claimed} == {"big", "small"}
    assert written == []  # nothing counted under the write lock
    assert len(read) == 1  # the backlogs, read before
