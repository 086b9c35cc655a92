"""Compiling, storing and recompiling system prompts (one per agent and conversation).

A stored prompt changes only on a recompile: explicit (RecompileSystemPrompt) or, for agents with
the ``on_edit`` policy, after each memory change. Its fingerprint hashes everything that shapes the
text except the "last recompiled" timestamp, so a read can say whether it is stale.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import sqlite3
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import groupby
from typing import TypeVar, cast

from sqlalchemy.engine import Connection

from strata_memory.domain.errors import ReceiptNotFound
from strata_memory.domain.model import Directory, FileBlock, RecompilePolicy, RenderMode
from strata_memory.domain.prompt import MemoryStats, assemble_system_prompt, render_memory_metadata
from strata_memory.domain.receipts import BlockUse, PromptReceipt, system_digest
from strata_memory.domain.render import render_directories
from strata_memory.operations.render_cache import RenderCache
from strata_memory.operations.reply_cache import ReplyCache
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import files as file_rows
from strata_memory.store import prompts as prompt_rows
from strata_memory.store import receipts as receipt_rows
from strata_memory.store.database import Database
from strata_memory.store.prompts import MemoryCounts, PromptSnapshot
from strata_memory.store.records import AgentRecord, BlockRecord, FileRecord, PromptRecord, to_datetime

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Clock = Callable[[], datetime]
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class PromptView:
    """A stored prompt and whether memory has moved on since it was compiled."""

    prompt: PromptRecord
    stale: bool


@dataclass(frozen=True, slots=True)
class Recompiled:
    prompt: PromptRecord
    diff: str
    saved: bool


class Prompts:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self.renders = RenderCache()
        self.replies = ReplyCache()
        """Replies of the hot reads (GetBlock, RenderMemory) under the stamps they were built from."""

    @property
    def database(self) -> Database:
        """The store prompts are compiled from (``operations.memory_time`` reads past memory in it)."""
        return self._db

    async def get(self, tenant_id: str, agent_id: str, conversation_id: str) -> PromptView:
        """The stored prompt; an ``on_edit`` agent's recompile that a change deferred (CreateBlock) is
        done first, so a read never shows a prompt missing a change its policy says it holds."""

        found = await self._db.read(lambda conn: self._view(conn, tenant_id, agent_id, conversation_id))
        if found is None:  # due: compile and read it back in one write transaction
            return await self._db.write(
                lambda conn: self._compiled_view(conn, tenant_id, agent_id, conversation_id)
            )
        return found

    async def get_reply(
        self, tenant_id: str, agent_id: str, conversation_id: str, build: Callable[[PromptView], R]
    ) -> R:
        """``build(view)`` of :meth:`get`, kept and reused while everything the view is a function of is
        unchanged (``_prompt_key``): that is read on the event loop where it is safe (``store.glance``),
        and in the full read's own transaction on a miss. Not kept: a prompt compiled by the read
        itself (none stored, or a deferred recompile due) and an agent's with files."""
        if not self._db.glances.enabled:
            return build(await self.get(tenant_id, agent_id, conversation_id))
        warm = ("prompt", tenant_id, agent_id, conversation_id)
        key = self._db.glances.run(warm, lambda raw: _prompt_key(raw, tenant_id, agent_id, conversation_id))
        if key is not None and (kept := self.replies.get(key)) is not None:
            return cast(R, kept)

        def work(conn: Connection) -> tuple[Hashable | None, PromptView | None]:
            raw = cast(sqlite3.Connection, conn.connection.driver_connection)  # this transaction's
            return _prompt_key(raw, tenant_id, agent_id, conversation_id), self._view(
                conn, tenant_id, agent_id, conversation_id
            )

        key, view = await self._db.read(work)
        self._db.glances.warm(warm)
        if view is None:  # due: compiled by a write (get), not kept
            return build(await self.get(tenant_id, agent_id, conversation_id))
        built = build(view)
        if key is not None:
            blocks = [stamp[0] for stamp in key[-1]]  # type: ignore[index]
            self.replies.put(key, built, characters=len(view.prompt.text), block_ids=blocks)
        return built

    def _compiled_view(
        self, conn: Connection, tenant_id: str, agent_id: str, conversation_id: str
    ) -> PromptView:
        agent = agent_rows.get_agent(conn, tenant_id, agent_id, for_update=True)
        if prompt_rows.recompile_due(conn, agent_id):  # not compiled meanwhile by another reader
            self.recompile_all(conn, agent)
        view = self._view(conn, tenant_id, agent_id, conversation_id)
        if view is None:  # cannot be: the snapshot was rewritten (due cleared) in this transaction
            raise RuntimeError(f"agent {agent_id}'s deferred recompile is still due after compiling it")
        return view

    async def receipt(self, tenant_id: str, receipt_id: str) -> PromptReceipt:
        return await self._db.read(lambda conn: receipt_of(conn, tenant_id, receipt_id))

    async def recompile(
        self, tenant_id: str, agent_id: str, conversation_id: str, *, dry_run: bool
    ) -> Recompiled:
        def work(conn: Connection) -> Recompiled:
            agent = agent_rows.get_agent(conn, tenant_id, agent_id, for_update=not dry_run)
            agent_rows.get_conversation(conn, agent_id, conversation_id)
            previous = _stored(conn, agent_id, conversation_id)
            fresh = self.compile(conn, agent, conversation_id)
            diff = unified_diff(previous.text if previous else "", fresh.text)
            if not dry_run:
                prompt_rows.save_prompt(conn, fresh)
                fresh = _as_recorded(conn, fresh)
            return Recompiled(fresh, diff, saved=not dry_run)

        if dry_run:
            return await self._db.read(work)
        return await self._db.write(work)

    async def render(self, tenant_id: str, agent_id: str, mode: RenderMode | None) -> tuple[str, RenderMode]:
        """Core memory rendered in ``mode`` (the agent's own mode when None)."""
        text, used, _ = await self._render_read(tenant_id, agent_id, mode)
        return text, used

    async def render_reply(
        self, tenant_id: str, agent_id: str, mode: RenderMode | None, build: Callable[[str, RenderMode], R]
    ) -> R:
        """``build(text, mode used)`` of :meth:`render`, kept and reused while the agent's render mode
        and its blocks' stamps are unchanged and it has no files (files carry no version): the stamps
        are read on the event loop where that is safe (``store.glance``, ``operations.reply_cache``)."""
        seen = self._db.glances.run(
            ("memory", tenant_id, agent_id), lambda raw: block_rows.memory_stamps(raw, tenant_id, agent_id)
        )
        if seen is not None and seen[1] == 0:
            kept = self.replies.get(("RenderMemory", tenant_id, agent_id, mode, seen[0], seen[2]))
            if kept is not None:
                return cast(R, kept)
        text, used, read = await self._render_read(tenant_id, agent_id, mode)
        built = build(text, used)
        if read.file_count == 0:
            stamps = tuple(block_rows.stamp_of(r) for r in read.blocks)
            key = ("RenderMemory", tenant_id, agent_id, mode, read.render_mode.value, stamps)
            self.replies.put(key, built, characters=len(text), block_ids=[s[0] for s in stamps])
        return built

    async def _render_read(
        self, tenant_id: str, agent_id: str, mode: RenderMode | None
    ) -> tuple[str, RenderMode, block_rows.AgentMemory]:
        def work(conn: Connection) -> tuple[str, RenderMode, block_rows.AgentMemory]:
            memory = block_rows.agent_memory(conn, tenant_id, agent_id)
            used = mode or memory.render_mode
            text = self._core_memory(conn, agent_id, used, memory.blocks, files=memory.file_count > 0)
            return text, used, memory

        found = await self._db.read(work)
        self._db.glances.warm(("memory", tenant_id, agent_id))
        return found

    def compile(self, conn: Connection, agent: AgentRecord, conversation_id: str) -> PromptRecord:
        """The prompt as it would be compiled now (not saved)."""
        return _prompt(agent, self._snapshot(conn, agent), conversation_id, self._clock())

    def recompile_all(
        self,
        conn: Connection,
        agent: AgentRecord,
        blocks: Sequence[BlockRecord] | None = None,
        counts: MemoryCounts | None = None,
    ) -> None:
        """Recompile the prompt of every conversation of the agent, at a cost that does not grow with
        their number.

        Memory is read and rendered once and stored once, as a snapshot every conversation's prompt
        row points at (a fixed number of statements); conversations differ only in their metadata
        line, so each prompt's text is assembled from the snapshot when it is read. ``blocks`` and
        ``counts``, when given, are the agent's blocks in attach order as this transaction last wrote
        them and its metadata counts as this transaction read them (they are not read again).
        """
        snapshot, now = self._snapshot(conn, agent, blocks, counts), self._clock()
        stored = PromptSnapshot(
            system=agent.system,
            memory=snapshot.memory,
            timezone=agent.timezone,
            message_count=snapshot.message_count,
            passage_count=snapshot.archival_count,
            tags=tuple(snapshot.archival_tags),
            compiled_us=_us(now),
            receipt=_receipt(agent, snapshot, now),
        )
        prompt_rows.save_snapshot(conn, agent.id, stored)

    def after_memory_change(
        self,
        conn: Connection,
        tenant_id: str,
        agent_ids: Iterable[str],
        *,
        read: Iterable[AgentRecord] = (),
        memory: Mapping[str, Sequence[BlockRecord]] | None = None,
        counts: Mapping[str, MemoryCounts | None] | None = None,
    ) -> bool:
        """Apply each agent's policy after its memory changed; True if any prompt was recompiled.

        Each agent is read locked (``for_update``) before its memory is, so writers of one agent's
        prompt take turns and each compiles what the one before committed. ``read`` holds agents the
        caller already read, locked, in this transaction (they are not read again); ``memory`` maps
        agent ids to their blocks, in attach order, as this transaction left them, and ``counts`` to
        their metadata counts as this transaction read them.
        """
        known = {agent.id: agent for agent in read}
        blocks, counted = memory or {}, counts or {}
        recompiled = False
        for agent_id in sorted(set(agent_ids)):  # one locking order for every writer
            agent = known.get(agent_id) or agent_rows.get_agent(conn, tenant_id, agent_id, for_update=True)
            if agent.recompile_policy is RecompilePolicy.ON_EDIT:
                self.recompile_all(conn, agent, blocks.get(agent_id), counted.get(agent_id))
                recompiled = True
        return recompiled

    def _view(
        self, conn: Connection, tenant_id: str, agent_id: str, conversation_id: str
    ) -> PromptView | None:
        """The stored prompt and whether it is stale; None while a deferred recompile is due."""
        agent = agent_rows.get_agent(conn, tenant_id, agent_id)
        found, counts, due = prompt_rows.conversation_prompt(conn, agent_id, conversation_id)
        if due:
            return None
        stored = _assembled(agent_id, conversation_id, found)
        if stored is None:  # compiled now, not stored: no receipt is recorded for it
            return PromptView(
                dataclasses.replace(self.compile(conn, agent, conversation_id), receipt=None), stale=True
            )
        snapshot = self._snapshot(conn, agent, counts=counts)
        current = _fingerprint(agent.id, agent.system, agent.timezone, snapshot, conversation_id)
        return PromptView(stored, stale=stored.fingerprint != current)

    def _snapshot(
        self,
        conn: Connection,
        agent: AgentRecord,
        blocks: Sequence[BlockRecord] | None = None,
        counts: MemoryCounts | None = None,
    ) -> _Snapshot:
        counts = counts or prompt_rows.memory_counts(conn, agent.id)
        if blocks is None:
            blocks = block_rows.agent_blocks(conn, agent.id)
        return _Snapshot(
            memory=self._core_memory(conn, agent.id, agent.render_mode, blocks, files=counts.files > 0),
            message_count=counts.messages,
            archival_count=counts.passages,
            archival_tags=counts.tags,
            blocks=tuple(BlockUse(r.block.id, r.block.label, r.block.version) for r in blocks),
            file_count=counts.files,
        )

    def _core_memory(
        self,
        conn: Connection,
        agent_id: str,
        mode: RenderMode,
        blocks: Sequence[BlockRecord] | None = None,
        *,
        files: bool = True,
    ) -> str:
        """Core memory rendered; ``blocks`` are read unless given, files only if ``files`` may exist.

        The blocks' part is reused from :class:`RenderCache` when their ids and versions, as read in
        this transaction, were rendered before in this mode.
        """
        if blocks is None:
            blocks = block_rows.agent_blocks(conn, agent_id)
        attached = directories(file_rows.agent_files(conn, agent_id)) if files else []
        return self.renders.render_blocks(blocks, mode) + render_directories(attached)


