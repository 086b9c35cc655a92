"""Block rows: insert, read, conditional write with history, attachment to agents."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from strata_memory.domain.errors import AgentNotFound, BlockExists, BlockNotFound, EtagMismatch
from strata_memory.domain.model import Block, RenderMode
from strata_memory.store import memory_history, schema
from strata_memory.store.glance import Statement
from strata_memory.store.records import BlockRecord, BlockVersionRecord, Page, etag_of, now_us

# Statements on the read and edit paths are built once: constructing a statement costs more CPU than
# SQLite takes to run it (bench/perf/findings.md). Parameters are bound by name at execution.
_blocks, _attached = schema.blocks, schema.agent_blocks
_BLOCK_BY_ID = select(_blocks).where(
    _blocks.c.id == bindparam("block_id"), _blocks.c.tenant_id == bindparam("tenant_id")
)
_BLOCK_BY_LABEL = (
    select(_blocks)
    .join(_attached, _attached.c.block_id == _blocks.c.id)
    .where(
        _attached.c.agent_id == bindparam("agent_id"),
        _attached.c.label == bindparam("label"),
        _blocks.c.tenant_id == bindparam("tenant_id"),
    )
)
_BLOCK_BY_ID_FOR_UPDATE = _BLOCK_BY_ID.with_for_update()  # PostgreSQL row lock; SQLite ignores it
_BLOCK_BY_LABEL_FOR_UPDATE = _BLOCK_BY_LABEL.with_for_update(of=_blocks)
_BLOCK_ID_FOR_LABEL = select(_attached.c.block_id).where(
    _attached.c.agent_id == bindparam("agent_id"), _attached.c.label == bindparam("label")
)
_held_by = schema.agent_blocks.alias("held_by")


def _lock_agents_holding(block_id: Any) -> Any:
    return (
        select(schema.agents.c.id)
        .where(
            schema.agents.c.tenant_id == bindparam("tenant_id"),
            schema.agents.c.id.in_(select(_held_by.c.agent_id).where(_held_by.c.block_id == block_id)),
        )
        .order_by(schema.agents.c.id)
        .with_for_update()
    )


_LOCK_HOLDERS_OF_ID = _lock_agents_holding(bindparam("block_id"))
_LOCK_HOLDERS_OF_LABEL = _lock_agents_holding(_BLOCK_ID_FOR_LABEL.scalar_subquery())
_AGENT_BLOCKS = (
    select(_blocks)
    .join(_attached, _attached.c.block_id == _blocks.c.id)
    .where(_attached.c.agent_id == bindparam("agent_id"))
    .order_by(_attached.c.position)
)
# An agent's render mode and file count with its blocks in attach order, in one statement: one row per
# block (one row with NULL block columns when it has none), no row when the tenant has no such agent.
_agents, _files = schema.agents, schema.files
_AGENT_MEMORY = (
    select(
        _agents.c.render_mode.label("agent_render_mode"),
        select(func.count())
        .select_from(_files)
        .where(_files.c.agent_id == _agents.c.id)
        .scalar_subquery()
        .label("agent_files"),
        _blocks,
    )
    .select_from(
        _agents.outerjoin(_attached, _attached.c.agent_id == _agents.c.id).outerjoin(
            _blocks, _blocks.c.id == _attached.c.block_id
        )
    )
    .where(_agents.c.id == bindparam("agent_id"), _agents.c.tenant_id == bindparam("tenant_id"))
    .order_by(_attached.c.position)
)
_HOLDERS = select(_attached.c.agent_id).where(_attached.c.block_id == bindparam("block_id"))
_INSERT_BLOCK = insert(_blocks)
_INSERT_VERSION = insert(schema.block_versions)
_WRITE_IF_AT_VERSION = update(_blocks).where(
    _blocks.c.id == bindparam("match_id"), _blocks.c.version == bindparam("match_version")
)
_VERSION_OF = select(_blocks.c.version).where(_blocks.c.id == bindparam("block_id"))
_LOCK_AGENT = select(schema.agents.c.id).where(schema.agents.c.id == bindparam("agent_id")).with_for_update()


def insert_block(conn: Connection, tenant_id: str, block: Block, *, source: str, actor: str) -> BlockRecord:
    """Store a new block at version 1 (its id must be set) and write its first history entry."""
    stamp = now_us()
    stored = _with_version(block, 1)
    conn.execute(
        _INSERT_BLOCK, {"tenant_id": tenant_id, "created_us": stamp, "updated_us": stamp, **_columns(stored)}
    )
    _record_version(conn, stored, source=source, actor=actor, stamp=stamp)
    return BlockRecord(stored, tenant_id, stamp, stamp)


def get_block(conn: Connection, tenant_id: str, block_id: str, *, for_update: bool = False) -> BlockRecord:
    query = _BLOCK_BY_ID_FOR_UPDATE if for_update else _BLOCK_BY_ID
    row = conn.execute(query, {"block_id": block_id, "tenant_id": tenant_id}).mappings().first()
    if row is None:
        raise BlockNotFound(block_id)
    return block_record(row)


def block_by_label(
    conn: Connection, tenant_id: str, agent_id: str, label: str, *, for_update: bool = False
) -> BlockRecord | None:
    """The block an agent holds under ``label``, in one statement; None if there is none."""
    query = _BLOCK_BY_LABEL_FOR_UPDATE if for_update else _BLOCK_BY_LABEL
    params = {"tenant_id": tenant_id, "agent_id": agent_id, "label": label}
    row = conn.execute(query, params).mappings().first()
    return None if row is None else block_record(row)


def block_id_for_label(conn: Connection, agent_id: str, label: str) -> str | None:
    return conn.execute(_BLOCK_ID_FOR_LABEL, {"agent_id": agent_id, "label": label}).scalar_one_or_none()


def agent_blocks(conn: Connection, agent_id: str) -> list[BlockRecord]:
    """The blocks attached to an agent, in attach order."""
    return [block_record(row) for row in conn.execute(_AGENT_BLOCKS, {"agent_id": agent_id}).mappings()]


@dataclass(frozen=True, slots=True)
class AgentMemory:
    """What rendering an agent's core memory needs: its mode, whether it has files, its blocks."""

    render_mode: RenderMode
    file_count: int
    blocks: list[BlockRecord]


