"""Block rows: insert, read, conditional write with history, attachment to agents."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from strata_memory.domain.errors import BlockExists, BlockNotFound, EtagMismatch
from strata_memory.domain.model import Block
from strata_memory.store import schema
from strata_memory.store.records import BlockRecord, BlockVersionRecord, Page, etag_of, now_us


def insert_block(conn: Connection, tenant_id: str, block: Block, *, source: str, actor: str) -> BlockRecord:
    """Store a new block at version 1 (its id must be set) and write its first history entry."""
    stamp = now_us()
    stored = _with_version(block, 1)
    conn.execute(
        insert(schema.blocks).values(
            tenant_id=tenant_id, created_us=stamp, updated_us=stamp, **_columns(stored)
        )
    )
    _record_version(conn, stored, source=source, actor=actor, stamp=stamp)
    return BlockRecord(stored, tenant_id, stamp, stamp)


def get_block(conn: Connection, tenant_id: str, block_id: str, *, for_update: bool = False) -> BlockRecord:
    query = select(schema.blocks).where(
        schema.blocks.c.id == block_id, schema.blocks.c.tenant_id == tenant_id
    )
    row = conn.execute(query.with_for_update() if for_update else query).mappings().first()
    if row is None:
        raise BlockNotFound(block_id)
    return _record(row)


def block_id_for_label(conn: Connection, agent_id: str, label: str) -> str | None:
    query = select(schema.agent_blocks.c.block_id).where(
        schema.agent_blocks.c.agent_id == agent_id, schema.agent_blocks.c.label == label
    )
    return conn.execute(query).scalar_one_or_none()


def agent_blocks(conn: Connection, agent_id: str) -> list[BlockRecord]:
    """The blocks attached to an agent, in attach order."""
    query = (
        select(schema.blocks)
        .join(schema.agent_blocks, schema.agent_blocks.c.block_id == schema.blocks.c.id)
        .where(schema.agent_blocks.c.agent_id == agent_id)
        .order_by(schema.agent_blocks.c.position)
    )
    return [_record(row) for row in conn.execute(query).mappings()]


def tenant_blocks(conn: Connection, tenant_id: str, page: Page) -> list[BlockRecord]:
    query = (
        select(schema.blocks)
        .where(schema.blocks.c.tenant_id == tenant_id)
        .order_by(schema.blocks.c.created_us, schema.blocks.c.id)
        .offset(page.offset)
        .limit(page.size)
    )
    return [_record(row) for row in conn.execute(query).mappings()]


def agent_labels(conn: Connection, agent_id: str) -> tuple[str, ...]:
    query = (
        select(schema.agent_blocks.c.label)
        .where(schema.agent_blocks.c.agent_id == agent_id)
        .order_by(schema.agent_blocks.c.position)
    )
    return tuple(conn.execute(query).scalars())


def holders(conn: Connection, block_id: str) -> list[str]:
    """Ids of the agents the block is attached to."""
    query = select(schema.agent_blocks.c.agent_id).where(schema.agent_blocks.c.block_id == block_id)
    return list(conn.execute(query).scalars())


def write_block(
    conn: Connection, current: BlockRecord, new: Block, *, source: str, actor: str
) -> BlockRecord:
    """Replace a block's fields if it is still at ``current``'s version; bump the version, log history.

    Raises EtagMismatch when another writer got there first, and BlockExists when a new label
    collides with a label of any agent the block is attached to.
    """
    old = current.block
    stored = _with_version(new, old.version + 1)
    stamp = now_us()
    result = conn.execute(
        update(schema.blocks)
        .where(schema.blocks.c.id == old.id, schema.blocks.c.version == old.version)
        .values(updated_us=stamp, **_columns(stored))
    )
    if result.rowcount != 1:
        actual = conn.execute(select(schema.blocks.c.version).where(schema.blocks.c.id == old.id)).scalar()
        raise EtagMismatch(f"Block '{old.label}'", expected=etag_of(old.version), actual=etag_of(actual or 0))
    if stored.label != old.label:
        _relabel(conn, old.id, stored.label)
    _record_version(conn, stored, source=source, actor=actor, stamp=stamp)
    return BlockRecord(stored, current.tenant_id, current.created_us, stamp)


def _relabel(conn: Connection, block_id: str, label: str) -> None:
    try:
        with conn.begin_nested():
            conn.execute(
                update(schema.agent_blocks)
                .where(schema.agent_blocks.c.block_id == block_id)
                .values(label=label)
            )
    except IntegrityError as clash:
        raise BlockExists(label) from clash


def attach(conn: Connection, agent_id: str, block: Block) -> bool:
    """Attach at the end of the agent's render order. False if it was attached already."""
    if agent_id in holders(conn, block.id):
        return False
    if block_id_for_label(conn, agent_id, block.label) is not None:
        raise BlockExists(block.label)
    position = conn.execute(
        select(func.coalesce(func.max(schema.agent_blocks.c.position), 0)).where(
            schema.agent_blocks.c.agent_id == agent_id
        )
    ).scalar_one()
    conn.execute(
        insert(schema.agent_blocks).values(
            agent_id=agent_id, block_id=block.id, label=block.label, position=position + 1
        )
    )
    return True


