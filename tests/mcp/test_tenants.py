"""Tenant isolation through MCP: tenant A's key can list, read or edit nothing of tenant B's, through
any tool or resource, over either transport."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from strata.client import AsyncMemoryClient
from tests.mcp.sessions import Open, Tenant, stdio_session

EDITS_OF_B = [
    ("core_memory_append", {"label": "human", "content": "from A"}),
    ("memory_rethink", {"label": "human", "new_memory": "from A"}),
    ("memory", {"command": "create", "path": "/memories/x", "description": "d", "file_text": "from A"}),
    ("archival_memory_insert", {"content": "from A"}),
    ("archival_memory_search", {"query": "anything"}),
    ("conversation_search", {"query": "anything"}),
    ("read_memory", {}),
]


def text_of(result: types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, types.TextContent)
    return content.text


async def blocks_of(target: str, tenant: Tenant) -> dict[str, str]:
    async with AsyncMemoryClient(target, api_key=tenant.key, timeout=10) as client:
        return {b.label: b.value async for b in client.iter_blocks(agent_id=tenant.agent_id)}


async def test_a_tenant_reaches_nothing_of_another_tenant(
    open_session: Open, memory_target: str, tenant: Tenant, other_tenant: Tenant
) -> None:
    victim = other_tenant.agent_id
    before = await blocks_of(memory_target, other_tenant)
    async with open_session(tenant) as session:
        for name, arguments in EDITS_OF_B:
            result = await session.call_tool(name, {"agent_id": victim, **arguments})
            assert result.is_error, name
            assert text_of(result).startswith("NOT_FOUND: "), (name, text_of(result))
        listed = await session.call_tool("list_agents", {})
        assert victim not in text_of(listed)
        assert tenant.agent_id in text_of(listed)
        uris = [str(r.uri) for r in (await session.list_resources()).resources]
        assert uris
        assert not [uri for uri in uris if victim in uri]
        for kind in ("memory", "system-prompt", "blocks/human"):
            with pytest.raises(MCPError, match="NOT_FOUND"):
                await session.read_resource(f"strata://agents/{victim}/{kind}")
    assert await blocks_of(memory_target, other_tenant) == before


async def test_a_stdio_server_fixed_to_another_tenants_agent_serves_nothing_of_it(
    memory_target: str, tenant: Tenant, other_tenant: Tenant
) -> None:
    before = await blocks_of(memory_target, other_tenant)
    async with stdio_session(memory_target, tenant.key, agent=other_tenant.agent_id) as session:
        result = await session.call_tool("core_memory_append", {"label": "human", "content": "from A"})
        assert result.is_error
        assert text_of(result).startswith("NOT_FOUND: ")
        with pytest.raises(MCPError, match="NOT_FOUND"):
            await session.list_resources()
        with pytest.raises(MCPError, match="NOT_FOUND"):
            await session.read_resource(f"strata://agents/{other_tenant.agent_id}/memory")
    assert await blocks_of(memory_target, other_tenant) == before
