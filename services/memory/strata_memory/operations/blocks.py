"""Blocks through the API: create, read, update with update_mask and etag, share, history."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar, cast

from sqlalchemy.engine import Connection

from strata_memory.domain.budgets import check_budget, check_limit_change, validate_label, validate_limit
from strata_memory.domain.errors import BlockNotFound, EtagMismatch, UnknownBase
from strata_memory.domain.merge import merged_changes
from strata_memory.domain.model import Block, RecompilePolicy
from strata_memory.domain.newlines import changes_with_lf, normalise_newlines
from strata_memory.operations.agents import checked_block
from strata_memory.operations.prompts import Prompts, unified_diff
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import prompts as prompt_rows
from strata_memory.store.database import Database
from strata_memory.store.records import AgentRecord, BlockRecord, BlockVersionRecord, Page
from strata_serving.errors import InvalidArgument

R = TypeVar("R")
BLOCK_FIELDS = ("value", "limit", "description", "read_only", "metadata", "label")


@dataclass(frozen=True, slots=True)
class BlockLocator:
    """Names a block by id, or by its label in an agent's memory."""

    block_id: str = ""
    agent_id: str = ""
    label: str = ""

    def lock(self, conn: Connection, tenant_id: str) -> BlockRecord:
        """The block, locked for this transaction after the agents holding it (one lock order for
        every writer: agents before blocks, see ``store.blocks.lock_holders``)."""
        block_rows.lock_holders(
            conn, tenant_id, block_id=self.block_id, agent_id=self.agent_id, label=self.label
        )
        return self.find(conn, tenant_id, for_update=True)

    def find(self, conn: Connection, tenant_id: str, *, for_update: bool = False) -> BlockRecord:
        if self.block_id:
            return block_rows.get_block(conn, tenant_id, self.block_id, for_update=for_update)
        found = block_rows.block_by_label(conn, tenant_id, self.agent_id, self.label, for_update=for_update)
        if found is not None:
            return found
        agent = agent_rows.get_agent(conn, tenant_id, self.agent_id)  # says which is missing
        raise BlockNotFound(self.label, available=agent.block_labels, scope=f"agent '{agent.id}'")


