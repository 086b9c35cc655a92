"""ExecuteTool: run a memory tool call as an LLM emitted it, atomically, and answer as the LLM sees it.

The pure planner decides what the call does against a snapshot of the agent's memory; this module
applies the planned changes in the same write transaction (so nothing else can interleave), follows the
agent's recompile policy, and turns any domain error into a failed tool *result* — except a stale
etag, which is the caller's concurrency problem and fails the RPC with ABORTED.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from strata_memory.domain.errors import AgentNotFound, BlockNotFound, EtagMismatch
from strata_memory.domain.model import Block, RecompilePolicy
from strata_memory.domain.tools import (
    RETRIEVAL_TOOLS,
    Change,
    CreateBlock,
    DeleteBlock,
    PlanOptions,
    RenameBlock,
    SetDescription,
    SetValue,
    ToolOutcome,
    plan_tool_call,
    tool_envelope,
)
from strata_memory.operations.agents import new_id
from strata_memory.operations.external_tools import ExternalTools
from strata_memory.operations.prompts import Clock, Prompts
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import edit_target as edit_rows
from strata_memory.store.database import Database
from strata_memory.store.records import AgentRecord, BlockRecord
from strata_serving.errors import StrataError


@dataclass(frozen=True, slots=True)
class ToolRun:
    """The outcome of one tool call as ExecuteTool reports it."""

    ok: bool
    text: str
    reason: str
    envelope: str
    block: BlockRecord | None = None
    prompt_recompiled: bool = False


@dataclass(frozen=True, slots=True)
class ToolCall:
    tenant_id: str
    agent_id: str
    conversation_id: str
    name: str
    arguments: str
    etag: str = ""


class ToolRunner:
    def __init__(
        self, db: Database, prompts: Prompts, clock: Clock, external: ExternalTools | None = None
    ) -> None:
        self._db = db
        self._prompts = prompts
        self._clock = clock
        self._external = external

    async def execute(self, call: ToolCall) -> ToolRun:
        """Run the call; an unknown agent or a stale etag fails the RPC, any other refusal is a result."""
        try:
            if call.name in RETRIEVAL_TOOLS and self._external is not None:
                agent = await self._agent(call)
                text = await self._external.run(call.name, call.arguments, agent)
                return self._succeeded(
                    agent, text, recompiled=call.name == "archival_memory_insert" and _on_edit(agent)
                )
            return await self._db.write(lambda conn: self._apply(conn, call))
        except (EtagMismatch, AgentNotFound):
            raise
        except StrataError as refused:
            timezone = (await self._agent(call)).timezone  # only refusals need it read separately
            return ToolRun(
                ok=False,
                text=refused.message,
                reason=refused.reason,
                envelope=tool_envelope(False, refused.message, self._clock(), timezone),
            )

    async def _agent(self, call: ToolCall) -> AgentRecord:
        return await self._db.read(lambda conn: agent_rows.get_agent(conn, call.tenant_id, call.agent_id))

    def _succeeded(self, agent: AgentRecord, text: str, *, recompiled: bool) -> ToolRun:
        envelope = tool_envelope(True, text, self._clock(), agent.timezone)
        return ToolRun(ok=True, text=text, reason="", envelope=envelope, prompt_recompiled=recompiled)

    def _apply(self, conn: Connection, call: ToolCall) -> ToolRun:
        target = edit_rows.edit_target(conn, call.tenant_id, call.agent_id)
        agent = target.agent
        memory = {r.block.label: r for r in target.blocks}
        options = PlanOptions(
            recompile_on_edit=agent.recompile_policy is RecompilePolicy.ON_EDIT,
            result_style=agent.tool_result_style,
        )
        outcome = plan_tool_call(
            call.name, call.arguments, {k: r.block for k, r in memory.items()}, options=options
        )
        _check_etag(call, outcome, memory)
        touched = [
            self._apply_change(conn, agent, memory, c, source=f"tool:{call.name}") for c in outcome.changes
        ]
        # Other agents holding a touched block are recompiled too (a block only this agent holds is not
        # looked up again).
        affected = [
            agent.id,
            *(
                h
                for block_id in touched
                if target.shared(block_id)
                for h in block_rows.holders(conn, block_id)
            ),
        ]
        # The agent's blocks as this call left them, in attach order (a rename moved its block to the
        # end of ``memory``, so then they are read again).
        in_order = not any(isinstance(change, RenameBlock) for change in outcome.changes)
        written = {agent.id: list(memory.values())} if in_order else None
        recompiled = bool(touched) and self._prompts.after_memory_change(
            conn,
            call.tenant_id,
            affected,
            read=[agent],
            memory=written,
            counts={agent.id: target.memory_counts(conn)},
        )
        edited = None if outcome.edited_label is None else memory.get(outcome.edited_label)
        return ToolRun(
            ok=True,
            text=outcome.text,
            reason="",
            envelope=tool_envelope(True, outcome.text, self._clock(), agent.timezone),
            block=edited,
            prompt_recompiled=recompiled,
        )

    def _apply_change(
        self,
        conn: Connection,
        agent: AgentRecord,
        memory: dict[str, BlockRecord],
        change: Change,
        *,
        source: str,
    ) -> str:
        """Apply one planned change; returns the id of the block it touched."""
        actor = agent.id
        match change:
            case CreateBlock(label=label, value=value, description=description, limit=limit):
                block = Block(
                    label=label, value=value, description=description, limit=limit, id=new_id("block")
                )
                record = block_rows.insert_block(conn, agent.tenant_id, block, source=source, actor=actor)
                block_rows.attach(conn, agent.id, record.block)
                memory[label] = record
                return record.block.id
            case SetValue(label=label, value=value):
                memory[label] = _rewrite(conn, memory, label, {"value": value}, source=source, actor=actor)
                return memory[label].block.id
            case SetDescription(label=label, description=description):
                memory[label] = _rewrite(
                    conn, memory, label, {"description": description}, source=source, actor=actor
                )
                return memory[label].block.id
            case RenameBlock(old_label=old, new_label=new):
                memory[new] = _rewrite(conn, memory, old, {"label": new}, source=source, actor=actor)
                del memory[old]
                return memory[new].block.id
            case DeleteBlock(label=label):
                record = _current(memory, label)
                block_rows.detach(conn, agent.id, record.block.id)
                block_rows.delete_if_orphaned(conn, [record.block.id])
                del memory[label]
                return record.block.id


def _on_edit(agent: AgentRecord) -> bool:
    return agent.recompile_policy is RecompilePolicy.ON_EDIT


def _rewrite(
    conn: Connection,
    memory: Mapping[str, BlockRecord],
    label: str,
    fields: dict[str, str],
    *,
    source: str,
    actor: str,
) -> BlockRecord:
    current = _current(memory, label)
    new = dataclasses.replace(current.block, **fields)  # type: ignore[arg-type]
    return block_rows.write_block(conn, current, new, source=source, actor=actor)


def _current(memory: Mapping[str, BlockRecord], label: str) -> BlockRecord:
    record = memory.get(label)
    if record is None:
        raise BlockNotFound(label, available=tuple(memory))
    return record


def _check_etag(call: ToolCall, outcome: ToolOutcome, memory: Mapping[str, BlockRecord]) -> None:
    """With an etag, the block the call edits must be the very block, in the very state, it names.

    A call that would create the block (``memory_rethink`` on a missing label) cannot match any etag:
    the state the caller read is gone, so it is refused rather than used to create a new block.
    """
    if not call.etag:
        return
    for change in outcome.changes:
        label = change.old_label if isinstance(change, RenameBlock) else change.label
        record = memory.get(label)
        actual = "" if record is None else record.etag
        if actual != call.etag:
            raise EtagMismatch(f"Block '{label}'", expected=call.etag, actual=actual)
