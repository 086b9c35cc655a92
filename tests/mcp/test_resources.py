"""MCP resources over both transports: rendered memory, system prompt and each block, read afresh so
an edit by another client shows at once."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from strata.client import AsyncMemoryClient
from tests.mcp.sessions import Open, Tenant


async def read(session: ClientSession, uri: str) -> types.TextResourceContents:
    (contents,) = (await session.read_resource(uri)).contents
    assert isinstance(contents, types.TextResourceContents)
    return contents


async def test_resources_name_the_agents_memory_prompt_and_blocks(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    base = f"strata://agents/{tenant.agent_id}"
    async with open_session(tenant) as session:
        listed = [str(resource.uri) for resource in (await session.list_resources()).resources]
        templates = (await session.list_resource_templates()).resource_templates
    labels = [block.label async for block in grpc_client.iter_blocks(agent_id=tenant.agent_id)]
    assert listed == [f"{base}/memory", f"{base}/system-prompt"] + [
        f"{base}/blocks/{label}" for label in labels
    ]
    assert [t.uri_template for t in templates] == [
        "strata://agents/{agent_id}/memory",
        "strata://agents/{agent_id}/system-prompt",
        "strata://agents/{agent_id}/blocks/{label}",
    ]


async def test_resources_show_an_edit_made_by_another_client(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    agent = tenant.agent_id
    base = f"strata://agents/{agent}"
    async with open_session(tenant) as session:
        assert (await read(session, f"{base}/blocks/human")).text == ""
        before = (await read(session, f"{base}/memory")).text

        edited = await grpc_client.execute_tool(
            agent_id=agent,
            tool_name="core_memory_append",
            arguments={"label": "human", "content": "Likes jazz."},
        )
        block = await read(session, f"{base}/blocks/human")
        assert block.text == "Likes jazz."
        assert block.meta == {"etag": edited.block.etag, "version": edited.block.version}
        memory = (await read(session, f"{base}/memory")).text
        assert memory != before
        assert memory == (await grpc_client.render_memory(agent_id=agent)).text

        await grpc_client.recompile_system_prompt(agent_id=agent)
        prompt = await read(session, f"{base}/system-prompt")
        stored = await grpc_client.get_system_prompt(agent_id=agent)
        assert (prompt.text, prompt.meta) == (stored.text, {"stale": False})
        assert "Likes jazz." in prompt.text

        await grpc_client.execute_tool(
            agent_id=agent,
            tool_name="core_memory_append",
            arguments={"label": "human", "content": "And blues."},
        )
        assert (await read(session, f"{base}/system-prompt")).meta == {
            "stale": (await grpc_client.get_system_prompt(agent_id=agent)).stale
        }


async def test_a_label_with_slashes_is_one_resource(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    created = await grpc_client.execute_tool(
        agent_id=tenant.agent_id,
        tool_name="memory",
        arguments={
            "command": "create",
            "path": "/memories/project/notes",
            "description": "d",
            "file_text": "deep",
        },
    )
    assert created.ok, created.text
    async with open_session(tenant) as session:
        uris = [str(r.uri) for r in (await session.list_resources()).resources]
        (uri,) = [u for u in uris if u.endswith("/blocks/project/notes")]
        assert (await read(session, uri)).text == "deep"


@pytest.mark.parametrize(
    "uri",
    [
        "strata://agents/{agent}/nothing",
        "strata://agents/{agent}/blocks/",
        "file:///etc/passwd",
        "strata://agents/",
    ],
)
async def test_an_unknown_resource_is_refused(open_session: Open, tenant: Tenant, uri: str) -> None:
    async with open_session(tenant) as session:
        with pytest.raises(MCPError, match="unknown resource"):
            await session.read_resource(uri.format(agent=tenant.agent_id))
        with pytest.raises(MCPError, match="NOT_FOUND") as missing:
            await session.read_resource(f"strata://agents/{tenant.agent_id}/blocks/missing")
    assert missing.value.error.code == -32002
