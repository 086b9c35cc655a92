"""How many SQL statements the hot paths run, counted on a real store (SQLite and PostgreSQL).

Each statement costs more in SQLAlchemy's bookkeeping than in SQLite (bench/perf/findings.md), so
reads and tool edits are kept to a fixed, small number; these tests fail if a path starts re-reading.
"""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, select

from strata_memory.domain.errors import AgentNotFound, BlockNotFound
from strata_memory.domain.model import Block, RecompilePolicy, RenderMode, ToolResultStyle
from strata_memory.operations.blocks import BlockLocator
from strata_memory.operations.prompts import Prompts
from strata_memory.operations.tools import ToolCall, ToolRunner
from strata_memory.store import agents as agent_rows
from strata_memory.store import blocks as block_rows
from strata_memory.store import schema
from strata_memory.store.database import Database
from strata_memory.store.prompts import PromptSnapshot
from strata_memory.store.records import AgentRecord, Page
from tests.memory.store.sent import first_keyword, recorded


def statements_sent(db: Database) -> contextlib.AbstractContextManager[list[str]]:
    """The first keyword of every statement the store's engines send to the database inside the block."""
    return recorded((db._reader, db._writer), first_keyword)


def _agent(agent_id: str, policy: RecompilePolicy = RecompilePolicy.ON_EDIT) -> AgentRecord:
    return AgentRecord(
        id=agent_id,
        tenant_id="t",
        name=agent_id,
        system="You are Sam.",
        render_mode=RenderMode.STANDARD,
        recompile_policy=policy,
        timezone="UTC",
        tool_result_style=ToolResultStyle.FULL_VALUE,
        version=1,
        created_us=0,
        updated_us=0,
    )


@pytest.fixture
def db(db: Database) -> Database:
    with db.writing() as conn:
        agent_rows.insert_agent(conn, _agent("agent-1"))
        agent_rows.insert_agent(conn, _agent("agent-empty"))
        for label in ("persona", "human"):
            block = Block(label=label, value=f"{label} notes", limit=1000, id=f"block-{label}")
            stored = block_rows.insert_block(conn, "t", block, source="test", actor="test")
            block_rows.attach(conn, "agent-1", stored.block)
    return db


def test_a_block_is_read_by_its_label_in_one_statement(db: Database) -> None:
    with db.reading() as conn, statements_sent(db) as sent:
        record = BlockLocator(agent_id="agent-1", label="human").find(conn, "t")
    assert record.block.value == "human notes"
    assert sent == ["SELECT"]


def test_a_missing_label_still_names_the_labels_the_agent_has(db: Database) -> None:
    with db.reading() as conn, pytest.raises(BlockNotFound) as missing:
        BlockLocator(agent_id="agent-1", label="nope").find(conn, "t")
    assert "persona" in missing.value.message
    assert "human" in missing.value.message
    with db.reading() as conn, pytest.raises(AgentNotFound):
        BlockLocator(agent_id="agent-404", label="human").find(conn, "t")
    with db.reading() as conn, pytest.raises(AgentNotFound):  # another tenant sees neither
        BlockLocator(agent_id="agent-1", label="human").find(conn, "other")


def test_an_agent_and_its_labels_are_one_statement_in_attach_order(db: Database) -> None:
    with db.reading() as conn, statements_sent(db) as sent:
        agent = agent_rows.get_agent(conn, "t", "agent-1")
        empty = agent_rows.get_agent(conn, "t", "agent-empty")
    assert agent.block_labels == ("persona", "human")
    assert empty.block_labels == ()
    assert sent == ["SELECT", "SELECT"]
    with db.reading() as conn, pytest.raises(AgentNotFound):
        agent_rows.get_agent(conn, "other", "agent-1")


