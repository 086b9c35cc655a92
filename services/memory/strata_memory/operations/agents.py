"""Agents: create (with default blocks and a compiled prompt), read, update, delete; conversations."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence

from sqlalchemy.engine import Connection

from strata_memory.domain.budgets import validate_label, validate_limit
from strata_memory.domain.errors import EtagMismatch
from strata_memory.domain.model import DEFAULT_AGENT_BLOCK_LIMIT, Block, RecompilePolicy
from strata_memory.domain.newlines import block_with_lf, normalise_newlines
from strata_memory.domain.prompt import zone
from strata_memory.operations.prompts import Prompts
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import index_jobs
from strata_memory.store import prompts as prompt_rows
from strata_memory.store.database import Database
from strata_memory.store.records import AgentRecord, ConversationRecord, Page
from strata_serving.errors import AlreadyExists, InvalidArgument

DEFAULT_BLOCKS = (
    Block(
        label="persona",
        limit=DEFAULT_AGENT_BLOCK_LIMIT,
        description="The persona block: stores details about your current persona, guiding how you behave "
        "and respond. This helps you to maintain consistency and personality in your interactions.",
    ),
    Block(
        label="human",
        limit=DEFAULT_AGENT_BLOCK_LIMIT,
        description="The human block: stores key details about the person you are conversing with, "
        "allowing for more personalized and friend-like conversation.",
    ),
)
AGENT_FIELDS = ("name", "system", "render_mode", "recompile_policy", "timezone", "tool_result_style")


def new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


def checked_block(block: Block) -> Block:
    """A block ready to store: LF line endings, valid label and limit, value within budget, a fresh id."""
    block = block_with_lf(block)
    validate_label(block.label)
    validate_limit(block.limit)
    if len(block.value) > block.limit:
        raise InvalidArgument.field(
            "block.value", f"is {len(block.value)} characters, longer than its limit of {block.limit}"
        )
    return dataclasses.replace(block, id=new_id("block"), version=0)


class Agents:
    def __init__(self, db: Database, prompts: Prompts) -> None:
        self._db = db
        self._prompts = prompts

    async def create(self, agent: AgentRecord, blocks: Sequence[Block]) -> AgentRecord:
        """Store the agent, its blocks (or the default persona/human) and its first prompt."""
        zone(agent.timezone)
        wanted = [checked_block(b) for b in (blocks or DEFAULT_BLOCKS)]
        labels = [b.label for b in wanted]
        if len(set(labels)) != len(labels):
            raise InvalidArgument.field("blocks", "labels must be unique within an agent")
        stored = dataclasses.replace(agent, id=new_id("agent"), system=normalise_newlines(agent.system))

        def work(conn: Connection) -> AgentRecord:
            agent_rows.insert_agent(conn, stored)
            for block in wanted:
                record = block_rows.insert_block(
                    conn, agent.tenant_id, block, source="api:CreateAgent", actor=stored.id
                )
                block_rows.attach(conn, stored.id, record.block)
            created = agent_rows.get_agent(conn, agent.tenant_id, stored.id)
            self._prompts.recompile_all(conn, created)
            return created

        return await self._db.write(work)

    async def get(self, tenant_id: str, agent_id: str) -> AgentRecord:
        return await self._db.read(lambda conn: agent_rows.get_agent(conn, tenant_id, agent_id))

    async def listing(self, tenant_id: str, page: Page) -> list[AgentRecord]:
        return await self._db.read(lambda conn: agent_rows.list_agents(conn, tenant_id, page))

    async def update(
        self, tenant_id: str, changes: AgentRecord, paths: Sequence[str], etag: str
    ) -> AgentRecord:
        """Apply the named fields of ``changes``; settings that shape the prompt follow the policy."""
        if "timezone" in paths:
            zone(changes.timezone)
        changes = dataclasses.replace(changes, system=normalise_newlines(changes.system))

        def work(conn: Connection) -> AgentRecord:
            current = agent_rows.get_agent(conn, tenant_id, changes.id, for_update=True)
            _check_etag(f"Agent '{current.id}'", etag, current.etag)
            merged = dataclasses.replace(current, **{p: getattr(changes, p) for p in paths})
            updated = agent_rows.write_agent(conn, current, merged)
            self._prompts.after_memory_change(conn, tenant_id, [updated.id])
            return updated

        return await self._db.write(work)

    async def delete(self, tenant_id: str, agent_id: str, etag: str) -> None:
        def work(conn: Connection) -> None:
            current = agent_rows.get_agent(conn, tenant_id, agent_id, for_update=True)
            _check_etag(f"Agent '{agent_id}'", etag, current.etag)
            agent_rows.delete_agent(conn, current)
            index_jobs.enqueue(conn, tenant_id, index_jobs.DELETE_AGENT, [agent_id])

        await self._db.write(work)

    async def create_conversation(
        self, tenant_id: str, agent_id: str, conversation_id: str
    ) -> ConversationRecord:
        """Open a conversation with a compiled prompt. An ``on_edit`` agent's conversations share one
        compiled snapshot (rewritten by every memory change), and a new one joins it: one row, no copy of
        the agent's memory, so conversations cost the same whatever the memory's size, and the next edit
        has no conversation to repoint. An ``explicit`` agent's new conversation is compiled afresh."""
        wanted = conversation_id or new_id("conv")
        validate_label(wanted, field="conversation_id")

        def work(conn: Connection) -> ConversationRecord:
            agent = agent_rows.get_agent(conn, tenant_id, agent_id)
            if agent_rows.has_conversation(conn, agent_id, wanted):
                raise AlreadyExists(
                    f"Conversation '{wanted}' already exists for agent '{agent_id}'.",
                    reason="CONVERSATION_EXISTS",
                    metadata={"conversation_id": wanted},
                )
            created = agent_rows.insert_conversation(conn, agent_id, wanted)
            if agent.recompile_policy is RecompilePolicy.ON_EDIT and prompt_rows.share_snapshot(
                conn, agent_id, wanted
            ):
                return created
            prompt_rows.save_prompt(conn, self._prompts.compile(conn, agent, wanted))
            return created

        return await self._db.write(work)

    async def list_conversations(self, tenant_id: str, agent_id: str, page: Page) -> list[ConversationRecord]:
        def work(conn: Connection) -> list[ConversationRecord]:
            agent_rows.get_agent(conn, tenant_id, agent_id)
            return agent_rows.list_conversations(conn, agent_id, page)

        return await self._db.read(work)


def _check_etag(resource: str, sent: str, current: str) -> None:
    if sent and sent != current:
        raise EtagMismatch(resource, expected=sent, actual=current)
