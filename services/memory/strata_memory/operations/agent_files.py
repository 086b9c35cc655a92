"""ImportAgentFile and ExportAgentFile: a Letta Agent File applied in one transaction, and written back.

The mapping itself is pure (``domain.agent_files``); this module gives the plan Strata ids, stores it
all or nothing — agents, blocks (a shared block once, attached to each agent that lists it), messages
with their outbox jobs, what was kept verbatim, the compiled prompts — and reads it back for export.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.engine import Connection

from strata_memory.domain import agent_files as af
from strata_memory.domain.errors import AgentNotFound, BlockNotFound
from strata_memory.domain.model import RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.operations.agents import new_id
from strata_memory.operations.archival import IndexQueue, Written
from strata_memory.operations.idempotency import Once
from strata_memory.operations.prompts import Prompts
from strata_memory.store import agent_files as residue_rows
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import files as file_rows
from strata_memory.store import index_jobs
from strata_memory.store import messages as message_rows
from strata_memory.store.agent_files import Residue
from strata_memory.store.database import Database
from strata_memory.store.records import (
    DEFAULT_CONVERSATION,
    AgentRecord,
    BlockRecord,
    FileRecord,
    MessageRecord,
    Page,
    ToolCallRecord,
    now_us,
)

SOURCE = "api:ImportAgentFile"
T = TypeVar("T")
_ALL = Page(0, 2**31 - 1)


@dataclass(frozen=True, slots=True)
class Imported:
    agents: list[AgentRecord]
    blocks: list[BlockRecord]
    ids: dict[str, str]
    """The file's ids → Strata ids."""
    report: af.Report
    message_count: int


@dataclass(frozen=True, slots=True)
class _Prepared:
    """The plan with Strata ids: what one transaction stores."""

    agents: list[AgentRecord]
    blocks: dict[str, BlockRecord]
    """File block id → the block to store (id set, not yet stored)."""
    messages: list[list[MessageRecord]]
    residues: list[Residue]
    ids: dict[str, str]


class AgentFiles:
    def __init__(self, db: Database, prompts: Prompts, queue: IndexQueue, *, max_file_bytes: int) -> None:
        self._db = db
        self._prompts = prompts
        self._queue = queue
        self.max_file_bytes = max_file_bytes

    async def import_file(self, tenant_id: str, data: bytes, *, request_id: str = "") -> Written[Imported]:
        """Create everything the file holds, or nothing (INVALID_ARGUMENT naming the path inside it)."""
        once = Once.of(tenant_id, "ImportAgentFile", request_id, hashlib.sha256(data).hexdigest())
        plan = await asyncio.to_thread(_plan, data, self.max_file_bytes)
        prepared = _prepare(tenant_id, plan)

        def work(conn: Connection) -> Written[Imported]:
            claimed = [a.id for a in prepared.agents] + [b.block.id for b in prepared.blocks.values()]
            if once is not None and (earlier := once.claim(conn, claimed)) is not None:
                return _earlier(conn, tenant_id, earlier, plan)
            return self._store(conn, tenant_id, plan, prepared)

        written = await self._db.write(work)
        self._queue.notify()
        return written

    def _store(
        self, conn: Connection, tenant_id: str, plan: af.ImportPlan, prepared: _Prepared
    ) -> Written[Imported]:
        stored_blocks = {
            file_id: block_rows.insert_block(
                conn, tenant_id, r.block, source=SOURCE, actor=prepared.agents[0].id
            )
            for file_id, r in prepared.blocks.items()
        }
        message_ids: list[str] = []
        for agent, planned, messages in zip(prepared.agents, plan.agents, prepared.messages, strict=True):
            agent_rows.insert_agent(conn, agent)
            for file_id in planned.block_file_ids:
                block_rows.attach(conn, agent.id, stored_blocks[file_id].block)
            for file in planned.files:
                file_rows.insert_file(conn, _file_record(tenant_id, agent.id, file))
            if messages:
                first = agent_rows.reserve_sequences_of(conn, tenant_id, agent.id, len(messages))
                message_ids += [m.id for m in message_rows.append(conn, messages, first=first)]
        residue_rows.insert_residues(conn, prepared.residues)
        created = [agent_rows.get_agent(conn, tenant_id, a.id) for a in prepared.agents]
        for agent in created:
            self._prompts.recompile_all(conn, agent)
        jobs = index_jobs.enqueue(conn, tenant_id, index_jobs.UPSERT, message_ids)
        imported = Imported(
            created, list(stored_blocks.values()), prepared.ids, plan.report, len(message_ids)
        )
        return Written(imported, jobs)

    async def export_file(
        self, tenant_id: str, agent_id: str, *, with_messages: bool
    ) -> tuple[bytes, list[str]]:
        """The agent (with the agents imported together with it) as an Agent File, and their ids."""

        def work(conn: Connection) -> tuple[list[af.ExportedAgent], dict[str, Any] | None]:
            agent_rows.get_agent(conn, tenant_id, agent_id)
            group = residue_rows.group_of(conn, tenant_id, agent_id)
            if not group:
                return [_exported(conn, tenant_id, agent_id, None, with_messages)], None
            agents = [_exported(conn, tenant_id, r.agent_id, r, with_messages) for r in group]
            return agents, group[0].document

        agents, document = await self._db.read(work)
        written = af.write_document(agents, document, created_us=now_us())
        data = json.dumps(written, ensure_ascii=False, indent=2).encode()
        return data, [a.strata_id for a in agents]


def _plan(data: bytes, max_bytes: int) -> af.ImportPlan:
    return af.plan_import(af.read_document(data, max_bytes=max_bytes))


