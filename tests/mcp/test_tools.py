"""MCP tools over stdio (``strata mcp`` spawned) and streamable HTTP, with the MCP SDK's own client:
the tool list is ListTools', every memory tool does what the gRPC call does, failures are tool errors
carrying the service's text, and the search tools reach archival memory and recall."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import mcp_types as types

from strata.client import AbortedError, AsyncMemoryClient
from strata.memory.v1 import resources_pb2 as pb
from tests.mcp.sessions import Open, Tenant, stdio_session

EDITS: list[tuple[str, dict[str, Any]]] = [
    ("core_memory_append", {"label": "human", "content": "Name: Ada"}),
    ("core_memory_replace", {"label": "human", "old_content": "Ada", "new_content": "Ada Lovelace"}),
    ("memory_replace", {"label": "human", "old_string": "Lovelace", "new_string": "King"}),
    ("memory_insert", {"label": "persona", "new_string": "Curious.", "insert_line": 0}),
    ("memory_rethink", {"label": "persona", "new_memory": "Calm.\nCurious."}),
    (
        "memory",
        {"command": "create", "path": "/memories/project/notes", "description": "notes", "file_text": "plan"},
    ),
    (
        "memory",
        {
            "command": "str_replace",
            "path": "/memories/project/notes",
            "old_string": "plan",
            "new_string": "the plan",
        },
    ),
    (
        "memory",
        {"command": "insert", "path": "/memories/project/notes", "insert_text": "step 1", "insert_line": 1},
    ),
    ("memory", {"command": "rename", "old_path": "/memories/project/notes", "new_path": "/memories/notes"}),
    ("memory", {"command": "rename", "path": "/memories/notes", "description": "project notes"}),
    ("memory", {"command": "delete", "path": "/memories/notes"}),
]
"""Every memory tool that edits a block, each command of the omni tool, in an order that works."""


def etag_meta(etag: str) -> types.RequestParamsMeta:
    """A call's ``_meta`` making its edit conditional on ``etag``."""
    return cast(types.RequestParamsMeta, {"strata/etag": etag})


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


async def blocks_of(client: AsyncMemoryClient, agent_id: str) -> dict[str, tuple[str, str]]:
    return {b.label: (b.value, b.description) async for b in client.iter_blocks(agent_id=agent_id)}


