"""AsyncMemoryClient round trips through a real MemoryService."""

from __future__ import annotations

import json

import pytest

from strata.client import AsyncMemoryClient, NotFoundError
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb


async def test_agent_lifecycle(client: AsyncMemoryClient) -> None:
    created = await client.create_agent(agent=pb.Agent(name="sam", system="You are Sam.\n{CORE_MEMORY}"))
    assert list(created.block_labels) == ["persona", "human"]
    assert created.tenant_id == client.tenant

    fetched = await client.get_agent(agent_id=created.id)
    assert fetched == created

    renamed = await client.update_agent(
        agent=pb.Agent(id=created.id, name="samantha", timezone="Europe/Paris"),
        update_mask=["name", "timezone"],
        etag=created.etag,
    )
    assert (renamed.name, renamed.timezone, renamed.system) == ("samantha", "Europe/Paris", created.system)
    assert renamed.etag != created.etag

    await client.delete_agent(agent_id=created.id, etag=renamed.etag)
    with pytest.raises(NotFoundError) as caught:
        await client.get_agent(agent_id=created.id)
    assert caught.value.reason == "AGENT_NOT_FOUND"


async def test_blocks_by_label_and_id_with_history(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(agent=pb.Agent(name="sam"))
    block = await client.create_block(
        block=pb.Block(label="notes", value="first", limit=100), agent_id=agent.id
    )
    assert await client.get_block(agent_id=agent.id, label="notes") == await client.get_block(
        block_id=block.id
    )

    edited = await client.update_block(
        agent_id=agent.id,
        label="notes",
        block=pb.Block(value="second"),
        update_mask=["value"],
        etag=block.etag,
    )
    assert (edited.value, edited.version) == ("second", block.version + 1)

    versions = [v.version async for v in client.iter_block_versions(block_id=block.id)]
    assert versions == [edited.version, block.version]  # newest first
    diff = await client.diff_block_versions(block_id=block.id, from_version=block.version)
    assert "-first" in diff.diff
    assert "+second" in diff.diff

    restored = await client.restore_block_version(agent_id=agent.id, label="notes", version=block.version)
    assert (restored.value, restored.version) == ("first", edited.version + 1)


async def test_shared_block_attach_detach(client: AsyncMemoryClient) -> None:
    first = await client.create_agent(agent=pb.Agent(name="a"))
    second = await client.create_agent(agent=pb.Agent(name="b"), blocks=[pb.Block(label="own", value="x")])
    shared = await client.create_block(block=pb.Block(label="team", value="we ship"), agent_id=first.id)

    attached = await client.attach_block(agent_id=second.id, block_id=shared.id)
    assert list(attached.block_labels) == ["own", "team"]
    assert [b.label async for b in client.iter_blocks(agent_id=second.id)] == ["own", "team"]

    detached = await client.detach_block(agent_id=second.id, block_id=shared.id)
    assert list(detached.block_labels) == ["own"]


async def test_pagination_walks_every_page(client: AsyncMemoryClient) -> None:
    names = [f"agent-{i}" for i in range(5)]
    for name in names:
        await client.create_agent(agent=pb.Agent(name=name))

    first_page = await client.list_agents(page_size=2)
    assert isinstance(first_page, api.ListAgentsResponse)
    assert len(first_page.agents) == 2
    assert first_page.next_page_token
    assert sorted([a.name async for a in client.iter_agents(page_size=2)]) == names

    agent = await client.create_agent(agent=pb.Agent(name="talker"))
    roles = [pb.MESSAGE_ROLE_USER, pb.MESSAGE_ROLE_ASSISTANT] * 4
    appended = await client.append_messages(
        agent_id=agent.id, messages=[pb.Message(role=r, content=f"m{i}") for i, r in enumerate(roles)]
    )
    assert [m.sequence for m in appended.messages] == sorted(m.sequence for m in appended.messages)
    contents = [m.content async for m in client.iter_messages(agent_id=agent.id, page_size=3)]
    assert contents == [f"m{i}" for i in range(8)]
    users = [
        m.content
        async for m in client.iter_messages(agent_id=agent.id, roles=[pb.MESSAGE_ROLE_USER], page_size=3)
    ]
    assert users == ["m0", "m2", "m4", "m6"]
    page = await client.list_messages(agent_id=agent.id, page_size=3)
    assert page.total_size == 8


async def test_prompt_stays_stale_under_explicit_until_recompiled(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(
        agent=pb.Agent(name="sam", recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT),
        blocks=[pb.Block(label="human", value="Name: Ada")],
    )
    before = await client.get_system_prompt(agent_id=agent.id)
    result = await client.execute_tool(
        agent_id=agent.id,
        tool_name="core_memory_append",
        arguments={"label": "human", "content": "Likes tea"},
    )
    assert result.ok, result.text
    assert not result.prompt_recompiled
    stale = await client.get_system_prompt(agent_id=agent.id)
    assert (stale.text, stale.stale) == (before.text, True)

    preview = await client.recompile_system_prompt(agent_id=agent.id, dry_run=True)
    assert not preview.saved
    assert "+Likes tea" in preview.diff
    assert (await client.get_system_prompt(agent_id=agent.id)).stale

    saved = await client.recompile_system_prompt(agent_id=agent.id)
    assert saved.saved
    fresh = await client.get_system_prompt(agent_id=agent.id)
    assert not fresh.stale
    assert "Likes tea" in fresh.text

    rendered = await client.render_memory(agent_id=agent.id, mode=pb.RENDER_MODE_LINE_NUMBERED)
    assert rendered.mode == pb.RENDER_MODE_LINE_NUMBERED
    assert "Likes tea" in rendered.text


async def test_tools_listed_and_executed_from_dict_or_json_text(client: AsyncMemoryClient) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert json.loads(tools["core_memory_append"].json_schema)["function"]["name"] == "core_memory_append"

    agent = await client.create_agent(agent=pb.Agent(name="sam"))
    as_text = await client.execute_tool(
        agent_id=agent.id, tool_name="core_memory_append", arguments='{"label": "human", "content": "é"}'
    )
    assert as_text.ok
    assert as_text.block.value.endswith("é")
    failed = await client.execute_tool(
        agent_id=agent.id, tool_name="core_memory_append", arguments={"label": 3}
    )
    assert not failed.ok
    assert failed.text


async def test_conversations_and_files(client: AsyncMemoryClient) -> None:
    agent = await client.create_agent(agent=pb.Agent(name="sam"))
    await client.create_conversation(agent_id=agent.id, conversation_id="side")
    listed = await client.list_conversations(agent_id=agent.id)
    assert sorted(c.id for c in listed.conversations) == ["default", "side"]

    attached = await client.attach_file(
        agent_id=agent.id, file=pb.File(directory="docs", name="a.md", content="hello", is_open=True)
    )
    closed = await client.update_file(
        file_id=attached.id, file=pb.File(is_open=False), update_mask=["is_open"]
    )
    assert not closed.is_open
    assert [f.id for f in (await client.list_files(agent_id=agent.id)).files] == [attached.id]
    await client.detach_file(file_id=attached.id)
    assert list((await client.list_files(agent_id=agent.id)).files) == []


async def test_tenants_are_isolated(client: AsyncMemoryClient, memory_target: str) -> None:
    agent = await client.create_agent(agent=pb.Agent(name="private"))
    async with AsyncMemoryClient(memory_target, tenant="someone-else") as other:
        with pytest.raises(NotFoundError):
            await other.get_agent(agent_id=agent.id)
        assert agent.id not in [a.id for a in (await other.list_agents(page_size=1000)).agents]