def _prepare(tenant_id: str, plan: af.ImportPlan) -> _Prepared:
    """Strata ids for everything in the plan, and the rows that keep what it does not map."""
    ids: dict[str, str] = {}
    blocks: dict[str, BlockRecord] = {}
    for planned_block in plan.blocks:
        block = dataclasses.replace(planned_block.block, id=new_id("block"), version=0)
        ids[planned_block.file_id] = block.id
        blocks[planned_block.file_id] = BlockRecord(block, tenant_id, 0, 0)
    agents, messages = [], []
    stamp = now_us()
    for planned in plan.agents:
        agent = _agent_record(tenant_id, planned)
        ids[planned.file_id] = agent.id
        agents.append(agent)
        own = [_message_record(tenant_id, agent.id, m, stamp) for m in planned.messages]
        ids.update((m.file_id, record.id) for m, record in zip(planned.messages, own, strict=True))
        messages.append(own)
    import_id = new_id("import")
    block_residues = {ids[b.file_id]: b.residue for b in plan.blocks}
    residues = [
        Residue(
            agent_id=agent.id,
            tenant_id=tenant_id,
            import_id=import_id,
            position=position,
            agent=planned.residue,
            blocks={ids[f]: block_residues[ids[f]] for f in planned.block_file_ids},
            messages={ids[m.file_id]: m.residue for m in planned.messages},
            document=plan.document,
            ids=ids,
            created_us=stamp,
        )
        for position, (agent, planned) in enumerate(zip(agents, plan.agents, strict=True))
    ]
    return _Prepared(agents, blocks, messages, residues, ids)


def _agent_record(tenant_id: str, planned: af.PlannedAgent) -> AgentRecord:
    return AgentRecord(
        id=new_id("agent"),
        tenant_id=tenant_id,
        name=planned.name,
        system=planned.system,
        render_mode=RenderMode.STANDARD,
        recompile_policy=RecompilePolicy.ON_EDIT,
        timezone=planned.timezone,
        tool_result_style=ToolResultStyle.FULL_VALUE,
        version=0,
        created_us=0,
        updated_us=0,
    )


def _message_record(tenant_id: str, agent_id: str, planned: af.PlannedMessage, stamp: int) -> MessageRecord:
    return MessageRecord(
        id=new_id("message"),
        tenant_id=tenant_id,
        agent_id=agent_id,
        conversation_id=DEFAULT_CONVERSATION,
        role=planned.role,
        content=planned.content,
        name=planned.name,
        tool_calls=tuple(ToolCallRecord(c.id, c.name, c.arguments) for c in planned.tool_calls),
        tool_call_id=planned.tool_call_id,
        created_us=planned.created_us or stamp,
    )


def _file_record(tenant_id: str, agent_id: str, file: af.PlannedFile) -> FileRecord:
    return FileRecord(
        id=new_id("file"),
        tenant_id=tenant_id,
        agent_id=agent_id,
        directory=file.directory,
        name=file.name,
        content=file.content,
        description="",
        limit=file.limit,
        is_open=file.is_open,
        created_us=0,
        updated_us=0,
    )


def _earlier(
    conn: Connection, tenant_id: str, ids: tuple[str, ...], plan: af.ImportPlan
) -> Written[Imported]:
    """What the first call with this request_id created, as stored now (one deleted since is left
    out), for its retry."""
    agents = [
        a for i in ids if i.startswith("agent-") and (a := _stored(agent_rows.get_agent, conn, tenant_id, i))
    ]
    blocks = [
        b for i in ids if i.startswith("block-") and (b := _stored(block_rows.get_block, conn, tenant_id, i))
    ]
    group = residue_rows.group_of(conn, tenant_id, agents[0].id) if agents else []
    file_ids = group[0].ids if group else {}
    message_ids = [m for r in group for m in r.messages]
    jobs = index_jobs.pending_for(conn, tenant_id, message_ids)
    return Written(Imported(agents, blocks, file_ids, plan.report, len(message_ids)), jobs)


def _stored(
    read: Callable[[Connection, str, str], T], conn: Connection, tenant_id: str, object_id: str
) -> T | None:
    try:
        return read(conn, tenant_id, object_id)
    except (AgentNotFound, BlockNotFound):
        return None


def _exported(
    conn: Connection, tenant_id: str, agent_id: str, residue: Residue | None, with_messages: bool
) -> af.ExportedAgent:
    agent = agent_rows.get_agent(conn, tenant_id, agent_id)
    kept_blocks = residue.blocks if residue is not None else {}
    kept_messages = residue.messages if residue is not None else {}
    blocks = tuple(
        af.ExportedBlock(r.block, kept_blocks.get(r.block.id))
        for r in block_rows.agent_blocks(conn, agent_id)
    )
    messages: tuple[af.ExportedMessage, ...] = ()
    if with_messages:
        found, _ = message_rows.list_messages(conn, agent_id, conversation_id="", roles=(), page=_ALL)
        messages = tuple(_exported_message(m, kept_messages.get(m.id)) for m in found)
    return af.ExportedAgent(
        strata_id=agent.id,
        name=agent.name,
        system=agent.system,
        timezone=agent.timezone,
        blocks=blocks,
        messages=messages,
        residue=residue.agent if residue is not None else None,
        file_ids=dict(residue.ids) if residue is not None else {},
    )


def _exported_message(message: MessageRecord, residue: dict[str, Any] | None) -> af.ExportedMessage:
    return af.ExportedMessage(
        strata_id=message.id,
        role=message.role,
        content=message.content,
        name=message.name,
        tool_calls=tuple(af.PlannedToolCall(c.id, c.name, c.arguments) for c in message.tool_calls),
        tool_call_id=message.tool_call_id,
        created_us=message.created_us,
        residue=residue,
    )
