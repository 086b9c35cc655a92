"""Writes sent with a request_id (AIP-155): what each stored, so that a retry returns it.

A row is keyed by tenant, method and request_id and is written in the transaction of the write it
records. Its primary key keeps two concurrent calls with one request_id from both applying: the
second insert fails (SQLite: the second transaction starts after the first committed and finds its
row; PostgreSQL: a unique violation, and ``Database.write`` re-runs the transaction, which then finds
it). A row holds a SHA-256 of the request, so the same id with another request can be refused, and
the ids of what the write stored, in order. Rows older than the retention count as absent and are
deleted by ``prune``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from strata_memory.store import schema

_rows = schema.write_requests


@dataclass(frozen=True, slots=True)
class WriteRequest:
    fingerprint: str
    resource_ids: tuple[str, ...]


def find(
    conn: Connection, tenant_id: str, method: str, request_id: str, *, since_us: int
) -> WriteRequest | None:
    """The write recorded under this key at ``since_us`` or later; an older row is deleted (None)."""
    key = (_rows.c.tenant_id == tenant_id, _rows.c.method == method, _rows.c.request_id == request_id)
    row = conn.execute(select(_rows).where(*key)).mappings().first()
    if row is None:
        return None
    if row["created_us"] < since_us:
        conn.execute(delete(_rows).where(*key))
        return None
    return WriteRequest(row["fingerprint"], tuple(row["resource_ids"]))


def record(
    conn: Connection,
    tenant_id: str,
    method: str,
    request_id: str,
    *,
    fingerprint: str,
    resource_ids: Sequence[str],
    created_us: int,
) -> None:
    """Record a write (raises IntegrityError when a concurrent transaction recorded the key first)."""
    conn.execute(
        insert(_rows).values(
            tenant_id=tenant_id,
            method=method,
            request_id=request_id,
            fingerprint=fingerprint,
            resource_ids=list(resource_ids),
            created_us=created_us,
        )
    )


def prune(conn: Connection, *, before_us: int) -> int:
    """Delete the rows written before ``before_us``; how many."""
    return conn.execute(delete(_rows).where(_rows.c.created_us < before_us)).rowcount
