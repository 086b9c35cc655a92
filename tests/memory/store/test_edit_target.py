"""What a tool edit reads before it edits (store/edit_target.py), on a real store (SQLite and PostgreSQL):
the agent, its blocks in attach order, how many agents hold each, and its metadata counts only when it
recompiles on edit; then what an edit of a shared block sends beside an edit of an agent's own block.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from strata_memory.domain.errors import AgentNotFound
from strata_memory.domain.model import Block, RecompilePolicy
from strata_memory.operations.prompts import Prompts
from strata_memory.operations.tools import ToolCall, ToolRunner
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import messages as message_rows
from strata_memory.store.database import Database
from strata_memory.store.edit_target import edit_target
from strata_memory.store.records import MessageRecord
from tests.memory.store.sent import first_keyword, recorded
from tests.memory.store.test_statements import _agent


@pytest.fixture
def db(store_url: str) -> Iterator[Database]:
    database = Database(store_url)
    database.migrate()
    with database.writing() as conn:
        agent_rows.insert_agent(conn, _agent("agent-1"))
        agent_rows.insert_agent(conn, _agent("agent-2"))
        agent_rows.insert_agent(conn, _agent("agent-x", RecompilePolicy.EXPLICIT))
        for label, holders in (("persona", ["agent-1"]), ("human", ["agent-1", "agent-2"])):
            block = Block(label=label, value=f"{label} notes", limit=1000, id=f"block-{label}")
            stored = block_rows.insert_block(conn, "t", block, source="test", actor="test")
            for holder in holders:
                block_rows.attach(conn, holder, stored.block)
        message = MessageRecord(
            id="m1", tenant_id="t", agent_id="agent-1", conversation_id="default", role="user", content="hi"
        )
        message_rows.append(conn, [message])
    yield database
    database.close()


def test_the_agent_its_blocks_holders_and_counts_are_read_together(db: Database) -> None:
    with db.writing() as conn:
        target = edit_target(conn, "t", "agent-1")
        unshared = edit_target(conn, "t", "agent-2")
        explicit = edit_target(conn, "t", "agent-x")
    assert target.agent.id == "agent-1"
    assert target.agent.block_labels == ("persona", "human")
    assert [b.block.value for b in target.blocks] == ["persona notes", "human notes"]
    assert dict(target.holders) == {"block-persona": 1, "block-human": 2}
    assert not target.shared("block-persona")
    assert target.shared("block-human")
    assert not target.shared("block-new")  # created by the call: only this agent holds it
    assert target.counts == (1, 0, 0)  # messages, passages, files
    assert unshared.agent.block_labels == ("human",)
    assert explicit.blocks == []
    assert explicit.agent.block_labels == ()
    assert explicit.counts is None  # an explicit agent's edit recompiles nothing: nothing counted


def test_another_tenant_or_a_missing_agent_is_not_found(db: Database) -> None:
    for tenant, agent_id in (("other", "agent-1"), ("t", "agent-404")):
        with db.writing() as conn, pytest.raises(AgentNotFound):
            edit_target(conn, tenant, agent_id)


def test_the_holders_of_a_block_are_found_by_index(db: Database) -> None:
    if not db.is_sqlite:
        pytest.skip("the plan is SQLite's; PostgreSQL's planner scans a table this small")
    with db.reading() as conn:
        plan = conn.exec_driver_sql(
            "EXPLAIN QUERY PLAN SELECT agent_id FROM agent_blocks WHERE block_id = 'block-human'"
        ).all()
    assert "ix_agent_blocks_block_id" in " ".join(str(row[-1]) for row in plan), plan


async def test_an_edit_of_a_shared_block_also_finds_and_recompiles_its_other_holders(db: Database) -> None:
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    runner = ToolRunner(db, Prompts(db, clock), clock)

    def append(label: str) -> ToolCall:
        return ToolCall(
            "t", "agent-1", "default", "core_memory_append", json.dumps({"label": label, "content": "x"})
        )

    for label in ("persona", "human"):  # first recompiles write each agent's snapshot row
        assert (await runner.execute(append(label))).ok
    sent = {}
    for label in ("persona", "human"):
        with recorded((db._reader, db._writer), first_keyword) as sent[label]:
            assert (await runner.execute(append(label))).ok
    first = "BEGIN" if db.is_sqlite else "SELECT"
    # + the receipt; the last UPDATE is the quota check (store/quotas.py)
    assert sent["persona"] == [first, "SELECT", "UPDATE", "INSERT", "INSERT", "UPDATE", "UPDATE"]
    # Then the block's holders, and the other holder read locked, its counts and blocks read and its
    # snapshot rewritten.
    assert sent["human"] == [
        *sent["persona"][:4],
        "SELECT",
        "INSERT",
        "UPDATE",
        *("SELECT", "SELECT", "SELECT", "INSERT", "UPDATE"),
        "UPDATE",
    ]