def agent_memory(conn: Connection, tenant_id: str, agent_id: str) -> AgentMemory:
    """The agent's render mode, file count and blocks (attach order) in one statement."""
    rows = conn.execute(_AGENT_MEMORY, {"agent_id": agent_id, "tenant_id": tenant_id}).mappings().all()
    if not rows:
        raise AgentNotFound(agent_id)
    first = rows[0]
    blocks = [block_record(row) for row in rows if row["id"] is not None]
    return AgentMemory(RenderMode(first["agent_render_mode"]), int(first["agent_files"]), blocks)


def tenant_blocks(conn: Connection, tenant_id: str, page: Page) -> list[BlockRecord]:
    query = (
        select(schema.blocks)
        .where(schema.blocks.c.tenant_id == tenant_id)
        .order_by(schema.blocks.c.created_us, schema.blocks.c.id)
        .offset(page.offset)
        .limit(page.size)
    )
    return [block_record(row) for row in conn.execute(query).mappings()]


def lock_holders(
    conn: Connection, tenant_id: str, *, block_id: str = "", agent_id: str = "", label: str = ""
) -> None:
    """Lock, in id order, the agents holding a block (by id, or by an agent's label for it) before the
    block itself is locked (PostgreSQL; SQLite's write transaction holds the whole database). A write
    of a block recompiles its holders' prompts, locking them: taken after the block, those locks would
    wait in a cycle with a tool edit, which locks its agent first and then writes the block."""
    if conn.dialect.name == "sqlite":
        return
    if block_id:
        conn.execute(_LOCK_HOLDERS_OF_ID, {"tenant_id": tenant_id, "block_id": block_id}).all()
    else:
        params = {"tenant_id": tenant_id, "agent_id": agent_id, "label": label}
        conn.execute(_LOCK_HOLDERS_OF_LABEL, params).all()


def holders(conn: Connection, block_id: str) -> list[str]:
    """Ids of the agents the block is attached to."""
    return list(conn.execute(_HOLDERS, {"block_id": block_id}).scalars())


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
    columns = _columns(stored)
    del columns["id"]  # not in the SET list: SQLite rewrites an indexed column's index entry even unchanged
    result = conn.execute(
        _WRITE_IF_AT_VERSION,
        {"match_id": old.id, "match_version": old.version, "updated_us": stamp, **columns},
    )
    if result.rowcount != 1:
        actual = conn.execute(_VERSION_OF, {"block_id": old.id}).scalar()
        raise EtagMismatch(f"Block '{old.label}'", expected=current.etag, actual=etag_of(old.id, actual or 0))
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
    """Attach at the end of the agent's render order. False if it was attached already.

    The agent's row is locked first, so attachments to one agent take distinct places in its order.
    """
    conn.execute(_LOCK_AGENT, {"agent_id": agent_id})
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
    memory_history.attached(conn, agent_id, block.id, position + 1)
    return True


