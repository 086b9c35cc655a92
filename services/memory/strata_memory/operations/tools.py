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

from strata_memory.domain.budgets import check_budget
from strata_memory.domain.errors import AgentNotFound, BlockNotFound, EtagMismatch, MergeConflict, UnknownBase
from strata_memory.domain.merge import merged_changes
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
from strata_memory.operations.blocks import version_block
from strata_memory.operations.external_tools import ExternalTools
from strata_memory.operations.prompts import Clock, Prompts
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import edit_target as edit_rows
from strata_memory.store.database import Database
from strata_memory.store.records import AgentRecord, BlockRecord, etag_of
from strata_serving.errors import InvalidArgument, StrataError


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
    base_etag: str = ""
    """The call was written against that version of its block: changes since are merged, not lost."""


class ToolRunner:
    def __init__(
        self, db: Database, prompts: Prompts, clock: Clock, external: ExternalTools | None = None
    ) -> None:
        self._db = db
        self._prompts = prompts
        self._clock = clock
        self._external = external

    async def execute(self, call: ToolCall) -> ToolRun:
        """Run the call; an unknown agent, a stale etag, an unknown base or a merge conflict fails the
        RPC (the caller's concern, not the LLM's), any other refusal is a result."""
        if call.etag and call.base_etag:
            raise InvalidArgument.field(
                "base_etag", "send etag (only if unchanged) or base_etag (merge onto changes since), not both"
            )
        try:
            if call.name in RETRIEVAL_TOOLS and self._external is not None:
                agent = await self._agent(call)
                text = await self._external.run(call.name, call.arguments, agent)
                return self._succeeded(
                    agent, text, recompiled=call.name == "archival_memory_insert" and _on_edit(agent)
                )
            # Concurrent edits share a transaction and its one commit (SQLite group commit), each in a
            # savepoint of its own and answered once that commit is durable (``Database.write_together``).
            return await self._db.write_together(lambda conn: self._apply(conn, call))
        except (EtagMismatch, MergeConflict, UnknownBase, AgentNotFound):
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
        seen = {k: r.block for k, r in memory.items()}
        base = based_on(conn, memory, call.base_etag)
        if base is not None:
            seen[base.label] = _as_seen(memory[base.label].block, base)
        outcome = plan_tool_call(call.name, call.arguments, seen, options=options)
        _check_etag(call, outcome, memory)
        writer = _Writer(conn, agent, memory, source=f"tool:{call.name}", base=base)
        touched = [writer.apply(c) for c in outcome.changes]
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


class _Writer:
    """Applies a plan's changes in the call's transaction, merging them onto changes made since
    ``base`` (the version the call was written against) when there is one."""

    def __init__(
        self,
        conn: Connection,
        agent: AgentRecord,
        memory: dict[str, BlockRecord],
        *,
        source: str,
        base: Block | None,
    ) -> None:
        self._conn, self._agent, self._memory = conn, agent, memory
        self._source, self._base = source, base

    def apply(self, change: Change) -> str:
        """Apply one planned change; returns the id of the block it touched."""
        conn, agent, memory = self._conn, self._agent, self._memory
        match change:
            case CreateBlock(label=label, value=value, description=description, limit=limit):
                block = Block(
                    label=label, value=value, description=description, limit=limit, id=new_id("block")
                )
                record = block_rows.insert_block(
                    conn, agent.tenant_id, block, source=self._source, actor=agent.id
                )
                block_rows.attach(conn, agent.id, record.block)
                memory[label] = record
                return record.block.id
            case SetValue(label=label, value=value):
                memory[label] = self._rewrite(label, {"value": value})
                return memory[label].block.id
            case SetDescription(label=label, description=description):
                memory[label] = self._rewrite(label, {"description": description})
                return memory[label].block.id
            case RenameBlock(old_label=old, new_label=new):
                memory[new] = self._rewrite(old, {"label": new})
                del memory[old]
                return memory[new].block.id
            case DeleteBlock(label=label):
                record = _current(memory, label)
                if self._base is not None and self._base.id == record.block.id:
                    _check_unmoved(record, self._base)
                block_rows.detach(conn, agent.id, record.block.id)
                block_rows.delete_if_orphaned(conn, [record.block.id])
                del memory[label]
                return record.block.id

    def _rewrite(self, label: str, fields: dict[str, object]) -> BlockRecord:
        """Write ``fields`` (merged onto the changes since the base, for the based-on block; the
        budget is then checked again, on the merged value)."""
        current = _current(self._memory, label)
        source, base = self._source, self._base
        if base is not None and base.id == current.block.id and base.version != current.block.version:
            fields = merged_changes(base, current.block, fields)
            source = f"{source}(merged v{base.version} onto v{current.block.version})"
            check_budget(current.block, str(fields.get("value", current.block.value)))
        new = dataclasses.replace(current.block, **fields)  # type: ignore[arg-type]
        return block_rows.write_block(self._conn, current, new, source=source, actor=self._agent.id)


def based_on(conn: Connection, memory: Mapping[str, BlockRecord], base_etag: str) -> Block | None:
    """The version ``base_etag`` names of one of the agent's blocks, as that block was (under its
    current label); None without a base etag. Raises UnknownBase when no block has it."""
    if not base_etag:
        return None
    for label, record in memory.items():
        found = block_rows.version_for_etag(conn, record, base_etag)
        if found is not None:
            return dataclasses.replace(version_block(found), label=label)
    raise UnknownBase("any block of this agent", base_etag)


def _as_seen(current: Block, base: Block) -> Block:
    """What the call's author saw: the base's text and description, with the block's current label,
    limit and read-only flag (those rules apply to what is written now)."""
    return dataclasses.replace(current, value=base.value, description=base.description)


def _check_unmoved(record: BlockRecord, base: Block) -> None:
    """Deleting a block merges with nothing: it must still be at the version the call was based on."""
    if record.block.version != base.version:
        raise EtagMismatch(
            f"Block '{record.block.label}'", expected=etag_of(base.id, base.version), actual=record.etag
        )


def _on_edit(agent: AgentRecord) -> bool:
    return agent.recompile_policy is RecompilePolicy.ON_EDIT


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
