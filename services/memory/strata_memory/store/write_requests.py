"""Writes sent with a request_id (AIP-155): what each stored, so that a retry returns it.

A row is keyed by tenant, method and request_id and is written first in the transaction of the write
it records, by ``claim``: an insert that does nothing when the key is taken. The primary key keeps
two concurrent calls with one request_id from both applying: on SQLite the second transaction starts
after the first committed and finds its row; on PostgreSQL the second insert waits for the first
transaction and, once it committed, does nothing and reads its row (had it rolled back, the second
claims the key). A row holds a SHA-256 of the request, so the same id with another request can be
refused, and the ids of what the write stored, in order. A row older than the retention is taken
over by the next claim of its key and deleted by ``prune``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from strata_memory.store import schema

_rows = schema.write_requests
_INSERT: dict[str, Any] = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


@dataclass(frozen=True, slots=True)
class WriteRequest:
    fingerprint: str
    resource_ids: tuple[str, ...]


def claim(
    conn: Connection,
    tenant_id: str,
    method: str,
    request_id: str,
    *,
    fingerprint: str,
    resource_ids: Sequence[str],
    created_us: int,
    since_us: int,
) -> WriteRequest | None:
    """Record this write under its key and return None, or return the write recorded under the key at
    ``since_us`` or later (an older one is replaced by this one: None)."""
    values = {"fingerprint": fingerprint, "resource_ids": list(resource_ids), "created_us": created_us}
    key = {"tenant_id": tenant_id, "method": method, "request_id": request_id}
    insert = _INSERT[conn.dialect.name](_rows).values(**key, **values).on_conflict_do_nothing()
    if conn.execute(insert.returning(_rows.c.created_us)).first() is not None:  # psycopg: no rowcount
        return None
    where = [_rows.c[name] == value for name, value in key.items()]
    row = conn.execute(select(_rows).where(*where)).mappings().one()
    if row["created_us"] >= since_us:
        return WriteRequest(row["fingerprint"], tuple(row["resource_ids"]))
    conn.execute(update(_rows).where(*where).values(**values))
    return None


def prune(conn: Connection, *, before_us: int) -> int:
    """Delete the rows written before ``before_us``; how many."""
    return int(conn.execute(delete(_rows).where(_rows.c.created_us < before_us)).rowcount)
