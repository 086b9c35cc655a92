"""Recall memory: append messages (each numbered per agent) and list them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sqlalchemy.engine import Connection

from strata_memory.limits import MAX_MESSAGES_PER_APPEND
from strata_memory.operations.agents import new_id
from strata_memory.operations.archival import IndexQueue, Written
from strata_memory.operations.idempotency import Once, in_order
from strata_memory.operations.prompts import receipt_of
from strata_memory.store import agents as agent_rows
from strata_memory.store import index_jobs
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.records import MessageRecord, Page, now_us
from strata_serving.errors import InvalidArgument

ROLES = ("system", "user", "assistant", "tool")


def checked_messages(messages: Sequence[MessageRecord]) -> None:
    """Refuse a batch with no messages, too many, an unknown role or a message with nothing in it."""
    if not messages:
        raise InvalidArgument.field("messages", "must contain at least one message")
    if len(messages) > MAX_MESSAGES_PER_APPEND:
        raise InvalidArgument.field(
            "messages", f"at most {MAX_MESSAGES_PER_APPEND} per call (got {len(messages)})"
        )
    for i, message in enumerate(messages):
        if message.role not in ROLES:
            raise InvalidArgument.field(f"messages[{i}].role", f"must be one of {', '.join(ROLES)}")
        if not message.content.strip() and not message.tool_calls:
            raise InvalidArgument.field(f"messages[{i}].content", "must not be empty (or carry tool_calls)")


class Messages:
    def __init__(self, db: Database, queue: IndexQueue) -> None:
        self._db = db
        self._queue = queue

    async def append(
        self,
        tenant_id: str,
        agent_id: str,
        conversation_id: str,
        messages: Sequence[MessageRecord],
        *,
        request_id: str = "",
        prompt_receipt_id: str = "",
    ) -> Written[list[MessageRecord]]:
        """Store messages and, in the same transaction, the jobs that index them for recall search.

        With a ``request_id``, a repeat of the call returns what the first stored (``idempotency``).
        With a ``prompt_receipt_id`` (a receipt of this agent's prompts), every message records it."""
        checked_messages(messages)
        if prompt_receipt_id:
            messages = [dataclasses.replace(m, prompt_receipt_id=prompt_receipt_id) for m in messages]
        once = Once.of(tenant_id, "AppendMessages", request_id, agent_id, conversation_id, list(messages))
        stamp = now_us()
        prepared = [
            dataclasses.replace(
                m,
                id=new_id("message"),
                tenant_id=tenant_id,
                agent_id=agent_id,
                conversation_id=conversation_id,
                created_us=m.created_us or stamp,
            )
            for m in messages
        ]

        def work(conn: Connection) -> Written[list[MessageRecord]]:
            if once is not None and (earlier := once.claim(conn, [m.id for m in prepared])) is not None:
                found = in_order(earlier, message_rows.get_messages(conn, tenant_id, earlier))
                return Written(found, index_jobs.pending_for(conn, tenant_id, earlier))
            first = agent_rows.reserve_sequences_of(conn, tenant_id, agent_id, len(prepared))
            agent_rows.get_conversation(conn, agent_id, conversation_id)
            if prompt_receipt_id:
                receipt_of(conn, tenant_id, prompt_receipt_id, agent_id=agent_id)
            stored = message_rows.append(conn, prepared, first=first)
            return Written(
                stored, index_jobs.enqueue(conn, tenant_id, index_jobs.UPSERT, [m.id for m in stored])
            )

        written = await self._db.write_together(work)  # concurrent appends share a commit (SQLite)
        self._queue.notify()
        return written

    async def listing(
        self, tenant_id: str, agent_id: str, *, conversation_id: str, roles: Sequence[str], page: Page
    ) -> tuple[list[MessageRecord], int]:
        def work(conn: Connection) -> tuple[list[MessageRecord], int]:
            agent_rows.get_agent(conn, tenant_id, agent_id)
            if conversation_id:
                agent_rows.get_conversation(conn, agent_id, conversation_id)
            return message_rows.list_messages(
                conn, agent_id, conversation_id=conversation_id, roles=roles, page=page
            )

        return await self._db.read(work)
