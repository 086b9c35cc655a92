"""``preceding_turns_of``: the context turns of a batch of messages in one statement, equal for every
message to ``preceding_turns`` (its own query), whatever lies between the turns: tool and system
messages, other conversations of the agent, a long gap, the first messages of a conversation. And
``stored_ids`` (what the outbox checks after an upsert) reads ids only.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

from strata_memory.domain.model import RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.indexing.delivery import documents_as_stored, stored_ids
from strata_memory.store import agents as agent_rows
from strata_memory.store import archives as archive_rows
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.records import (
    DEFAULT_CONVERSATION,
    AgentRecord,
    ArchiveRecord,
    MessageRecord,
    PassageRecord,
)
from tests.memory.store.sent import recorded


def selects_sent(db: Database) -> contextlib.AbstractContextManager[list[str]]:
    """Every SELECT the reader sends inside the block."""
    return recorded(
        (db._reader,),
        lambda statement: statement if statement.lstrip().upper().startswith("SELECT") else None,
    )


def agent(conn: Any, agent_id: str) -> None:
    record = AgentRecord(
        agent_id,
        "t",
        agent_id,
        "",
        RenderMode.STANDARD,
        RecompilePolicy.ON_EDIT,
        "UTC",
        ToolResultStyle.FULL_VALUE,
        1,
        0,
        0,
    )
    agent_rows.insert_agent(conn, record)


def append(conn: Any, agent_id: str, conversation: str, roles: list[str]) -> list[MessageRecord]:
    if conversation != DEFAULT_CONVERSATION and not agent_rows.has_conversation(conn, agent_id, conversation):
        agent_rows.insert_conversation(conn, agent_id, conversation)
    first = len(
        message_rows.list_messages(conn, agent_id, conversation_id="", roles=(), page=_everything())[0]
    )
    return message_rows.append(
        conn,
        [
            MessageRecord(
                f"message-{agent_id}-{first + i}", "t", agent_id, conversation, role, f"{role} {first + i}"
            )
            for i, role in enumerate(roles)
        ],
    )


def _everything() -> Any:
    from strata_memory.store.records import Page

    return Page(offset=0, size=100_000)


def test_each_message_gets_what_its_own_query_returns(db: Database) -> None:
    chooser = random.Random(18)
    written: list[MessageRecord] = []
    with db.writing() as conn:
        for name in ("a", "b"):
            agent(conn, name)
        for _ in range(60):  # interleaved conversations of one agent, tool/system messages, long tool runs
            name = chooser.choice(("a", "b"))
            conversation = chooser.choice((DEFAULT_CONVERSATION, "other"))
            run = chooser.choice(
                (["user"], ["assistant"], ["tool"] * chooser.randint(1, 6), ["system", "user"])
            )
            written += append(conn, name, conversation, run)
    with db.reading() as conn:
        for count in (1, 2, 3):
            for batch in (written, written[::7], written[-5:], chooser.sample(written, 20)):
                batched = message_rows.preceding_turns_of(conn, batch, count)
                alone = {m.id: message_rows.preceding_turns(conn, m, count) for m in batch}
                assert batched == alone


def test_a_batch_of_a_streams_messages_reads_its_context_in_one_statement(db: Database) -> None:
    with db.writing() as conn:
        for name in ("a", "b", "c"):
            agent(conn, name)
        written = [
            m
            for _ in range(10)
            for name in ("a", "b", "c")
            for m in append(conn, name, DEFAULT_CONVERSATION, ["user", "assistant"])
        ]
    batch = [m.id for m in written[-30:]]
    with db.reading() as conn, selects_sent(db) as sent:
        built = documents_as_stored(conn, "t", batch, context_turns=1)
    assert sorted(d.id for d in built.documents) == sorted(batch)
    assert len(sent) == 2  # the messages, their context (before: one statement per message)


def test_stored_ids_names_the_messages_and_passages_the_store_still_holds(db: Database) -> None:
    with db.writing() as conn:
        agent(conn, "a")
        [kept] = append(conn, "a", DEFAULT_CONVERSATION, ["user"])
        archive_rows.insert_archive(conn, ArchiveRecord("archive-t", "t", "facts", "", 0))
        archive_rows.insert_passages(
            conn, [PassageRecord("passage-kept", "t", "archive-t", "kept", created_us=1)]
        )
    asked = [kept.id, "message-unknown", "passage-kept", "passage-unknown", kept.id]
    with db.reading() as conn:
        assert stored_ids(conn, "t", asked) == {kept.id, "passage-kept"}
        assert stored_ids(conn, "other-tenant", asked) == set()