async def test_the_tools_are_list_tools_names_descriptions_and_schemas(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    served = (await grpc_client.list_tools()).tools
    async with open_session(tenant) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert list(listed) == [tool.name for tool in served] + ["read_memory", "list_agents"]
    for tool in served:
        parameters = json.loads(tool.json_schema)["function"]["parameters"]
        mcp_tool = listed[tool.name]
        assert mcp_tool.description == tool.description
        schema = dict(mcp_tool.input_schema)
        properties = dict(schema.pop("properties"))
        assert properties.pop("agent_id")["type"] == "string"
        required = list(schema.pop("required"))
        assert required[0] == "agent_id"
        assert {**schema, "properties": properties, "required": required[1:]} == parameters


async def test_a_server_fixed_to_one_agent_serves_the_schemas_unchanged(
    memory_target: str, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    served = (await grpc_client.list_tools()).tools
    async with stdio_session(memory_target, tenant.key, agent=tenant.agent_id) as session:
        listed = (await session.list_tools()).tools
        appended = await session.call_tool("core_memory_append", {"label": "human", "content": "Hi"})
    assert [tool.name for tool in listed] == [tool.name for tool in served] + ["read_memory"]
    for tool, mcp_tool in zip(served, listed, strict=False):
        assert mcp_tool.input_schema == json.loads(tool.json_schema)["function"]["parameters"]
    assert not appended.is_error
    assert (await grpc_client.get_block(agent_id=tenant.agent_id, label="human")).value == "Hi"


async def test_every_memory_tool_changes_the_block_as_the_grpc_call_would(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    twin = (await grpc_client.create_agent()).id
    async with open_session(tenant) as session:
        for name, arguments in EDITS:
            result = await session.call_tool(name, {"agent_id": tenant.agent_id, **arguments})
            direct = await grpc_client.execute_tool(agent_id=twin, tool_name=name, arguments=arguments)
            assert direct.ok, (name, arguments, direct.text)
            assert (result.is_error, text_of(result)) == (False, direct.text), (name, arguments)
            edited = direct.block if direct.HasField("block") else None
            etag = (
                (await grpc_client.get_block(agent_id=tenant.agent_id, label=edited.label)).etag
                if edited
                else ""
            )
            assert result.meta == ({"strata/etag": etag, "strata/label": edited.label} if edited else None)
            assert await blocks_of(grpc_client, tenant.agent_id) == await blocks_of(grpc_client, twin)
        rendered = await session.call_tool("read_memory", {"agent_id": tenant.agent_id})
    assert text_of(rendered) == (await grpc_client.render_memory(agent_id=tenant.agent_id)).text
    assert "Ada King" in text_of(rendered)


async def test_refusals_are_tool_errors_with_the_services_text(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    agent = tenant.agent_id
    await grpc_client.create_block(block=pb.Block(label="short", value="tiny", limit=10), agent_id=agent)
    await grpc_client.create_block(
        block=pb.Block(label="rules", value="fixed", read_only=True), agent_id=agent
    )
    refused = [
        ("core_memory_append", {"label": "short", "content": "far too long for ten"}, "CHAR_LIMIT_EXCEEDED"),
        (
            "memory_replace",
            {"label": "rules", "old_string": "fixed", "new_string": "loose"},
            "READ_ONLY_BLOCK",
        ),
        ("core_memory_append", {"label": "nowhere", "content": "x"}, "BLOCK_NOT_FOUND"),
    ]
    before = await blocks_of(grpc_client, agent)
    async with open_session(tenant) as session:
        for name, arguments, reason in refused:
            result = await session.call_tool(name, {"agent_id": agent, **arguments})
            direct = await grpc_client.execute_tool(agent_id=agent, tool_name=name, arguments=arguments)
            assert (direct.ok, direct.reason) == (False, reason)
            assert result.is_error
            assert text_of(result) == f"{direct.text} (reason: {reason})"
            assert result.meta == {"strata/reason": reason}
    assert await blocks_of(grpc_client, agent) == before


async def test_a_stale_etag_is_a_tool_error_with_the_services_text(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    agent = tenant.agent_id
    stale = (await grpc_client.get_block(agent_id=agent, label="human")).etag
    await grpc_client.execute_tool(
        agent_id=agent,
        tool_name="core_memory_append",
        arguments={"label": "human", "content": "by another client"},
    )
    arguments = {"label": "human", "content": "mine"}
    try:
        await grpc_client.execute_tool(
            agent_id=agent, tool_name="core_memory_append", arguments=arguments, etag=stale
        )
        raise AssertionError("the stale etag was accepted")
    except AbortedError as error:
        expected = f"ABORTED: {error.message} (reason: {error.reason})"
    async with open_session(tenant) as session:
        result = await session.call_tool(
            "core_memory_append", {"agent_id": agent, **arguments}, meta=etag_meta(stale)
        )
        assert (result.is_error, text_of(result)) == (True, expected)
        current = (await grpc_client.get_block(agent_id=agent, label="human")).etag
        applied = await session.call_tool(
            "core_memory_append", {"agent_id": agent, **arguments}, meta=etag_meta(current)
        )
    assert not applied.is_error
    assert (await grpc_client.get_block(agent_id=agent, label="human")).value == "by another client\nmine"


async def test_a_call_without_an_agent_or_with_bad_arguments_is_a_tool_error(
    open_session: Open, tenant: Tenant
) -> None:
    async with open_session(tenant) as session:
        no_agent = await session.call_tool("core_memory_append", {"label": "human", "content": "x"})
        bad = await session.call_tool("core_memory_append", {"agent_id": tenant.agent_id, "label": "human"})
        unknown = await session.call_tool("no_such_tool", {"agent_id": tenant.agent_id})
    assert no_agent.is_error
    assert "agent_id is required" in text_of(no_agent)
    assert bad.is_error
    assert "content" in text_of(bad)
    assert unknown.is_error
    assert "no_such_tool" in text_of(unknown)


async def test_search_reaches_archival_memory_and_recall(
    open_session: Open, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    agent = tenant.agent_id
    await grpc_client.append_messages(
        agent_id=agent,
        messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="My sister Grace lives in Lisbon.")],
        wait_searchable=True,
    )
    async with open_session(tenant) as session:
        inserted = await session.call_tool(
            "archival_memory_insert",
            {"agent_id": agent, "content": "Ada wrote the first published program.", "tags": ["history"]},
        )
        assert not inserted.is_error
        recalled = await session.call_tool("conversation_search", {"agent_id": agent, "query": "sister"})
        assert "Lisbon" in text_of(recalled)
        for _ in range(100):  # the passage becomes searchable once indexed
            found = await session.call_tool(
                "archival_memory_search", {"agent_id": agent, "query": "first program"}
            )
            if "Ada wrote" in text_of(found):
                break
            await asyncio.sleep(0.1)
        assert "Ada wrote the first published program." in text_of(found)


async def test_list_agents_names_the_tenants_agents(open_session: Open, tenant: Tenant) -> None:
    async with open_session(tenant) as session:
        listed = await session.call_tool("list_agents", {})
    assert text_of(listed).split("\t")[0] == tenant.agent_id