def _prompt_key(
    raw: sqlite3.Connection, tenant_id: str, agent_id: str, conversation_id: str
) -> Hashable | None:
    """What a conversation's prompt read is a function of (``store.prompts.prompt_inputs`` and the
    blocks' stamps), or None when its read would not be kept (see ``Prompts.get_reply``)."""
    inputs = prompt_rows.prompt_inputs(raw, tenant_id, agent_id, conversation_id)
    memory = block_rows.memory_stamps(raw, tenant_id, agent_id) if inputs and inputs.cacheable else None
    if inputs is None or memory is None:
        return None
    return ("GetSystemPrompt", tenant_id, agent_id, conversation_id, inputs, memory[2])


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """What an agent's prompt is built from, read once: rendered core memory and the counts."""

    memory: str
    message_count: int
    archival_count: int
    archival_tags: list[str]
    blocks: tuple[BlockUse, ...] = ()
    """The blocks rendered, in order, at the versions read."""
    file_count: int = 0


def _stored(conn: Connection, agent_id: str, conversation_id: str) -> PromptRecord | None:
    """The stored prompt of a conversation, its text assembled if its row points at a snapshot."""
    return _assembled(agent_id, conversation_id, prompt_rows.get_prompt(conn, agent_id, conversation_id))


def _assembled(
    agent_id: str, conversation_id: str, found: PromptRecord | PromptSnapshot | None
) -> PromptRecord | None:
    if not isinstance(found, PromptSnapshot):
        return found
    snapshot = _Snapshot(found.memory, found.message_count, found.passage_count, list(found.tags))
    moment = to_datetime(found.compiled_us)
    record = _assemble(
        agent_id, found.system, found.timezone, snapshot, conversation_id=conversation_id, now=moment
    )
    return dataclasses.replace(record, compiled_us=found.compiled_us, receipt=found.receipt)


