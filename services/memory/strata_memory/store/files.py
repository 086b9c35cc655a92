"""File rows: documents attached to an agent, rendered as read-only blocks under <directories>."""

from __future__ import annotations

import dataclasses

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from strata_memory.domain.errors import FileNotFound
from strata_memory.store import schema
from strata_memory.store.records import FileRecord, Page, now_us
from strata_serving.errors import AlreadyExists

_AGENT_FILES = (
    select(schema.files)
    .where(schema.files.c.agent_id == bindparam("agent_id"))
    .order_by(schema.files.c.directory, schema.files.c.created_us, schema.files.c.id)
)


def insert_file(conn: Connection, file: FileRecord) -> FileRecord:
    stamp = now_us()
    stored = dataclasses.replace(file, created_us=stamp, updated_us=stamp)
    try:
        with conn.begin_nested():
            conn.execute(insert(schema.files).values(**_columns(stored)))
    except IntegrityError as clash:
        raise AlreadyExists(
            f"A file named '{file.name}' is already attached under directory '{file.directory}'.",
            reason="FILE_EXISTS",
            metadata={"directory": file.directory, "name": file.name},
        ) from clash
    return stored


def get_file(conn: Connection, tenant_id: str, file_id: str) -> FileRecord:
    query = select(schema.files).where(schema.files.c.id == file_id, schema.files.c.tenant_id == tenant_id)
    row = conn.execute(query).mappings().first()
    if row is None:
        raise FileNotFound(file_id)
    return _record(row)


def agent_files(conn: Connection, agent_id: str, page: Page | None = None) -> list[FileRecord]:
    """An agent's files ordered by directory, then attach time."""
    query = _AGENT_FILES if page is None else _AGENT_FILES.offset(page.offset).limit(page.size)
    return [_record(row) for row in conn.execute(query, {"agent_id": agent_id}).mappings()]


def write_file(conn: Connection, file: FileRecord) -> FileRecord:
    stored = dataclasses.replace(file, updated_us=now_us())
    values = _columns(stored)
    del values["id"]
    conn.execute(update(schema.files).where(schema.files.c.id == file.id).values(**values))
    return stored


def delete_file(conn: Connection, file_id: str) -> None:
    conn.execute(delete(schema.files).where(schema.files.c.id == file_id))


def _columns(file: FileRecord) -> dict[str, object]:
    values = dataclasses.asdict(file)
    values["char_limit"] = values.pop("limit")
    return values


def _record(row: RowMapping) -> FileRecord:
    values = dict(row)
    values["limit"] = values.pop("char_limit")
    return FileRecord(**values)
