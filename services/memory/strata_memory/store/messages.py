"""Message rows (recall memory): append with per-agent sequence numbers, list."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.sql.elements import ColumnElement

from strata_memory.store import agents, schema
from strata_memory.store.records import MessageRecord, Page, ToolCallRecord


def append(conn: Connection, new: Sequence[MessageRecord]) -> list[MessageRecord]:
    """Store messages of one agent in order, numbering them after the agent's last message."""
    if not new:
        return []
    first = agents.reserve_sequences(conn, new[0].agent_id, len(new))
    stored = [_numbered(message, first + i) for i, message in enumerate(new)]
    conn.execute(insert(schema.messages), [_columns(m) for m in stored])
    return stored


def list_messages(
    conn: Connection, agent_id: str, *, conversation_id: str, roles: Sequence[str], page: Page
) -> tuple[list[MessageRecord], int]:
    """One page of messages, oldest first, and the total number matching the filter."""
    where = _filter(agent_id, conversation_id, roles)
    total = conn.execute(select(func.count()).select_from(schema.messages).where(*where)).scalar_one()
    query = (
        select(schema.messages)
        .where(*where)
        .order_by(schema.messages.c.sequence)
        .offset(page.offset)
        .limit(page.size)
    )
    return [_record(row) for row in conn.execute(query).mappings()], int(total)


def _filter(agent_id: str, conversation_id: str, roles: Sequence[str]) -> list[ColumnElement[bool]]:
    where = [schema.messages.c.agent_id == agent_id]
    if conversation_id:
        where.append(schema.messages.c.conversation_id == conversation_id)
    if roles:
        where.append(schema.messages.c.role.in_(list(roles)))
    return where


def _numbered(message: MessageRecord, sequence: int) -> MessageRecord:
    return MessageRecord(
        id=message.id,
        tenant_id=message.tenant_id,
        agent_id=message.agent_id,
        conversation_id=message.conversation_id,
        role=message.role,
        content=message.content,
        name=message.name,
        tool_calls=message.tool_calls,
        tool_call_id=message.tool_call_id,
        sequence=sequence,
        created_us=message.created_us,
    )


def _columns(message: MessageRecord) -> dict[str, object]:
    return {
        "id": message.id,
        "tenant_id": message.tenant_id,
        "agent_id": message.agent_id,
        "conversation_id": message.conversation_id,
        "role": message.role,
        "content": message.content,
        "name": message.name,
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls],
        "tool_call_id": message.tool_call_id,
        "sequence": message.sequence,
        "created_us": message.created_us,
    }


def _record(row: RowMapping) -> MessageRecord:
    calls = tuple(ToolCallRecord(c["id"], c["name"], c["arguments"]) for c in row["tool_calls"] or ())
    return MessageRecord(
        id=row["id"],
        tenant_id=row["tenant_id"],
        agent_id=row["agent_id"],
        conversation_id=row["conversation_id"],
        role=row["role"],
        content=row["content"],
        name=row["name"],
        tool_calls=calls,
        tool_call_id=row["tool_call_id"],
        sequence=row["sequence"],
        created_us=row["created_us"],
    )


def get_messages(conn: Connection, tenant_id: str, ids: Sequence[str]) -> list[MessageRecord]:
    query = select(schema.messages).where(
        schema.messages.c.tenant_id == tenant_id, schema.messages.c.id.in_(list(ids))
    )
    return [_record(row) for row in conn.execute(query).mappings()]


def message_ids(conn: Connection, *, tenant_id: str | None, agent_id: str | None) -> list[str]:
    """Ids of every message in scope (a tenant, one agent, or everything when both are None)."""
    query = select(schema.messages.c.id).order_by(schema.messages.c.agent_id, schema.messages.c.sequence)
    if tenant_id is not None:
        query = query.where(schema.messages.c.tenant_id == tenant_id)
    if agent_id is not None:
        query = query.where(schema.messages.c.agent_id == agent_id)
    return list(conn.execute(query).scalars())


DIALOGUE_ROLES = ("user", "assistant")


def preceding_turns(conn: Connection, message: MessageRecord, count: int) -> list[MessageRecord]:
    """Up to ``count`` user/assistant messages just before ``message`` in its conversation, oldest first."""
    query = (
        select(schema.messages)
        .where(
            schema.messages.c.agent_id == message.agent_id,
            schema.messages.c.conversation_id == message.conversation_id,
            schema.messages.c.sequence < message.sequence,
            schema.messages.c.role.in_(DIALOGUE_ROLES),
        )
        .order_by(schema.messages.c.sequence.desc())
        .limit(count)
    )
    return [_record(row) for row in reversed(list(conn.execute(query).mappings()))]