async def test_a_tool_edit_with_its_recompile_stays_within_its_statement_budget(db: Database) -> None:
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    runner = ToolRunner(db, Prompts(db, clock), clock)
    call = ToolCall(
        "t", "agent-1", "default", "core_memory_append", json.dumps({"label": "human", "content": "x"})
    )
    await runner.execute(call)  # the agent's first recompile also writes its snapshot row
    with statements_sent(db) as sent:
        run = await runner.execute(call)
    assert run.ok
    assert run.prompt_recompiled
    assert run.block is not None
    assert run.block.block.value == "human notes\nx\nx"
    # The agent with its blocks, how many agents hold each and its metadata counts (PostgreSQL locks the
    # agent first, in a statement of its own; SQLite's BEGIN IMMEDIATE holds the database), the block's
    # update and history row, then the recompile: the agent's snapshot rewritten in place, which is all
    # while every conversation points at it (the same for any number of conversations:
    # tests/memory/integration/test_edit_cost.py), after its receipt is recorded (an INSERT: the
    # receipt of the snapshot it replaces stays, for the messages that name it). The blocks as the edit
    # left them are not read again, nor the holders of a block no other agent holds. Last, the quota
    # check (store/quotas.py): one UPDATE that marks and returns what the write added.
    first = "BEGIN" if db.is_sqlite else "SELECT"
    assert sent == [first, "SELECT", "UPDATE", "INSERT", "INSERT", "UPDATE", "UPDATE"], sent


async def test_an_append_sends_the_statements_of_a_replace_whatever_the_block_size(db: Database) -> None:
    """core_memory_append is no dearer than memory_replace in statements: both are one planned
    SetValue, the same rows written, however large the block has grown."""
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    runner = ToolRunner(db, Prompts(db, clock), clock)

    def call(tool: str, arguments: dict[str, str]) -> ToolCall:
        return ToolCall("t", "agent-1", "default", tool, json.dumps(arguments))

    append = call("core_memory_append", {"label": "human", "content": "y" * 100})
    replace = call("memory_replace", {"label": "human", "old_string": "notes", "new_string": "notes, again"})
    assert (await runner.execute(append)).ok  # the agent's first recompile writes its snapshot row

    async def statements_of(edit: ToolCall) -> list[str]:
        with statements_sent(db) as sent:
            run = await runner.execute(edit)
        assert run.ok, run.text
        return sent

    small = [await statements_of(append), await statements_of(replace)]
    while len((await runner.execute(append)).block.block.value) < 800:  # type: ignore[union-attr]
        pass  # grow the block towards its 1,000-character limit
    large = [await statements_of(append), await statements_of(replace)]
    assert small[0] == small[1] == large[0] == large[1]


async def test_a_prompt_read_is_three_selects(db: Database) -> None:
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    prompts = Prompts(db, clock)
    with db.writing() as conn:
        prompts.recompile_all(conn, agent_rows.get_agent(conn, "t", "agent-1"))
    with statements_sent(db) as sent:
        view = await prompts.get("t", "agent-1", "default")
    assert not view.stale
    assert "persona notes" in view.prompt.text
    # (BEGIN on SQLite), agent, the conversation with its prompt, snapshot and counts, blocks (no files).
    assert [s for s in sent if s != "BEGIN"] == ["SELECT"] * 3, sent


async def test_a_rename_recompiles_the_prompt_in_attach_order(db: Database) -> None:
    """A renamed block keeps its place in the agent's memory, and so in the recompiled prompt."""
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    prompts = Prompts(db, clock)
    runner = ToolRunner(db, prompts, clock)
    arguments = json.dumps(
        {"command": "rename", "old_path": "/memories/persona", "new_path": "/memories/self"}
    )
    run = await runner.execute(ToolCall("t", "agent-1", "default", "memory", arguments))
    assert run.ok, run.text
    view = await prompts.get("t", "agent-1", "default")
    assert not view.stale
    assert view.prompt.text.index("<self>") < view.prompt.text.index("<human>")


