"""AppendMessages' transaction on a real store (SQLite and PostgreSQL): five statements (reserve the
sequence numbers and check the tenant's agent in one UPDATE, check the conversation, insert the
messages, insert their index jobs, check the quotas; PostgreSQL adds the replicas' wake-up), numbering
and refusals unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import pytest

from strata_memory.domain.errors import AgentNotFound, ConversationNotFound
from strata_memory.domain.model import RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.operations.messages import Messages
from strata_memory.store import agents as agent_rows
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import DEFAULT_CONVERSATION, AgentRecord, MessageRecord
from tests.memory.store.sent import first_keyword, recorded


class Queue:
    def notify(self) -> None:
        pass

    async def wait_delivered(self, job_ids: Sequence[int], within: float | None) -> bool:
        return True


@pytest.fixture
def db(db: Database) -> Database:
    with db.writing() as conn:
        for tenant, agent_id in (("t", "agent-a"), ("other", "agent-b")):
            agent_rows.insert_agent(
                conn,
                AgentRecord(
                    agent_id,
                    tenant,
                    agent_id,
                    "",
                    RenderMode.STANDARD,
                    RecompilePolicy.ON_EDIT,
                    "UTC",
                    ToolResultStyle.FULL_VALUE,
                    1,
                    0,
                    0,
                ),
            )
    return db


def statements_sent(db: Database) -> contextlib.AbstractContextManager[list[str]]:
    """The first keyword of each statement the writer sends, but BEGIN and PostgreSQL's wake-up."""

    def keep(statement: str) -> str | None:
        if statement.startswith("BEGIN") or "pg_notify" in statement:
            return None
        return first_keyword(statement)

    return recorded((db._writer,), keep)


def said(*texts: str) -> list[MessageRecord]:
    return [MessageRecord("", "", "", "", "user", text) for text in texts]


async def test_an_append_is_five_statements_and_numbers_after_the_last_message(db: Database) -> None:
    messages = Messages(db, Queue())
    first = await messages.append("t", "agent-a", DEFAULT_CONVERSATION, said("one", "two"))
    with statements_sent(db) as sent:
        second = await messages.append("t", "agent-a", DEFAULT_CONVERSATION, said("three"))
    assert sent == [
        "UPDATE",
        "SELECT",
        "INSERT",
        "INSERT",
        "UPDATE",
    ]  # before: 6 (the agent with labels, its next number); last, the quota check (store/quotas.py)
    assert [m.sequence for m in [*first.items, *second.items]] == [1, 2, 3]
    assert len(second.job_ids) == 1
    assert await db.read(lambda conn: index_jobs.pending(conn, second.job_ids)) == 1


async def test_an_append_to_an_unknown_agent_or_conversation_changes_nothing(db: Database) -> None:
    messages = Messages(db, Queue())
    with pytest.raises(AgentNotFound):
        await messages.append("t", "agent-b", DEFAULT_CONVERSATION, said("another tenant's agent"))
    with pytest.raises(AgentNotFound):
        await messages.append("t", "agent-missing", DEFAULT_CONVERSATION, said("nobody"))
    with pytest.raises(ConversationNotFound):
        await messages.append("t", "agent-a", "no-such-conversation", said("nowhere"))
    stored = await messages.append("t", "agent-a", DEFAULT_CONVERSATION, said("first kept"))
    assert [m.sequence for m in stored.items] == [1]  # the refused appends reserved nothing
    assert await db.read(index_jobs.pending) == 1
