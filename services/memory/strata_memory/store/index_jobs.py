"""The indexing outbox: jobs written in the same transaction as the data they index.

A job names a document (``passage-…`` or ``message-…``) and an action: ``upsert`` (send the document
as it is in the store when delivered) or ``delete``; ``delete_agent`` and ``delete_archive`` remove
every document of a scope. Jobs leave the table only once RetrievalService acknowledged them.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.engine import Connection

from strata_memory.store import schema
from strata_memory.store.records import IndexJob, now_us

UPSERT, DELETE, DELETE_AGENT, DELETE_ARCHIVE = "upsert", "delete", "delete_agent", "delete_archive"


def enqueue(conn: Connection, tenant_id: str, action: str, document_ids: Sequence[str]) -> list[int]:
    """Add one job per document; returns the job ids (for callers that wait until searchable)."""
    if not document_ids:
        return []
    stamp = now_us()
    rows = [
        {
            "tenant_id": tenant_id,
            "action": action,
            "document_id": document_id,
            "attempts": 0,
            "next_attempt_us": stamp,
            "last_error": "",
            "created_us": stamp,
        }
        for document_id in document_ids
    ]
    result = conn.execute(insert(schema.index_jobs).returning(schema.index_jobs.c.id), rows)
    return [int(job_id) for job_id in result.scalars()]


def due(conn: Connection, limit: int) -> list[IndexJob]:
    """The oldest jobs whose next attempt is due, in the order they were written."""
    table = schema.index_jobs
    query = select(table).where(table.c.next_attempt_us <= now_us()).order_by(table.c.id).limit(limit)
    return [
        IndexJob(row["id"], row["tenant_id"], row["action"], row["document_id"], row["attempts"])
        for row in conn.execute(query).mappings()
    ]


def complete(conn: Connection, job_ids: Sequence[int]) -> None:
    conn.execute(delete(schema.index_jobs).where(schema.index_jobs.c.id.in_(list(job_ids))))


def retry_later(conn: Connection, job_ids: Sequence[int], *, delay_us: int, error: str) -> None:
    table = schema.index_jobs
    conn.execute(
        update(table)
        .where(table.c.id.in_(list(job_ids)))
        .values(attempts=table.c.attempts + 1, next_attempt_us=now_us() + delay_us, last_error=error[:1000])
    )


def pending(conn: Connection, job_ids: Sequence[int] | None = None) -> int:
    """How many jobs are still undelivered (of ``job_ids``, or in all)."""
    query = select(func.count()).select_from(schema.index_jobs)
    if job_ids is not None:
        query = query.where(schema.index_jobs.c.id.in_(list(job_ids)))
    return int(conn.execute(query).scalar_one())
