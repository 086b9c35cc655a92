"""What a memory tool call reads before it edits, in one statement: the agent, its blocks in attach
order with how many agents hold each, and, for an ``on_edit`` agent, the counts its prompt's metadata
reports (the recompile that follows the edit needs them; the edit does not change them).

The agent is locked for the rest of the transaction, so edits of one agent take turns. On SQLite the
write transaction holds the database from ``BEGIN IMMEDIATE`` and the one statement is all. PostgreSQL
locks the agent's row in a statement of its own first: a statement reads from the snapshot it started
with, and READ COMMITTED re-reads only the locked row after waiting for it, so blocks read by the
statement that waited would be those from before the edit it waited for. That statement also locks
every agent sharing a block with it, in id order, before any block is written: the edit recompiles
those agents' prompts, and the store's writers take agents before blocks, in id order
(``store.blocks.lock_holders``), so two edits of a shared block never wait for each other in a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy import bindparam, case, func, select
from sqlalchemy.engine import Connection

from strata_memory.domain.errors import AgentNotFound
from strata_memory.domain.model import RecompilePolicy
from strata_memory.store import schema
from strata_memory.store.agents import agent_record
from strata_memory.store.blocks import block_record
from strata_memory.store.prompts import COUNTS, MemoryCounts, counts_with_tags
from strata_memory.store.records import AgentRecord, BlockRecord

_agents, _attached, _blocks = schema.agents, schema.agent_blocks, schema.blocks
_holders = schema.agent_blocks.alias("holders")  # found by ix_agent_blocks_block_id
_ON_EDIT = _agents.c.recompile_policy == RecompilePolicy.ON_EDIT.value
_EDIT_TARGET = (
    select(
        *(column.label(f"agent_{column.name}") for column in _agents.c),
        _blocks,
        select(func.count())
        .select_from(_holders)
        .where(_holders.c.block_id == _blocks.c.id)
        .scalar_subquery()
        .label("holders"),
        # NULL unless the agent recompiles on edit (neither SQLite nor PostgreSQL runs a CASE branch
        # it does not take, so an ``explicit`` agent's edit reads no counts).
        *(case((_ON_EDIT, count), else_=None).label(f"count_{name}") for name, count in COUNTS.items()),
    )
    .select_from(
        _agents.outerjoin(_attached, _attached.c.agent_id == _agents.c.id).outerjoin(
            _blocks, _blocks.c.id == _attached.c.block_id
        )
    )
    .where(_agents.c.id == bindparam("agent_id"), _agents.c.tenant_id == bindparam("tenant_id"))
    .order_by(_attached.c.position)
)
_mine = schema.agent_blocks.alias("mine")
_LOCK_AGENTS = (  # the agent and every agent sharing a block with it, in id order (see edit_target)
    select(_agents.c.id)
    .where(
        _agents.c.tenant_id == bindparam("tenant_id"),
        (_agents.c.id == bindparam("agent_id"))
        | _agents.c.id.in_(
            select(_holders.c.agent_id)
            .join(_mine, _mine.c.block_id == _holders.c.block_id)
            .where(_mine.c.agent_id == bindparam("agent_id"))
        ),
    )
    .order_by(_agents.c.id)
    .with_for_update()
)


@dataclass(frozen=True, slots=True)
class EditTarget:
    """An agent as a tool call found it, in the call's write transaction."""

    agent: AgentRecord
    blocks: list[BlockRecord]  # attach order
    holders: Mapping[str, int]  # block id -> how many agents it is attached to
    counts: tuple[int, int, int] | None  # messages, passages, files; None unless ``on_edit``

    def shared(self, block_id: str) -> bool:
        """Whether a block is attached to another agent too (a block created by the call is not)."""
        return self.holders.get(block_id, 1) > 1

    def memory_counts(self, conn: Connection) -> MemoryCounts | None:
        """The counts for the agent's recompile (its passages' tags read now, if it has passages)."""
        return None if self.counts is None else counts_with_tags(conn, self.agent.id, *self.counts)


def edit_target(conn: Connection, tenant_id: str, agent_id: str) -> EditTarget:
    """Read and lock the agent a tool call edits; AgentNotFound if the tenant has no such agent."""
    params = {"agent_id": agent_id, "tenant_id": tenant_id}
    if conn.dialect.name != "sqlite" and agent_id not in conn.execute(_LOCK_AGENTS, params).scalars().all():
        raise AgentNotFound(agent_id)
    rows = conn.execute(_EDIT_TARGET, params).mappings().all()
    if not rows:
        raise AgentNotFound(agent_id)
    attached = [row for row in rows if row["id"] is not None]
    blocks = [block_record(row) for row in attached]
    agent = agent_record(rows[0], tuple(block.block.label for block in blocks), prefix="agent_")
    first = rows[0]
    counts = None
    if first["count_messages"] is not None:
        counts = (int(first["count_messages"]), int(first["count_passages"]), int(first["count_files"]))
    return EditTarget(agent, blocks, {row["id"]: int(row["holders"]) for row in attached}, counts)