class Blocks:
    def __init__(self, db: Database, prompts: Prompts) -> None:
        self._db = db
        self._prompts = prompts

    async def create(self, tenant_id: str, block: Block, *, agent_id: str, actor: str) -> BlockRecord:
        """A new block, attached at the end of ``agent_id``'s blocks when given. Its cost does not grow
        with the agent's other blocks: the agent is read by its key, and an ``on_edit`` agent's prompt
        is marked due and compiled at its next read (``Prompts.get``) or next other memory change,
        instead of being recompiled over every block now (only an agent never compiled is)."""
        wanted = checked_block(block)

        def work(conn: Connection) -> BlockRecord:
            policy = agent_rows.recompile_policy(conn, tenant_id, agent_id) if agent_id else None
            record = block_rows.insert_block(conn, tenant_id, wanted, source="api:CreateBlock", actor=actor)
            if agent_id:
                block_rows.attach(conn, agent_id, record.block)
                if policy is RecompilePolicy.ON_EDIT and not prompt_rows.defer_recompile(
                    conn, agent_id, record.updated_us
                ):
                    self._prompts.after_memory_change(conn, tenant_id, [agent_id])
            return record

        return await self._db.write(work)

    async def get(self, tenant_id: str, locator: BlockLocator) -> BlockRecord:
        record = await self._db.read(lambda conn: locator.find(conn, tenant_id))
        self._db.glances.warm(("block", tenant_id, locator))
        return record

    async def reply(self, tenant_id: str, locator: BlockLocator, build: Callable[[BlockRecord], R]) -> R:
        """``build(block)``, kept and reused while the block's stamp is unchanged: the stamp is read on
        the event loop where that is safe (``store.glance``), the block in full on the pool otherwise
        and on a miss (``operations.reply_cache``)."""
        replies = self._prompts.replies
        stamp = self._db.glances.run(
            ("block", tenant_id, locator),
            lambda raw: block_rows.block_stamp(
                raw, tenant_id, block_id=locator.block_id, agent_id=locator.agent_id, label=locator.label
            ),
        )
        if stamp is not None and (kept := replies.get(("GetBlock", tenant_id, stamp))) is not None:
            return cast(R, kept)
        record = await self.get(tenant_id, locator)
        built = build(record)
        replies.put(
            ("GetBlock", tenant_id, block_rows.stamp_of(record)),
            built,
            characters=len(record.block.value),
            block_ids=(record.block.id,),
        )
        return built

    async def listing(self, tenant_id: str, agent_id: str, page: Page) -> list[BlockRecord]:
        def work(conn: Connection) -> list[BlockRecord]:
            if not agent_id:
                return block_rows.tenant_blocks(conn, tenant_id, page)
            agent_rows.get_agent(conn, tenant_id, agent_id)
            return block_rows.agent_blocks(conn, agent_id)[page.offset : page.offset + page.size]

        return await self._db.read(work)

    async def update(
        self,
        tenant_id: str,
        locator: BlockLocator,
        changes: Mapping[str, object],
        etag: str,
        *,
        actor: str,
        base_etag: str = "",
        validate_only: bool = False,
    ) -> BlockRecord:
        """Apply ``changes`` (field name → new value, names from BLOCK_FIELDS) under the budget.

        ``etag`` means "only if the block is still there"; ``base_etag`` means "these changes were
        made to that version": when the block has moved on since, they are three-way merged into it
        (:func:`merge_onto`) and the merged result is what the budget is checked on and written.
        With ``validate_only`` every check runs and nothing is written: the block is returned as the
        write would leave it, at its current version (MemFS asks so whether a merge is clean).
        """
        if etag and base_etag:
            raise InvalidArgument.field(
                "base_etag", "send etag (only if unchanged) or base_etag (merge onto changes since), not both"
            )
        unknown = sorted(set(changes) - set(BLOCK_FIELDS))
        if unknown or not changes:
            raise InvalidArgument.field(
                "update_mask", f"must name one or more of {', '.join(BLOCK_FIELDS)} (got {unknown or 'none'})"
            )
        changes = changes_with_lf(changes)

        def checked(conn: Connection, current: BlockRecord) -> tuple[Block, str]:
            _check_etag(current, etag)
            wanted, source = merge_onto(conn, current, changes, base_etag, source="api:UpdateBlock")
            return _changed(current.block, wanted), source

        def preview(conn: Connection) -> BlockRecord:
            current = locator.find(conn, tenant_id)
            return dataclasses.replace(current, block=checked(conn, current)[0])

        def work(conn: Connection) -> BlockRecord:
            current = locator.lock(conn, tenant_id)
            new, source = checked(conn, current)
            updated = block_rows.write_block(conn, current, new, source=source, actor=actor)
            self._prompts.after_memory_change(conn, tenant_id, block_rows.holders(conn, updated.block.id))
            return updated

        if validate_only:
            return await self._db.read(preview)
        return await self._db.write(work)

    async def delete(self, tenant_id: str, locator: BlockLocator, etag: str) -> None:
        def work(conn: Connection) -> None:
            current = locator.lock(conn, tenant_id)
            _check_etag(current, etag)
            agents = block_rows.holders(conn, current.block.id)
            block_rows.delete_block(conn, current.block.id)
            self._prompts.after_memory_change(conn, tenant_id, agents)

        await self._db.write(work)

    async def attach(self, tenant_id: str, agent_id: str, block_id: str) -> AgentRecord:
        """Share a block with an agent (idempotent); its label must be free in that agent's memory."""

        def work(conn: Connection) -> AgentRecord:
            agent_rows.get_agent(conn, tenant_id, agent_id)
            record = block_rows.get_block(conn, tenant_id, block_id)
            if block_rows.attach(conn, agent_id, record.block):
                self._prompts.after_memory_change(conn, tenant_id, [agent_id])
            return agent_rows.get_agent(conn, tenant_id, agent_id)

        return await self._db.write(work)

    async def detach(self, tenant_id: str, agent_id: str, block_id: str, etag: str = "") -> AgentRecord:
        """Remove a block from an agent's memory (if still at ``etag``, when given); the block is kept."""

        def work(conn: Connection) -> AgentRecord:
            agent = agent_rows.get_agent(conn, tenant_id, agent_id)
            record = BlockLocator(block_id=block_id).lock(conn, tenant_id)
            _check_etag(record, etag)
            if not block_rows.detach(conn, agent_id, block_id):
                raise BlockNotFound(
                    record.block.label, available=agent.block_labels, scope=f"agent '{agent_id}'"
                )
            self._prompts.after_memory_change(conn, tenant_id, [agent_id])
            return agent_rows.get_agent(conn, tenant_id, agent_id)

        return await self._db.write(work)

    async def versions(self, tenant_id: str, locator: BlockLocator, page: Page) -> list[BlockVersionRecord]:
        def work(conn: Connection) -> list[BlockVersionRecord]:
            return block_rows.versions(conn, locator.find(conn, tenant_id).block.id, page)

        return await self._db.read(work)

    async def diff(self, tenant_id: str, locator: BlockLocator, from_version: int, to_version: int) -> str:
        def work(conn: Connection) -> str:
            current = locator.find(conn, tenant_id)
            old = _version(conn, current, from_version, "from_version")
            new = _version(conn, current, to_version or current.block.version, "to_version")
            return version_diff(old, new)

        return await self._db.read(work)

    async def restore(
        self, tenant_id: str, locator: BlockLocator, number: int, etag: str, *, actor: str
    ) -> BlockRecord:
        """Write a new version whose content is that of version ``number`` (undo and redo alike)."""

        def work(conn: Connection) -> BlockRecord:
            current = locator.lock(conn, tenant_id)
            _check_etag(current, etag)
            old = _version(conn, current, number, "version")
            if old.label != current.block.label:
                validate_label(old.label)
            restored = dataclasses.replace(
                current.block,
                label=old.label,
                value=normalise_newlines(old.value),  # versions stored before the rule held \r
                limit=old.limit,
                description=normalise_newlines(old.description),
                read_only=old.read_only,
                metadata=dict(old.metadata),
            )
            updated = block_rows.write_block(
                conn, current, restored, source=f"api:Restore(v{number})", actor=actor
            )
            self._prompts.after_memory_change(conn, tenant_id, block_rows.holders(conn, updated.block.id))
            return updated

        return await self._db.write(work)


