"""Agents: created with the default persona/human blocks and a compiled prompt; etags on update/delete;
conversations (DESIGN.md "Core memory", "<memory_metadata> and the system prompt")."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from strata_memory.domain.errors import AgentNotFound, ConversationNotFound, EtagMismatch
from strata_memory.domain.model import Block, RecompilePolicy, RenderMode
from strata_memory.operations.agents import DEFAULT_BLOCKS, checked_block, new_id
from strata_memory.operations.blocks import BlockLocator
from strata_memory.store import index_jobs
from strata_memory.store.records import Page
from strata_serving.errors import AlreadyExists, InvalidArgument
from tests.memory.operations.conftest import OTHER_TENANT, TENANT, UUID, Ops, agent_record


def test_new_ids_name_their_kind() -> None:
    first, second = new_id("block"), new_id("block")
    assert re.fullmatch(f"block-{UUID}", first)
    assert first != second


def test_default_blocks_are_persona_and_human_of_20000() -> None:
    assert [(b.label, b.limit, b.value) for b in DEFAULT_BLOCKS] == [
        ("persona", 20000, ""),
        ("human", 20000, ""),
    ]
    assert DEFAULT_BLOCKS[0].description.startswith(
        "The persona block: stores details about your current persona"
    )
    assert DEFAULT_BLOCKS[1].description.startswith("The human block: stores key details about the person")


def test_checked_block_normalises_and_gives_a_fresh_id() -> None:
    block = checked_block(Block("notes", "a\r\nb", limit=3, description="x\ry", id="mine", version=7))
    assert (block.value, block.description, block.version) == ("a\nb", "x\ny", 0)
    assert re.fullmatch(f"block-{UUID}", block.id)


def test_checked_block_refuses_a_value_over_its_limit() -> None:
    assert checked_block(Block("notes", "abc", limit=3)).value == "abc"  # exactly the limit is fine
    with pytest.raises(InvalidArgument) as caught:
        checked_block(Block("notes", "abcd", limit=3))
    assert caught.value.message == "block.value: is 4 characters, longer than its limit of 3"


@pytest.mark.parametrize(
    ("block", "reason"), [(Block("bad label"), "INVALID_LABEL"), (Block("ok", limit=0), "INVALID_LIMIT")]
)
def test_checked_block_validates_label_and_limit(block: Block, reason: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        checked_block(block)
    assert caught.value.reason == reason


async def test_create_stores_default_blocks_and_a_fresh_prompt(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(system="Hi\r\n{CORE_MEMORY}"), [])
    assert re.fullmatch(f"agent-{UUID}", agent.id)
    assert (agent.tenant_id, agent.name, agent.system, agent.version) == (
        TENANT,
        "Sam",
        "Hi\n{CORE_MEMORY}",
        1,
    )
    assert agent.block_labels == ("persona", "human")
    human = await ops.blocks.get(TENANT, BlockLocator(agent_id=agent.id, label="human"))
    assert (human.block.limit, human.block.value) == (20000, "")
    versions = await ops.blocks.versions(TENANT, BlockLocator(agent_id=agent.id, label="human"), Page())
    assert [(v.version, v.source, v.actor) for v in versions] == [(1, "api:CreateAgent", agent.id)]
    view = await ops.prompts.get(TENANT, agent.id, "default")
    assert view.stale is False
    assert view.prompt.text.startswith("Hi\n<memory_blocks>\n")
    assert f"- AGENT_ID: {agent.id}\n- CONVERSATION_ID: default\n" in view.prompt.text
    assert "- System prompt last recompiled: 2026-08-01 06:24:28 PM UTC+0000\n" in view.prompt.text


async def test_create_with_given_blocks_in_order(ops: Ops) -> None:
    agent = await ops.agents.create(
        agent_record(), [Block("b", "two", limit=10), Block("a", "one", limit=10)]
    )
    assert agent.block_labels == ("b", "a")


async def test_create_refuses_duplicate_labels(ops: Ops) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await ops.agents.create(agent_record(), [Block("a"), Block("a")])
    assert caught.value.message == "blocks: labels must be unique within an agent"
    assert await ops.agents.listing(TENANT, Page()) == []


async def test_create_refuses_an_unknown_timezone(ops: Ops) -> None:
    with pytest.raises(InvalidArgument) as caught:
        await ops.agents.create(agent_record(timezone="Mars/Olympus"), [])
    assert caught.value.reason == "INVALID_TIMEZONE"
    assert await ops.agents.listing(TENANT, Page()) == []


async def test_get_and_list_are_per_tenant(ops: Ops) -> None:
    mine = await ops.agents.create(agent_record(name="one"), [])
    theirs = await ops.agents.create(agent_record(tenant_id=OTHER_TENANT, name="two"), [])
    assert (await ops.agents.get(TENANT, mine.id)).name == "one"
    with pytest.raises(AgentNotFound):
        await ops.agents.get(TENANT, theirs.id)
    assert [a.id for a in await ops.agents.listing(TENANT, Page())] == [mine.id]
    assert [a.id for a in await ops.agents.listing(OTHER_TENANT, Page())] == [theirs.id]


async def test_update_applies_only_the_named_fields(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [])
    changes = replace(
        agent_record(name="Renamed", system="New\r\nsystem", timezone="Europe/Paris"), id=agent.id
    )
    updated = await ops.agents.update(TENANT, changes, ["name", "system"], agent.etag)
    assert (updated.name, updated.system, updated.timezone, updated.version) == (
        "Renamed",
        "New\nsystem",
        "UTC",
        2,
    )
    assert updated.etag != agent.etag
    prompt = (await ops.prompts.get(TENANT, agent.id, "default")).prompt.text
    assert prompt.startswith("New\nsystem\n\n<memory_blocks>")  # on_edit: recompiled with the new system text


async def test_update_with_a_stale_etag_changes_nothing(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [])
    changes = replace(agent_record(name="x"), id=agent.id)
    await ops.agents.update(TENANT, changes, ["name"], "")  # no etag: unconditional
    with pytest.raises(EtagMismatch) as caught:
        await ops.agents.update(TENANT, changes, ["name"], agent.etag)
    assert caught.value.metadata["resource"] == f"Agent '{agent.id}'"
    assert caught.value.metadata["expected_etag"] == agent.etag
    assert (await ops.agents.get(TENANT, agent.id)).version == 2


async def test_update_checks_a_new_timezone(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [])
    bad = replace(agent_record(timezone="Nowhere/Town"), id=agent.id)
    with pytest.raises(InvalidArgument):
        await ops.agents.update(TENANT, bad, ["timezone"], "")
    assert (await ops.agents.get(TENANT, agent.id)).timezone == "UTC"


async def test_update_of_an_explicit_agent_leaves_the_prompt(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(policy=RecompilePolicy.EXPLICIT), [])
    before = (await ops.prompts.get(TENANT, agent.id, "default")).prompt
    changes = replace(agent_record(system="Other"), id=agent.id)
    await ops.agents.update(TENANT, changes, ["system"], "")
    view = await ops.prompts.get(TENANT, agent.id, "default")
    assert view.prompt.text == before.text
    assert view.stale is True


async def test_delete_checks_the_etag_and_queues_the_index_deletion(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [])
    with pytest.raises(EtagMismatch):
        await ops.agents.delete(TENANT, agent.id, "stale")
    with pytest.raises(AgentNotFound):
        await ops.agents.delete(OTHER_TENANT, agent.id, "")
    await ops.agents.delete(TENANT, agent.id, agent.etag)
    with pytest.raises(AgentNotFound):
        await ops.agents.get(TENANT, agent.id)
    with ops.db.reading() as conn:
        assert index_jobs.pending(conn) == 1


async def test_conversations(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [])
    named = await ops.agents.create_conversation(TENANT, agent.id, "trip-planning")
    assert (named.agent_id, named.id) == (agent.id, "trip-planning")
    fresh = await ops.agents.create_conversation(TENANT, agent.id, "")
    assert re.fullmatch(f"conv-{UUID}", fresh.id)
    listed = await ops.agents.list_conversations(TENANT, agent.id, Page())
    assert [c.id for c in listed] == ["default", "trip-planning", fresh.id]
    view = await ops.prompts.get(TENANT, agent.id, "trip-planning")
    assert "- CONVERSATION_ID: trip-planning\n" in view.prompt.text
    assert view.stale is False


async def test_a_conversation_id_is_unique_per_agent(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [])
    await ops.agents.create_conversation(TENANT, agent.id, "c1")
    with pytest.raises(AlreadyExists) as caught:
        await ops.agents.create_conversation(TENANT, agent.id, "c1")
    assert caught.value.reason == "CONVERSATION_EXISTS"
    assert caught.value.message == f"Conversation 'c1' already exists for agent '{agent.id}'."
    assert caught.value.metadata == {"conversation_id": "c1"}


async def test_conversation_ids_are_validated_and_scoped(ops: Ops) -> None:
    agent = await ops.agents.create(agent_record(), [])
    with pytest.raises(InvalidArgument) as caught:
        await ops.agents.create_conversation(TENANT, agent.id, "has space")
    assert caught.value.field_violations[0][0] == "conversation_id"
    with pytest.raises(AgentNotFound):
        await ops.agents.create_conversation(OTHER_TENANT, agent.id, "c2")
    with pytest.raises(AgentNotFound):
        await ops.agents.list_conversations(OTHER_TENANT, agent.id, Page())
    with pytest.raises(ConversationNotFound):
        await ops.prompts.get(TENANT, agent.id, "c2")


async def test_render_in_the_agents_mode_or_another(ops: Ops) -> None:
    agent = await ops.agents.create(
        agent_record(render_mode=RenderMode.LINE_NUMBERED), [Block("notes", "a\nb", limit=9)]
    )
    text, used = await ops.prompts.render(TENANT, agent.id, None)
    assert used is RenderMode.LINE_NUMBERED
    assert "<value>\n1→ a\n2→ b\n</value>" in text
    text, used = await ops.prompts.render(TENANT, agent.id, RenderMode.STANDARD)
    assert used is RenderMode.STANDARD
    assert "<value>\na\nb\n</value>" in text
