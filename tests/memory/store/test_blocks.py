"""Block rows read back as they were written (store/blocks.py), on a real store (SQLite and PostgreSQL):
a block's creation time through every read, each version's fields in its history, and the stamps the
reply cache compares with those of the blocks as read.
"""

from __future__ import annotations

import dataclasses
import sqlite3

import pytest

from strata_memory.domain.model import Block, RenderMode
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store.database import Database
from strata_memory.store.glance import sqlite_path
from strata_memory.store.records import BlockRecord, Page, now_us
from tests.memory.store.test_statements import _agent

TEA = Block(
    label="human",
    value="likes tea",
    limit=500,
    description="who the user is",
    metadata={"topic": "tea", "origin": "import"},
    id="block-human",
)


@pytest.fixture
def db(db: Database) -> Database:
    with db.writing() as conn:
        agent_rows.insert_agent(conn, _agent("agent-1"))
    return db


def _written(db: Database) -> tuple[BlockRecord, BlockRecord]:
    """TEA stored and attached to agent-1, then rewritten once: (as inserted, as rewritten)."""
    with db.writing() as conn:
        inserted = block_rows.insert_block(conn, "t", TEA, source="api", actor="key-1")
        block_rows.attach(conn, "agent-1", inserted.block)
    coffee = dataclasses.replace(
        inserted.block, value="likes coffee", read_only=True, metadata={"topic": "coffee"}
    )
    with db.writing() as conn:
        rewritten = block_rows.write_block(conn, inserted, coffee, source="tool", actor="agent-1")
    return inserted, rewritten


def test_a_block_read_back_any_way_keeps_its_creation_time(db: Database) -> None:
    inserted, rewritten = _written(db)
    with db.reading() as conn:
        read = [
            block_rows.get_block(conn, "t", TEA.id),
            block_rows.block_by_label(conn, "t", "agent-1", "human"),
            *block_rows.agent_blocks(conn, "agent-1"),
            *block_rows.agent_memory(conn, "t", "agent-1").blocks,
            *block_rows.tenant_blocks(conn, "t", Page()),
        ]
    assert rewritten.created_us == inserted.created_us
    assert [(r.created_us, r.updated_us) for r in read if r is not None] == [
        (inserted.created_us, rewritten.updated_us)
    ] * 5
    assert {r.block.value for r in read if r is not None} == {"likes coffee"}


def test_each_version_in_the_history_keeps_the_fields_it_was_written_with(db: Database) -> None:
    inserted, rewritten = _written(db)
    with db.reading() as conn:
        history = block_rows.versions(conn, TEA.id, Page())
        first = block_rows.version(conn, TEA.id, 1)
        then = block_rows.blocks_as_of(conn, "agent-1", now_us())
    seen = [
        (v.version, v.value, v.read_only, dict(v.metadata), v.source, v.actor, v.changed_us) for v in history
    ]
    assert seen == [
        (2, "likes coffee", True, {"topic": "coffee"}, "tool", "agent-1", rewritten.updated_us),
        (1, "likes tea", False, {"topic": "tea", "origin": "import"}, "api", "key-1", inserted.created_us),
    ]
    assert first == history[1]
    assert (first.label, first.limit, first.description) == ("human", 500, "who the user is")
    assert [(v.version, dict(v.metadata)) for v in then] == [(2, {"topic": "coffee"})]


def test_an_agents_memory_stamps_are_its_blocks_ids_versions_and_write_times_in_attach_order(
    db: Database, store_url: str
) -> None:
    path = sqlite_path(store_url)
    if path is None:
        pytest.skip("stamps are read on a glance connection, which only SQLite has (store/glance.py)")
    _, human = _written(db)
    with db.writing() as conn:
        persona = block_rows.insert_block(
            conn, "t", Block(label="persona", value="Sam", id="block-persona"), source="api", actor="key-1"
        )
        block_rows.attach(conn, "agent-1", persona.block)
    raw = sqlite3.connect(path)
    try:
        stamps = block_rows.memory_stamps(raw, "t", "agent-1")
        alone = block_rows.block_stamp(raw, "t", block_id="block-persona")
        missing = (block_rows.memory_stamps(raw, "other", "agent-1"), block_rows.memory_stamps(raw, "t", "x"))
    finally:
        raw.close()
    expected = (block_rows.stamp_of(human), block_rows.stamp_of(persona))
    assert expected == (("block-human", 2, human.updated_us), ("block-persona", 1, persona.updated_us))
    assert stamps == (RenderMode.STANDARD.value, 0, expected)
    assert alone == expected[1]
    assert missing == (None, None)
