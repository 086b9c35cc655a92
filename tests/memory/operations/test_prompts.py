"""Stored system prompts: changed only on recompile (explicit, or by the on_edit policy); a dry run
returns the text and a diff without saving; a read says whether the prompt is stale
(DESIGN.md "<memory_metadata> and the system prompt")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from strata_memory.domain.errors import AgentNotFound, ConversationNotFound
from strata_memory.domain.model import Block, RecompilePolicy, RenderMode
from strata_memory.operations.blocks import BlockLocator
from strata_memory.operations.prompts import Prompts, directories, unified_diff
from strata_memory.store import agents as agent_rows
from strata_memory.store.records import AgentRecord, FileRecord, PassageRecord
from tests.memory.operations.conftest import OTHER_TENANT, TENANT, Ops, agent_record


async def _explicit_agent(ops: Ops) -> AgentRecord:
    return await ops.agents.create(
        agent_record(policy=RecompilePolicy.EXPLICIT, system="Sys"), [Block("human", "Bob", limit=20)]
    )


async def _edit(ops: Ops, agent: AgentRecord, value: str) -> None:
    await ops.blocks.update(
        TENANT, BlockLocator(agent_id=agent.id, label="human"), {"value": value}, "", actor="u"
    )


async def test_the_stored_prompt_is_exact(ops: Ops) -> None:
    agent = await ops.agents.create(
        agent_record(system="Sys"), [Block("human", "Bob", limit=20, description="About")]
    )
    text = (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text
    assert text == (
        "Sys\n\n<memory_blocks>\n"
        "The following memory blocks are currently engaged in your core memory unit:\n\n"
        "<human>\n<description>\nAbout\n</description>\n<metadata>\n- chars_current=3\n- chars_limit=20\n"
        "</metadata>\n<value>\nBob\n</value>\n</human>\n\n</memory_blocks>\n\n<memory_metadata>\n"
        f"- AGENT_ID: {agent.id}\n- CONVERSATION_ID: default\n"
        "- System prompt last recompiled: 2026-08-01 06:24:28 PM UTC+0000\n"
        "- 0 previous messages between you and the user are stored in recall memory "
        "(use tools to access them)\n</memory_metadata>"
    )


async def test_an_explicit_agent_goes_stale_until_recompiled(ops: Ops) -> None:
    agent = await _explicit_agent(ops)
    await _edit(ops, agent, "Al")
    stale = await ops.prompts.get(TENANT, agent.id, "default")
    assert stale.stale is True
    assert "<value>\nBob\n</value>" in stale.prompt.text

    dry = await ops.prompts.recompile(TENANT, agent.id, "default", dry_run=True)
    assert dry.saved is False
    assert "<value>\nAl\n</value>" in dry.prompt.text
    assert "-Bob\n+Al\n" in dry.diff
    assert dry.diff.startswith("--- stored\n+++ recompiled\n")
    assert (await ops.prompts.get(TENANT, agent.id, "default")).stale is True  # nothing saved

    done = await ops.prompts.recompile(TENANT, agent.id, "default", dry_run=False)
    assert done.saved is True
    assert done.diff == dry.diff
    view = await ops.prompts.get(TENANT, agent.id, "default")
    assert (view.stale, view.prompt.text) == (False, done.prompt.text)

    again = await ops.prompts.recompile(TENANT, agent.id, "default", dry_run=False)
    assert again.diff == ""


async def test_recompile_is_per_agent_and_conversation(ops: Ops) -> None:
    agent = await _explicit_agent(ops)
    with pytest.raises(AgentNotFound):
        await ops.prompts.recompile(OTHER_TENANT, agent.id, "default", dry_run=False)
    with pytest.raises(ConversationNotFound):
        await ops.prompts.recompile(TENANT, agent.id, "nope", dry_run=True)
    with pytest.raises(AgentNotFound):
        await ops.prompts.get(OTHER_TENANT, agent.id, "default")


async def test_a_new_conversation_of_an_on_edit_agent_follows_edits(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [Block("human", "Bob", limit=20)])
    await ops.agents.create_conversation(TENANT, agent.id, "c2")
    await _edit(ops, agent, "Al")
    for conversation in ("default", "c2"):
        view = await ops.prompts.get(TENANT, agent.id, conversation)
        assert view.stale is False
        assert "<value>\nAl\n</value>" in view.prompt.text
        assert f"- CONVERSATION_ID: {conversation}\n" in view.prompt.text


async def test_the_stale_flag_ignores_only_the_recompile_time(ops: Ops) -> None:
    agent = await _explicit_agent(ops)
    later = Prompts(ops.db, lambda: datetime(2027, 1, 1, tzinfo=UTC))
    view = await later.get(TENANT, agent.id, "default")
    assert view.stale is False  # the clock moved, memory did not
    assert "2026-08-01 06:24:28 PM" in view.prompt.text


async def test_the_metadata_counts_passages_and_tags(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [Block("human", "Bob", limit=20)])
    passage = PassageRecord(id="", tenant_id=TENANT, archive_id="", text="met Bob", tags=("people", "bob"))
    await ops.archives.insert(TENANT, agent_id=agent.id, archive_id="", passages=[passage, passage])
    text = (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text
    assert "- 2 total memories you created are stored in archival memory (use tools to access them)\n" in text
    assert "- Available archival memory tags: bob, people\n" in text


async def test_files_render_in_directories(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(render_mode=RenderMode.STANDARD), [Block("human", limit=5)])
    await ops.files.attach(TENANT, _file(agent.id, "docs", "a.md", "0123456789", limit=4))
    text, _ = await ops.prompts.render(TENANT, agent.id, None)
    assert "<directories>" in text
    assert '<file status="open"' in text
    assert "0123" in text
    assert "01234" not in text  # only ``limit`` characters of a file are shown
    assert "- chars_current=4\n- chars_limit=4\n" in text


async def test_a_conversation_without_a_stored_prompt_is_stale_and_diffs_from_nothing(ops: Ops) -> None:
    agent = await _explicit_agent(ops)
    with ops.db.writing() as conn:  # a conversation stored before prompts were (no prompt row)
        agent_rows.insert_conversation(conn, agent.id, "old")
    view = await ops.prompts.get(TENANT, agent.id, "old")
    assert view.stale is True
    assert "- CONVERSATION_ID: old\n" in view.prompt.text
    dry = await ops.prompts.recompile(TENANT, agent.id, "old", dry_run=True)
    lines = dry.prompt.text.count("\n") + 1
    assert dry.diff.startswith(f"--- stored\n+++ recompiled\n@@ -0,0 +1,{lines} @@\n+Sys\n")


def test_directories_group_files_in_order() -> None:
    files = [
        _file("a", "docs", "1", "x"),
        _file("a", "docs", "2", "y", is_open=False),
        _file("a", "src", "3", "z"),
    ]
    grouped = directories(files)
    assert [(d.name, [f.name for f in d.files]) for d in grouped] == [("docs", ["1", "2"]), ("src", ["3"])]
    assert [f.is_open for f in grouped[0].files] == [True, False]
    assert grouped[0].files[0].value == "x"
    assert [f.limit for f in grouped[0].files] == [100, 100]


def test_unified_diff_ends_every_line() -> None:
    assert unified_diff("a\nb", "a\nc") == "--- stored\n+++ recompiled\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"
    assert unified_diff("x", "x") == ""
    assert unified_diff("", "n", old_name="v1", new_name="v2") == "--- v1\n+++ v2\n@@ -0,0 +1 @@\n+n\n"


def _file(
    agent_id: str, directory: str, name: str, content: str, *, limit: int = 100, is_open: bool = True
) -> FileRecord:
    return FileRecord(
        id="",
        tenant_id=TENANT,
        agent_id=agent_id,
        directory=directory,
        name=name,
        content=content,
        description="",
        limit=limit,
        is_open=is_open,
        created_us=0,
        updated_us=0,
    )