def merge_onto(
    conn: Connection, current: BlockRecord, changes: Mapping[str, object], base_etag: str, *, source: str
) -> tuple[Mapping[str, object], str]:
    """``changes``, made to the version ``base_etag`` names, as changes to ``current`` (merged when
    the block moved on since), and the history source naming both parents (``merged v3 onto v5``).
    Unchanged when ``base_etag`` is empty or current. Raises UnknownBase or MergeConflict."""
    if not base_etag or base_etag == current.etag:
        return changes, source
    found = block_rows.version_for_etag(conn, current, base_etag)
    if found is None:
        raise UnknownBase(f"block '{current.block.label}'", base_etag)
    merged = merged_changes(version_block(found), current.block, changes)
    return merged, f"{source}(merged v{found.version} onto v{current.block.version})"


def version_block(found: BlockVersionRecord) -> Block:
    """A history entry as the block it was."""
    return Block(
        label=found.label,
        value=normalise_newlines(found.value),
        limit=found.limit,
        description=normalise_newlines(found.description),
        read_only=found.read_only,
        metadata=dict(found.metadata),
        id=found.block_id,
        version=found.version,
    )


def version_diff(old: BlockVersionRecord, new: BlockVersionRecord) -> str:
    """Attribute changes as ``# field: old -> new`` lines, then a unified diff of the value."""
    header = [
        f"# {name}: {getattr(old, name)!r} -> {getattr(new, name)!r}\n"
        for name in ("label", "limit", "description", "read_only")
        if getattr(old, name) != getattr(new, name)
    ]
    return "".join(header) + unified_diff(
        old.value, new.value, old_name=f"v{old.version}", new_name=f"v{new.version}"
    )


def _version(conn: Connection, current: BlockRecord, number: int, field: str) -> BlockVersionRecord:
    found = block_rows.version(conn, current.block.id, number)
    if found is None:
        raise InvalidArgument.field(
            field, f"block has no version {number} (versions 1..{current.block.version})"
        )
    return found


def _changed(block: Block, changes: Mapping[str, object]) -> Block:
    new = dataclasses.replace(block, **changes)  # type: ignore[arg-type]
    if "label" in changes:
        validate_label(new.label, field="block.label")
    if "limit" in changes:
        validate_limit(new.limit, field="block.limit")
        if "value" not in changes:
            check_limit_change(block, new.limit)
    check_budget(dataclasses.replace(block, limit=new.limit), new.value)
    return new


def _check_etag(current: BlockRecord, sent: str) -> None:
    if sent and sent != current.etag:
        raise EtagMismatch(f"Block '{current.block.label}'", expected=sent, actual=current.etag)
