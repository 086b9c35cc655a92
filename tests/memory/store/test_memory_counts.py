"""What ``<memory_metadata>`` counts is kept beside the rows it counts, on a real store (SQLite and
PostgreSQL): a tool edit, a prompt read and a recompile send no statement that reads the agent's messages,
passages or their tags, whatever their number (an edit used to count them all: 53-108 ms at 2M messages,
bench/perf/findings.md), and migrations 0009 and 0010 fill the counts of a store written before them.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import insert, select

from strata_memory.domain.model import Block
from strata_memory.operations.prompts import Prompts
from strata_memory.operations.tools import ToolCall, ToolRunner
from strata_memory.store import agents as agent_rows
from strata_memory.store import archives as archive_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import messages as message_rows
from strata_memory.store import schema
from strata_memory.store.database import MIGRATIONS, Database
from strata_memory.store.records import ArchiveRecord, MessageRecord, PassageRecord
from tests.memory.store.sent import recorded
from tests.memory.store.test_statements import _agent

# A statement that reads the rows of messages, passages or their tags.
_READS_ROWS = re.compile(r"\b(FROM|JOIN)\s+(messages|passages|passage_tags)\b", re.IGNORECASE)


def _message(agent_id: str, i: int) -> MessageRecord:
    return MessageRecord(
        id=f"{agent_id}-m{i}",
        tenant_id="t",
        agent_id=agent_id,
        conversation_id="default",
        role="user",
        content=f"hello {i}",
    )


def _passage(archive_id: str, i: int) -> PassageRecord:
    return PassageRecord(
        id=f"{archive_id}-p{i}",
        tenant_id="t",
        archive_id=archive_id,
        text=f"fact {i}",
        tags=("facts", f"n{i % 2}"),
    )


@pytest.fixture
def db(db: Database) -> Database:
    with db.writing() as conn:
        agent_rows.insert_agent(conn, _agent("agent-1"))
        block = Block(label="human", value="Name: Bob", limit=1000, id="block-human")
        block_rows.attach(
            conn, "agent-1", block_rows.insert_block(conn, "t", block, source="test", actor="test").block
        )
        message_rows.append(conn, [_message("agent-1", i) for i in range(5)])
        archive_rows.insert_archive(conn, ArchiveRecord("archive-1", "t", "notes", "", 0))
        archive_rows.attach(conn, "archive-1", "agent-1")
        archive_rows.insert_passages(conn, [_passage("archive-1", i) for i in range(3)])
    return db


async def test_an_edit_a_prompt_read_and_a_recompile_read_no_message_passage_or_tag(db: Database) -> None:
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    prompts = Prompts(db, clock)
    runner = ToolRunner(db, prompts, clock)
    edit = ToolCall(
        "t", "agent-1", "default", "core_memory_append", json.dumps({"label": "human", "content": "x"})
    )
    with recorded((db._reader, db._writer), lambda statement: statement) as sent:
        assert (await runner.execute(edit)).ok
        view = await prompts.get("t", "agent-1", "default")
        recompiled = await prompts.recompile("t", "agent-1", "default", dry_run=True)
    assert [statement for statement in sent if _READS_ROWS.search(statement)] == []
    for text in (view.prompt.text, recompiled.prompt.text):
        assert "- 5 previous messages between you and the user" in text
        assert "- 3 total memories you created are stored in archival memory" in text
        assert "- Available archival memory tags: facts, n0, n1" in text


def _migrate_to(db: Database, revision: str, *, down: bool = False) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with db._writer.connect() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)
        connection.commit()
    db.quotas_enforced = revision == "head"  # the quota tables came with 0013


def test_the_migration_counts_what_a_store_held_before_it(db: Database) -> None:
    _migrate_to(db, "0008", down=True)  # a store written before the counts: rows added without them
    with db.writing() as conn:
        conn.execute(
            insert(schema.agents).values(
                id="agent-2",
                tenant_id="t",
                name="",
                system="",
                render_mode="standard",
                recompile_policy="on_edit",
                timezone="UTC",
                tool_result_style="full_value",
                version=1,
                next_sequence=1,
                created_us=0,
                updated_us=0,
            )
        )
        conn.execute(
            insert(schema.archives).values(
                id="archive-2", tenant_id="t", name="", description="", created_us=0
            )
        )
        for table, rows in ((schema.messages, 7), (schema.passages, 4)):
            owner = {"agent_id": "agent-2"} if table is schema.messages else {"archive_id": "archive-2"}
            conn.execute(insert(table), [_raw_row(table.name, i) | owner for i in range(rows)])
        tagged = [
            {"passage_id": f"raw-p{i}", "tag": tag, "archive_id": "archive-2"}
            for i in range(3)
            for tag in ("a", f"b{i}")
        ]
        conn.execute(insert(schema.passage_tags), tagged)
    _migrate_to(db, "head")
    with db.reading() as conn:
        agents = dict(conn.execute(select(schema.agents.c.id, schema.agents.c.message_count)).all())
        archives = dict(conn.execute(select(schema.archives.c.id, schema.archives.c.passage_count)).all())
        tags = sorted(tuple(row) for row in conn.execute(select(schema.archive_tags)))
    assert agents == {"agent-1": 5, "agent-2": 7}
    assert archives == {"archive-1": 3, "archive-2": 4}
    assert tags == [
        ("archive-1", "facts", 3),
        ("archive-1", "n0", 2),
        ("archive-1", "n1", 1),
        ("archive-2", "a", 3),
        ("archive-2", "b0", 1),
        ("archive-2", "b1", 1),
        ("archive-2", "b2", 1),
    ]


def _raw_row(table: str, i: int) -> dict[str, object]:
    if table == "messages":
        return {
            "id": f"raw-m{i}",
            "tenant_id": "t",
            "conversation_id": "default",
            "role": "user",
            "content": "hi",
            "name": "",
            "tool_calls": [],
            "tool_call_id": "",
            "sequence": 100 + i,
            "created_us": 0,
        }
    return {"id": f"raw-p{i}", "tenant_id": "t", "text": "fact", "tags": [], "metadata": {}, "created_us": 0}
