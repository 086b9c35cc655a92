"""Tenant API key rows. Only the SHA-256 of a key's secret is stored; the key id finds the row."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection, RowMapping

from strata_memory.store import schema
from strata_memory.store.records import Page, now_us
from strata_serving.errors import NotFound


class ApiKeyNotFound(NotFound):
    default_reason = "API_KEY_NOT_FOUND"

    def __init__(self, key_id: str) -> None:
        super().__init__(f"API key '{key_id}' not found.", metadata={"key_id": key_id})


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    key_id: str
    tenant_id: str
    secret_sha256: str
    display_name: str
    created_us: int
    revoked_us: int | None


def insert_key(
    conn: Connection, *, key_id: str, tenant_id: str, secret_sha256: str, display_name: str
) -> ApiKeyRecord:
    conn.execute(
        insert(schema.api_keys).values(
            key_id=key_id,
            tenant_id=tenant_id,
            secret_sha256=secret_sha256,
            display_name=display_name,
            created_us=now_us(),
            revoked_us=None,
        )
    )
    return get_key(conn, key_id)


def find_key(conn: Connection, key_id: str) -> ApiKeyRecord | None:
    row = conn.execute(select(schema.api_keys).where(schema.api_keys.c.key_id == key_id)).mappings().first()
    return None if row is None else _record(row)


def get_key(conn: Connection, key_id: str) -> ApiKeyRecord:
    found = find_key(conn, key_id)
    if found is None:
        raise ApiKeyNotFound(key_id)
    return found


def list_keys(conn: Connection, tenant_id: str, *, show_revoked: bool, page: Page) -> list[ApiKeyRecord]:
    table = schema.api_keys
    query = select(table)
    if tenant_id:
        query = query.where(table.c.tenant_id == tenant_id)
    if not show_revoked:
        query = query.where(table.c.revoked_us.is_(None))
    query = query.order_by(table.c.created_us.desc(), table.c.key_id).offset(page.offset).limit(page.size)
    return [_record(row) for row in conn.execute(query).mappings()]


def revoke_key(conn: Connection, key_id: str) -> ApiKeyRecord:
    """Mark the key revoked (keeping the first revocation time)."""
    current = get_key(conn, key_id)
    if current.revoked_us is None:
        conn.execute(
            update(schema.api_keys).where(schema.api_keys.c.key_id == key_id).values(revoked_us=now_us())
        )
    return get_key(conn, key_id)


def _record(row: RowMapping) -> ApiKeyRecord:
    return ApiKeyRecord(
        key_id=row["key_id"],
        tenant_id=row["tenant_id"],
        secret_sha256=row["secret_sha256"],
        display_name=row["display_name"],
        created_us=row["created_us"],
        revoked_us=row["revoked_us"],
    )