def detach(conn: Connection, agent_id: str, block_id: str) -> bool:
    """Detach; False if it was not attached."""
    result = conn.execute(
        delete(schema.agent_blocks).where(
            schema.agent_blocks.c.agent_id == agent_id, schema.agent_blocks.c.block_id == block_id
        )
    )
    if result.rowcount > 0:
        memory_history.detached(conn, agent_id, block_id)
    return result.rowcount > 0


def delete_block(conn: Connection, block_id: str) -> None:
    """Delete a block, its attachments and its history (its attachment history is closed)."""
    memory_history.block_deleted(conn, block_id)
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


def version_for_etag(conn: Connection, current: BlockRecord, etag: str) -> BlockVersionRecord | None:
    """The history entry whose etag is ``etag`` (newest first: a merge's base is usually recent);
    None when no version of this block has it."""
    block = current.block
    for number in range(block.version, 0, -1):
        if etag_of(block.id, number) == etag:
            return version(conn, block.id, number)
    return None


def blocks_as_of(conn: Connection, agent_id: str, at_us: int) -> list[BlockVersionRecord]:
    """The agent's blocks at ``at_us`` (attach order), each as its newest version by then
    (``store.memory_history``)."""
    rows = conn.execute(memory_history.AS_OF, {"agent_id": agent_id, "at_us": at_us}).mappings()
    return [_version_record(row) for row in rows]


def _record_version(conn: Connection, block: Block, *, source: str, actor: str, stamp: int) -> None:
    columns = _columns(block)
    del columns["id"], columns["version"]
    conn.execute(
        _INSERT_VERSION,
        {
            "block_id": block.id,
            "version": block.version,
            "source": source,
            "actor": actor,
            "changed_us": stamp,
            **columns,
        },
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


def block_record(row: RowMapping) -> BlockRecord:
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


# What a block's reply and an agent's rendered memory are keyed by (``store.glance``): ids, versions and
# write times, read on the event loop without the values.
_STAMP_COLUMNS = (_blocks.c.id, _blocks.c.version, _blocks.c.updated_us)
_STAMP_BY_ID = Statement(
    select(*_STAMP_COLUMNS).where(
        _blocks.c.id == bindparam("block_id"), _blocks.c.tenant_id == bindparam("tenant_id")
    )
)
_STAMP_BY_LABEL = Statement(
    select(*_STAMP_COLUMNS)
    .join(_attached, _attached.c.block_id == _blocks.c.id)
    .where(
        _attached.c.agent_id == bindparam("agent_id"),
        _attached.c.label == bindparam("label"),
        _blocks.c.tenant_id == bindparam("tenant_id"),
    )
)
_MEMORY_STAMPS = Statement(
    select(_AGENT_MEMORY.selected_columns[0], _AGENT_MEMORY.selected_columns[1], *_STAMP_COLUMNS)
    .select_from(
        _agents.outerjoin(_attached, _attached.c.agent_id == _agents.c.id).outerjoin(
            _blocks, _blocks.c.id == _attached.c.block_id
        )
    )
    .where(_agents.c.id == bindparam("agent_id"), _agents.c.tenant_id == bindparam("tenant_id"))
    .order_by(_attached.c.position)
)

BlockStamp = tuple[str, int, int]
"""A block's id, version and time of its last write: equal stamps mean equal blocks (ids are never
reused, and every write of a block moves its version and write time)."""


def block_stamp(
    raw: sqlite3.Connection, tenant_id: str, *, block_id: str = "", agent_id: str = "", label: str = ""
) -> BlockStamp | None:
    """The stamp of the tenant's block (by id, or by an agent's label for it); None if there is none."""
    if block_id:
        rows = _STAMP_BY_ID.rows(raw, {"block_id": block_id, "tenant_id": tenant_id})
    else:
        rows = _STAMP_BY_LABEL.rows(raw, {"tenant_id": tenant_id, "agent_id": agent_id, "label": label})
    return (str(rows[0][0]), int(rows[0][1]), int(rows[0][2])) if rows else None


def stamp_of(record: BlockRecord) -> BlockStamp:
    return (record.block.id, record.block.version, record.updated_us)


def memory_stamps(
    raw: sqlite3.Connection, tenant_id: str, agent_id: str
) -> tuple[str, int, tuple[BlockStamp, ...]] | None:
    """The agent's render mode, file count and its blocks' stamps in attach order; None if the tenant
    has no such agent."""
    rows = _MEMORY_STAMPS.rows(raw, {"agent_id": agent_id, "tenant_id": tenant_id})
    if not rows:
        return None
    stamps = tuple((str(r[2]), int(r[3]), int(r[4])) for r in rows if r[2] is not None)
    return str(rows[0][0]), int(rows[0][1]), stamps