def _prompt(agent: AgentRecord, snapshot: _Snapshot, conversation_id: str, now: datetime) -> PromptRecord:
    """The system prompt text, its fingerprint (everything but the recompile timestamp) and receipt."""
    record = _assemble(
        agent.id, agent.system, agent.timezone, snapshot, conversation_id=conversation_id, now=now
    )
    return dataclasses.replace(record, receipt=_receipt(agent, snapshot, now))


def _receipt(agent: AgentRecord, snapshot: _Snapshot, now: datetime) -> PromptReceipt:
    """What a prompt compiled at ``now`` from ``snapshot`` was built from."""
    return PromptReceipt(
        tenant_id=agent.tenant_id,
        agent_id=agent.id,
        compiled_us=_us(now),
        render_mode=agent.render_mode.value,
        blocks=snapshot.blocks,
        message_count=snapshot.message_count,
        passage_count=snapshot.archival_count,
        file_count=snapshot.file_count,
        tags=tuple(snapshot.archival_tags),
        system_sha256=system_digest(agent.system),
    )


def _assemble(
    agent_id: str, system: str, timezone: str, snapshot: _Snapshot, *, conversation_id: str, now: datetime
) -> PromptRecord:
    stats = _stats(agent_id, timezone, snapshot, conversation_id, now)
    text = assemble_system_prompt(system, snapshot.memory, render_memory_metadata(stats))
    fingerprint = _fingerprint(agent_id, system, timezone, snapshot, conversation_id)
    return PromptRecord(agent_id, conversation_id, text, fingerprint, _us(now))