def detach(conn: Connection, agent_id: str, block_id: str) -> bool:
    """Detach; False if it was not attached."""
    result = conn.execute(
        delete(schema.agent_blocks).where(
            and_(schema.agent_blocks.c.agent_id == agent_id, schema.agent_blocks.c.block_id == block_id)
        )
    )
    return result.rowcount > 0


def delete_block(conn: Connection, block_id: str) -> None:
    """Delete a block, its attachments and its history."""
    conn.execute(delete(schema.block_versions).where(schema.block_versions.c.block_id == block_id))
    conn.execute(delete(schema.agent_blocks).where(schema.agent_blocks.c.block_id == block_id))
    conn.execute(delete(schema.blocks).where(schema.blocks.c.id == block_id))


def delete_if_orphaned(conn: Connection, block_ids: Sequence[str]) -> None:
    for block_id in block_ids:
        if not holders(conn, block_id):
            delete_block(conn, block_id)


def versions(conn: Connection, block_id: str, page: Page) -> list[BlockVersionRecord]:
    """History entries, newest first."""
    query = (
        select(schema.block_versions)
        .where(schema.block_versions.c.block_id == block_id)
        .order_by(schema.block_versions.c.version.desc())
        .offset(page.offset)
        .limit(page.size)
    )
    return [_version_record(row) for row in conn.execute(query).mappings()]


def version(conn: Connection, block_id: str, number: int) -> BlockVersionRecord | None:
    query = select(schema.block_versions).where(
        schema.block_versions.c.block_id == block_id, schema.block_versions.c.version == number
    )
    row = conn.execute(query).mappings().first()
    return None if row is None else _version_record(row)


def _record_version(conn: Connection, block: Block, *, source: str, actor: str, stamp: int) -> None:
    columns = _columns(block)
    del columns["id"], columns["version"]
    conn.execute(
        insert(schema.block_versions).values(
            block_id=block.id, version=block.version, source=source, actor=actor, changed_us=stamp, **columns
        )
    )


def _with_version(block: Block, version: int) -> Block:
    return dataclasses.replace(block, metadata=dict(block.metadata), version=version)


def _columns(block: Block) -> dict[str, Any]:
    return {
        "id": block.id,
        "label": block.label,
        "value": block.value,
        "char_limit": block.limit,
        "description": block.description,
        "read_only": block.read_only,
        "metadata": dict(block.metadata),
        "version": block.version,
    }


def _record(row: RowMapping) -> BlockRecord:
    block = Block(
        label=row["label"],
        value=row["value"],
        limit=row["char_limit"],
        description=row["description"],
        read_only=row["read_only"],
        metadata=_str_map(row["metadata"]),
        id=row["id"],
        version=row["version"],
    )
    return BlockRecord(block, row["tenant_id"], row["created_us"], row["updated_us"])


def _version_record(row: RowMapping) -> BlockVersionRecord:
    return BlockVersionRecord(
        block_id=row["block_id"],
        version=row["version"],
        label=row["label"],
        value=row["value"],
        limit=row["char_limit"],
        description=row["description"],
        read_only=row["read_only"],
        metadata=_str_map(row["metadata"]),
        source=row["source"],
        actor=row["actor"],
        changed_us=row["changed_us"],
    )


def _str_map(raw: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(k): str(v) for k, v in (raw or {}).items()}
