"""Memory as it was: an agent's blocks and rendered core memory at a past moment, or as a prompt
receipt names them, and the diff of the whole memory between two moments.

A moment is a time (microseconds) or a receipt id. At a time, the blocks are those attached then, in
attach order, each at its newest version by then (``store.memory_history``). For a receipt, they are
the blocks and versions the receipt lists, rendered in the receipt's mode unless another is asked for.
Rules that bound what a past read can show: attached files are not versioned and are left out; a
block deleted since is gone from every past read (its history is deleted with it); the render mode
used for a time is the agent's current one unless the caller names one.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Connection

from strata_memory.domain.model import RenderMode
from strata_memory.operations.blocks import version_block
from strata_memory.operations.prompts import receipt_of, unified_diff
from strata_memory.operations.render_cache import RenderCache
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store.database import Database
from strata_memory.store.records import BlockRecord, BlockVersionRecord, to_datetime
from strata_serving.errors import InvalidArgument


@dataclass(frozen=True, slots=True)
class Moment:
    """A past moment: ``at_us`` (a time), or ``receipt_id`` (what a compiled prompt used)."""

    at_us: int = 0
    receipt_id: str = ""

    def describe(self) -> str:
        return self.receipt_id or to_datetime(self.at_us).isoformat()


class MemoryTime:
    def __init__(self, db: Database, renders: RenderCache) -> None:
        self._db = db
        self._renders = renders

    async def blocks(self, tenant_id: str, agent_id: str, moment: Moment) -> list[BlockRecord]:
        """The agent's blocks at ``moment``, in render order, each as it was then."""
        return await self._db.read(lambda conn: self._blocks(conn, tenant_id, agent_id, moment)[0])

    async def render(
        self, tenant_id: str, agent_id: str, moment: Moment, mode: RenderMode | None
    ) -> tuple[str, RenderMode]:
        """Core memory (blocks) rendered as it was at ``moment``."""

        def work(conn: Connection) -> tuple[str, RenderMode]:
            blocks, used = self._blocks(conn, tenant_id, agent_id, moment)
            used = mode or used
            return self._renders.render_blocks(blocks, used), used

        return await self._db.read(work)

    async def diff(
        self, tenant_id: str, agent_id: str, old: Moment, new: Moment, mode: RenderMode | None
    ) -> str:
        """A unified diff of the whole rendered memory from ``old`` to ``new`` (in one mode)."""

        def work(conn: Connection) -> str:
            before, used = self._blocks(conn, tenant_id, agent_id, old)
            after, _ = self._blocks(conn, tenant_id, agent_id, new)
            used = mode or used
            return unified_diff(
                self._renders.render_blocks(before, used),
                self._renders.render_blocks(after, used),
                old_name=old.describe(),
                new_name=new.describe(),
            )

        return await self._db.read(work)

    def _blocks(
        self, conn: Connection, tenant_id: str, agent_id: str, moment: Moment
    ) -> tuple[list[BlockRecord], RenderMode]:
        agent = agent_rows.get_agent(conn, tenant_id, agent_id)
        if moment.receipt_id:
            receipt = receipt_of(conn, tenant_id, moment.receipt_id, agent_id=agent_id)
            found = [block_rows.version(conn, b.block_id, b.version) for b in receipt.blocks]
            versions = [v for v in found if v is not None]  # a block deleted since has no history
            return [_record(v, tenant_id) for v in versions], RenderMode(receipt.render_mode)
        if moment.at_us <= 0:
            raise InvalidArgument.field("as_of", "must be a time after 1970-01-01T00:00:00Z")
        versions = block_rows.blocks_as_of(conn, agent_id, moment.at_us)
        return [_record(v, tenant_id) for v in versions], agent.render_mode


def _record(version: BlockVersionRecord, tenant_id: str) -> BlockRecord:
    return BlockRecord(version_block(version), tenant_id, version.changed_us, version.changed_us)
