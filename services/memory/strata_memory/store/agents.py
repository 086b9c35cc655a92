"""Agent rows and their conversations."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Select, Table, bindparam, delete, insert, select, update
from sqlalchemy.engine import Connection, RowMapping

from strata_memory.domain.errors import AgentNotFound, ConversationNotFound, EtagMismatch
from strata_memory.domain.model import RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.store import blocks, memory_history, schema
from strata_memory.store.records import (
    DEFAULT_CONVERSATION,
    AgentRecord,
    ConversationRecord,
    Page,
    etag_of,
    now_us,
)

# Built once (see store/blocks.py); parameters are bound by name at execution.
_agents, _conversations = schema.agents, schema.conversations
_attached = schema.agent_blocks
# An agent and its block labels in one statement: one row per attached block (one row with a NULL label
# when it has none), in attach order.
_AGENT_WITH_LABELS = (
    select(_agents, _attached.c.label.label("block_label"))
    .outerjoin(_attached, _attached.c.agent_id == _agents.c.id)
    .where(_agents.c.id == bindparam("agent_id"), _agents.c.tenant_id == bindparam("tenant_id"))
    .order_by(_attached.c.position)
)
_AGENT_FOR_UPDATE = _AGENT_WITH_LABELS.with_for_update(of=_agents)  # PostgreSQL: lock the agent row only


def _oldest_first_page(table: Table, *where: ColumnElement[bool]) -> Select[Any]:
    """The rows of ``table`` matching ``where``, oldest first (then by id), one page bound as
    ``offset`` / ``size``."""
    return (
        select(table)
        .where(*where)
        .order_by(table.c.created_us, table.c.id)
        .offset(bindparam("offset"))
        .limit(bindparam("size"))
    )


_AGENT_PAGE = _oldest_first_page(_agents, _agents.c.tenant_id == bindparam("tenant_id")).subquery()
# A page of agents with their labels (one row per attached block), agents oldest first.
_AGENT_PAGE_WITH_LABELS = (
    select(_AGENT_PAGE, _attached.c.label.label("block_label"))
    .outerjoin(_attached, _attached.c.agent_id == _AGENT_PAGE.c.id)
    .order_by(_AGENT_PAGE.c.created_us, _AGENT_PAGE.c.id, _attached.c.position)
)
_CONVERSATION = select(_conversations).where(
    _conversations.c.agent_id == bindparam("agent_id"), _conversations.c.id == bindparam("conversation_id")
)
_CONVERSATIONS = _oldest_first_page(_conversations, _conversations.c.agent_id == bindparam("agent_id"))
_NEXT_SEQUENCE = select(_agents.c.next_sequence).where(_agents.c.id == bindparam("agent_id"))
_SET_NEXT_SEQUENCE = (
    update(_agents)
    .where(_agents.c.id == bindparam("agent_id"))
    .values(
        next_sequence=bindparam("next_sequence"),
        message_count=_agents.c.message_count + bindparam("reserved", type_=BigInteger),
    )
)


def insert_agent(conn: Connection, agent: AgentRecord) -> AgentRecord:
    """Store a new agent (version 1) with its ``default`` conversation."""
    stamp = now_us()
    conn.execute(
        insert(schema.agents).values(
            id=agent.id,
            tenant_id=agent.tenant_id,
            name=agent.name,
            system=agent.system,
            render_mode=agent.render_mode.value,
            recompile_policy=agent.recompile_policy.value,
            timezone=agent.timezone,
            tool_result_style=agent.tool_result_style.value,
            version=1,
            next_sequence=1,
            message_count=0,
            created_us=stamp,
            updated_us=stamp,
        )
    )
    insert_conversation(conn, agent.id, DEFAULT_CONVERSATION)
    return get_agent(conn, agent.tenant_id, agent.id)


def get_agent(conn: Connection, tenant_id: str, agent_id: str, *, for_update: bool = False) -> AgentRecord:
    query = _AGENT_FOR_UPDATE if for_update else _AGENT_WITH_LABELS
    rows = conn.execute(query, {"agent_id": agent_id, "tenant_id": tenant_id}).mappings().all()
    if not rows:
        raise AgentNotFound(agent_id)
    return _record_with_labels(rows)


def list_agents(conn: Connection, tenant_id: str, page: Page) -> list[AgentRecord]:
    """One page of the tenant's agents, oldest first, each with its labels: one statement."""
    params = {"tenant_id": tenant_id, "offset": page.offset, "size": page.size}
    rows = conn.execute(_AGENT_PAGE_WITH_LABELS, params).mappings()
    return [
        _record_with_labels(list(group)) for _, group in itertools.groupby(rows, key=lambda row: row["id"])
    ]


def write_agent(conn: Connection, current: AgentRecord, new: AgentRecord) -> AgentRecord:
    """Replace the agent's settings if it is still at ``current``'s version."""
    result = conn.execute(
        update(schema.agents)
        .where(schema.agents.c.id == current.id, schema.agents.c.version == current.version)
        .values(
            name=new.name,
            system=new.system,
            render_mode=new.render_mode.value,
            recompile_policy=new.recompile_policy.value,
            timezone=new.timezone,
            tool_result_style=new.tool_result_style.value,
            version=current.version + 1,
            updated_us=now_us(),
        )
    )
    if result.rowcount != 1:
        actual = conn.execute(
            select(schema.agents.c.version).where(schema.agents.c.id == current.id)
        ).scalar()
        raise EtagMismatch(
            f"Agent '{current.id}'", expected=current.etag, actual=etag_of(current.id, actual or 0)
        )
    return get_agent(conn, current.tenant_id, current.id)