def _fingerprint(agent_id: str, system: str, timezone: str, snapshot: _Snapshot, conversation_id: str) -> str:
    """A hash of the prompt's text with the recompile timestamp left out."""
    timeless = _stats(agent_id, timezone, snapshot, conversation_id, _EPOCH)
    basis = assemble_system_prompt(system, snapshot.memory, render_memory_metadata(timeless))
    return hashlib.sha256(basis.encode()).hexdigest()


def _stats(
    agent_id: str, timezone: str, snapshot: _Snapshot, conversation_id: str, now: datetime
) -> MemoryStats:
    return MemoryStats(
        agent_id=agent_id,
        conversation_id=conversation_id,
        recompiled_at=now,
        timezone=timezone,
        message_count=snapshot.message_count,
        archival_count=snapshot.archival_count,
        archival_tags=snapshot.archival_tags,
    )


def _as_recorded(conn: Connection, prompt: PromptRecord) -> PromptRecord:
    """The prompt with its receipt as recorded (the same memory compiled before keeps that time)."""
    if prompt.receipt is None:
        return prompt
    return dataclasses.replace(prompt, receipt=receipt_of(conn, prompt.receipt.tenant_id, prompt.receipt.id))


def receipt_of(conn: Connection, tenant_id: str, receipt_id: str, *, agent_id: str = "") -> PromptReceipt:
    """The tenant's receipt (of ``agent_id``'s prompts, when given); ReceiptNotFound otherwise."""
    found = receipt_rows.get_receipt(conn, tenant_id, receipt_id)
    if found is None or (agent_id and found.agent_id != agent_id):
        raise ReceiptNotFound(receipt_id, agent_id=agent_id)
    return found


def directories(files: Iterable[FileRecord]) -> list[Directory]:
    """Group an agent's files (ordered by directory) into rendered directories."""
    return [
        Directory(name=name, files=tuple(_file_block(f) for f in group))
        for name, group in groupby(files, key=lambda f: f.directory)
    ]


def _file_block(file: FileRecord) -> FileBlock:
    shown = file.content[: file.limit]
    return FileBlock(
        name=file.name, value=shown, limit=file.limit, description=file.description, is_open=file.is_open
    )


def unified_diff(old: str, new: str, *, old_name: str = "stored", new_name: str = "recompiled") -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=old_name, tofile=new_name
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)
