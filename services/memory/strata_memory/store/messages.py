"""Message rows (recall memory): append with per-agent sequence numbers, list."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import and_, func, insert, or_, select
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.sql.elements import ColumnElement

from strata_memory.store import agents, schema
from strata_memory.store.records import MessageRecord, Page, ToolCallRecord


def append(
    conn: Connection, new: Sequence[MessageRecord], *, first: int | None = None
) -> list[MessageRecord]:
    """Store messages of one agent in order, numbering them after the agent's last message (from
    ``first`` when the caller reserved the numbers: ``agents.reserve_sequences_of``)."""
    if not new:
        return []
    if first is None:
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
        prompt_receipt_id=message.prompt_receipt_id,
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
        "prompt_receipt_id": message.prompt_receipt_id or None,
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
        prompt_receipt_id=row["prompt_receipt_id"] or "",
    )


def get_messages(conn: Connection, tenant_id: str, ids: Sequence[str]) -> list[MessageRecord]:
    query = select(schema.messages).where(
        schema.messages.c.tenant_id == tenant_id, schema.messages.c.id.in_(list(ids))
    )
    return [_record(row) for row in conn.execute(query).mappings()]


def held_ids(conn: Connection, tenant_id: str, ids: Sequence[str]) -> set[str]:
    """Which of these message ids the store holds (ids only: nothing else is read)."""
    m = schema.messages.c
    return set(conn.execute(select(m.id).where(m.tenant_id == tenant_id, m.id.in_(list(ids)))).scalars())


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


CONTEXT_SLACK = 2
"""Sequence numbers looked at beyond ``count`` before each message by ``preceding_turns_of`` (room for a
tool or system message among the turns, or a turn of another conversation of the agent)."""
RANGES_PER_QUERY = 100
"""OR-ed ranges per statement (SQLite parses ``a OR b OR ...`` as a tree as deep as the terms)."""


def preceding_turns_of(
    conn: Connection, messages: Sequence[MessageRecord], count: int
) -> dict[str, list[MessageRecord]]:
    """``preceding_turns`` of each message, by id, for a batch in one statement instead of one per
    message: the rows a few sequence numbers before each message (neighbouring messages of one
    conversation share a range); a message with too few turns in that window and older ones possible
    falls back to ``preceding_turns``."""
    if count <= 0:
        return {message.id: [] for message in messages}
    span = count + CONTEXT_SLACK
    wanted: dict[tuple[str, str], list[int]] = {}
    for message in messages:
        wanted.setdefault((message.agent_id, message.conversation_id), []).append(message.sequence)
    ranges: list[tuple[str, str, int, int]] = []  # agent, conversation, from (inclusive), to (exclusive)
    for (agent_id, conversation_id), sequences in wanted.items():
        for sequence in sorted(set(sequences)):
            low = sequence - span
            if ranges and ranges[-1][:2] == (agent_id, conversation_id) and low <= ranges[-1][3]:
                ranges[-1] = (agent_id, conversation_id, ranges[-1][2], sequence)
            else:
                ranges.append((agent_id, conversation_id, low, sequence))
    found: dict[tuple[str, str, int], MessageRecord] = {}
    m = schema.messages.c
    for start in range(0, len(ranges), RANGES_PER_QUERY):
        within = or_(
            *(
                and_(m.agent_id == a, m.conversation_id == c, m.sequence >= low, m.sequence < high)
                for a, c, low, high in ranges[start : start + RANGES_PER_QUERY]
            )
        )
        query = select(schema.messages).where(within, m.role.in_(DIALOGUE_ROLES))
        for row in conn.execute(query).mappings():
            record = _record(row)
            found[(record.agent_id, record.conversation_id, record.sequence)] = record
    turns: dict[str, list[MessageRecord]] = {}
    for message in messages:
        key = (message.agent_id, message.conversation_id)
        low = message.sequence - span
        nearest = [
            turn
            for sequence in range(message.sequence - 1, low - 1, -1)
            if (turn := found.get((*key, sequence))) is not None
        ][:count]
        if len(nearest) < count and low > 0:  # older turns may lie before the window
            turns[message.id] = preceding_turns(conn, message, count)
        else:
            turns[message.id] = nearest[::-1]
    return turns