def delete_agent(conn: Connection, agent: AgentRecord) -> None:
    """Delete the agent with its messages, files, prompts and conversations; orphaned blocks go too."""
    block_ids = [b.block.id for b in blocks.agent_blocks(conn, agent.id)]
    for table in (
        schema.messages,
        schema.files,
        schema.conversations,
        schema.agent_blocks,
        schema.prompt_receipts,
    ):
        conn.execute(delete(table).where(table.c.agent_id == agent.id))
    conn.execute(delete(schema.system_prompts).where(schema.system_prompts.c.agent_id == agent.id))
    conn.execute(delete(schema.prompt_snapshots).where(schema.prompt_snapshots.c.agent_id == agent.id))
    memory_history.forget_agent(conn, agent.id)
    conn.execute(delete(schema.agents).where(schema.agents.c.id == agent.id))
    blocks.delete_if_orphaned(conn, block_ids)


_RESERVE_SEQUENCES = (
    update(_agents)
    .where(_agents.c.id == bindparam("agent"), _agents.c.tenant_id == bindparam("tenant"))
    .values(
        next_sequence=_agents.c.next_sequence + bindparam("reserved", type_=BigInteger),
        message_count=_agents.c.message_count + bindparam("reserved", type_=BigInteger),
    )
    .returning(_agents.c.next_sequence)
)


def reserve_sequences_of(conn: Connection, tenant_id: str, agent_id: str, count: int) -> int:
    """Claim ``count`` consecutive message sequence numbers of the tenant's agent in one statement,
    counting the messages they number in the agent's ``message_count`` (the caller inserts them in the
    same transaction); returns the first. The UPDATE locks the agent's row (PostgreSQL), so appends to
    one agent are serialised as ``get_agent(for_update=True)`` did, and two replicas' appends both
    count. Raises AgentNotFound when the tenant has no such agent."""
    params = {"agent": agent_id, "tenant": tenant_id, "reserved": count}
    after = conn.execute(_RESERVE_SEQUENCES, params).scalar_one_or_none()
    if after is None:
        raise AgentNotFound(agent_id)
    return int(after) - count


def reserve_sequences(conn: Connection, agent_id: str, count: int) -> int:
    """Claim ``count`` consecutive message sequence numbers, counted as ``reserve_sequences_of`` does;
    returns the first."""
    first = conn.execute(_NEXT_SEQUENCE, {"agent_id": agent_id}).scalar_one()
    params = {"agent_id": agent_id, "next_sequence": first + count, "reserved": count}
    conn.execute(_SET_NEXT_SEQUENCE, params)
    return int(first)


def insert_conversation(conn: Connection, agent_id: str, conversation_id: str) -> ConversationRecord:
    stamp = now_us()
    conn.execute(insert(schema.conversations).values(agent_id=agent_id, id=conversation_id, created_us=stamp))
    return ConversationRecord(agent_id, conversation_id, stamp)


def has_conversation(conn: Connection, agent_id: str, conversation_id: str) -> bool:
    try:
        get_conversation(conn, agent_id, conversation_id)
    except ConversationNotFound:
        return False
    return True


def get_conversation(conn: Connection, agent_id: str, conversation_id: str) -> ConversationRecord:
    params = {"agent_id": agent_id, "conversation_id": conversation_id}
    row = conn.execute(_CONVERSATION, params).mappings().first()
    if row is None:
        raise ConversationNotFound(agent_id, conversation_id)
    return ConversationRecord(row["agent_id"], row["id"], row["created_us"])


def list_conversations(conn: Connection, agent_id: str, page: Page) -> list[ConversationRecord]:
    params = {"agent_id": agent_id, "offset": page.offset, "size": page.size}
    return [
        ConversationRecord(r["agent_id"], r["id"], r["created_us"])
        for r in conn.execute(_CONVERSATIONS, params).mappings()
    ]


def _record_with_labels(rows: Sequence[RowMapping]) -> AgentRecord:
    """One agent from its rows of an agent-with-labels query (a NULL label: no block attached)."""
    return agent_record(rows[0], tuple(row["block_label"] for row in rows if row["block_label"] is not None))


def agent_record(row: RowMapping, labels: tuple[str, ...], *, prefix: str = "") -> AgentRecord:
    """An agent from a row of its columns, each named ``prefix`` + the column's name."""
    return AgentRecord(
        id=row[f"{prefix}id"],
        tenant_id=row[f"{prefix}tenant_id"],
        name=row[f"{prefix}name"],
        system=row[f"{prefix}system"],
        render_mode=RenderMode(row[f"{prefix}render_mode"]),
        recompile_policy=RecompilePolicy(row[f"{prefix}recompile_policy"]),
        timezone=row[f"{prefix}timezone"],
        tool_result_style=ToolResultStyle(row[f"{prefix}tool_result_style"]),
        version=row[f"{prefix}version"],
        created_us=row[f"{prefix}created_us"],
        updated_us=row[f"{prefix}updated_us"],
        block_labels=labels,
    )


def recompile_policy(conn: Connection, tenant_id: str, agent_id: str) -> RecompilePolicy:
    """The agent's recompile policy, read by its key alone (not its blocks); AgentNotFound if the tenant
    has no such agent."""
    policy = conn.execute(
        select(_agents.c.recompile_policy).where(_agents.c.id == agent_id, _agents.c.tenant_id == tenant_id)
    ).scalar()
    if policy is None:
        raise AgentNotFound(agent_id)
    return RecompilePolicy(policy)