async def test_snapshots_from_before_one_row_per_agent_are_dropped_at_the_next_recompile(
    db: Database,
) -> None:
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    prompts = Prompts(db, clock)
    old = PromptSnapshot("You are Sam.", "old memory", "UTC", 0, 0, (), 1)
    with db.writing() as conn:  # as an older server stored it: a snapshot with an id of its own
        conn.execute(
            insert(schema.prompt_snapshots).values(
                id="snap-old",
                agent_id="agent-1",
                system=old.system,
                memory=old.memory,
                timezone="UTC",
                message_count=0,
                passage_count=0,
                tags=[],
                compiled_us=1,
            )
        )
        conn.execute(
            insert(schema.system_prompts).values(
                agent_id="agent-1",
                conversation_id="default",
                text="",
                fingerprint="",
                compiled_us=1,
                snapshot_id="snap-old",
            )
        )
    assert "old memory" in (await prompts.get("t", "agent-1", "default")).prompt.text
    with db.writing() as conn:
        prompts.recompile_all(conn, agent_rows.get_agent(conn, "t", "agent-1"))
    view = await prompts.get("t", "agent-1", "default")
    assert not view.stale
    assert "persona notes" in view.prompt.text
    with db.reading() as conn:
        left = conn.execute(select(schema.prompt_snapshots.c.id)).scalars().all()
    assert left == ["agent-1"]


def test_a_page_of_agents_with_their_labels_is_one_statement(db: Database) -> None:
    with db.writing() as conn:
        agent_rows.insert_agent(conn, _agent("agent-2"))
        block = Block(label="notes", value="n", limit=100, id="block-notes")
        stored = block_rows.insert_block(conn, "t", block, source="test", actor="test")
        block_rows.attach(conn, "agent-2", stored.block)
    with db.reading() as conn, statements_sent(db) as sent:
        everyone = agent_rows.list_agents(conn, "t", Page(offset=0, size=10))
        second_page = agent_rows.list_agents(conn, "t", Page(offset=1, size=1))
    assert [(a.id, a.block_labels) for a in everyone] == [  # oldest first
        ("agent-1", ("persona", "human")),
        ("agent-empty", ()),
        ("agent-2", ("notes",)),
    ]
    assert [a.id for a in second_page] == ["agent-empty"]  # the page counts agents, not label rows
    assert sent == ["SELECT", "SELECT"]
    with db.reading() as conn:
        assert agent_rows.list_agents(conn, "other", Page(offset=0, size=10)) == []


async def test_unchanged_memory_is_rendered_once_and_an_edit_renders_anew(db: Database) -> None:
    clock = lambda: datetime(2026, 1, 1, tzinfo=UTC)  # noqa: E731
    prompts = Prompts(db, clock)
    runner = ToolRunner(db, prompts, clock)
    first, _ = await prompts.render("t", "agent-1", None)
    again, _ = await prompts.render("t", "agent-1", None)
    assert again == first
    assert (prompts.renders.misses, prompts.renders.hits) == (1, 1)
    edit = json.dumps({"label": "human", "content": "x"})
    assert (await runner.execute(ToolCall("t", "agent-1", "default", "core_memory_append", edit))).ok
    assert prompts.renders.misses == 2  # the recompile rendered the new versions ...
    after, _ = await prompts.render("t", "agent-1", None)
    assert "human notes\nx" in after
    assert (prompts.renders.misses, prompts.renders.hits) == (2, 2)  # ... which the next read reuses
    numbered, _ = await prompts.render("t", "agent-1", RenderMode.LINE_NUMBERED)
    assert "1→ human notes" in numbered  # another mode is another rendering
    assert prompts.renders.misses == 3


async def test_core_memory_is_rendered_from_one_select(db: Database) -> None:
    prompts = Prompts(db, lambda: datetime(2026, 1, 1, tzinfo=UTC))
    with statements_sent(db) as sent:
        text, mode = await prompts.render("t", "agent-1", None)
        empty, _ = await prompts.render("t", "agent-empty", None)
    assert mode is RenderMode.STANDARD
    assert text.index("<persona>") < text.index("<human>")
    assert empty == ""
    # (BEGIN on SQLite), then the agent's mode and file count with its blocks; files only when it has some.
    assert [s for s in sent if s != "BEGIN"] == ["SELECT", "SELECT"], sent
    with pytest.raises(AgentNotFound):
        await prompts.render("other", "agent-1", None)
