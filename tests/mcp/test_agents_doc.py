"""docs/agents.md works as written: the Claude Desktop config starts a server the MCP SDK's client uses,
and the Python examples compile against the pinned SDKs."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import anthropic
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from strata.client import AsyncMemoryClient
from tests.mcp.sessions import STRATA, Tenant

DOC = Path(__file__).resolve().parents[2] / "docs" / "agents.md"


def block_after(marker: str) -> str:
    """The fenced code block following ``<!-- marker: … -->`` in docs/agents.md."""
    found = re.search(rf"<!-- {marker}:[^>]*-->\n```\w*\n(.*?)\n```", DOC.read_text(), re.DOTALL)
    assert found, f"no block marked {marker} in {DOC}"
    return found.group(1)


async def test_the_claude_desktop_config_starts_a_server_that_serves_the_tools(
    memory_target: str, tenant: Tenant, grpc_client: AsyncMemoryClient
) -> None:
    config = json.loads(block_after("agents-config"))["mcpServers"]["strata"]
    args = [
        {"127.0.0.1:50051": memory_target, "agent-REPLACE-ME": tenant.agent_id}.get(arg, arg)
        for arg in config["args"]
    ]
    assert config["env"] == {"STRATA_API_KEY": "sk_REPLACE_ME"}
    assert config["command"].endswith("/.venv/bin/strata")
    parameters = StdioServerParameters(command=STRATA, args=args, env={"STRATA_API_KEY": tenant.key})
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = [tool.name for tool in (await session.list_tools()).tools]
        result = await session.call_tool(
            "core_memory_append", {"label": "human", "content": "Set up from the docs."}
        )
    assert names == [tool.name for tool in (await grpc_client.list_tools()).tools] + ["read_memory"]
    assert isinstance(result, types.CallToolResult)
    assert not result.is_error
    assert (
        await grpc_client.get_block(agent_id=tenant.agent_id, label="human")
    ).value == "Set up from the docs."


def test_the_claude_example_uses_the_pinned_sdks_names() -> None:
    source = block_after("claude-example")
    tree = ast.parse(source)
    imported = {
        alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    assert imported == {"MemoryClient", "StrataMemoryTool"}
    assert hasattr(anthropic.Anthropic(api_key="unused").beta.messages, "tool_runner")
    compile(source, "agents.md", "exec")


async def test_the_openai_example_passes_function_definitions(grpc_client: AsyncMemoryClient) -> None:
    source = block_after("openai-example")
    compile(source, "agents.md", "exec")
    assert "json.loads(tool.json_schema) for tool in strata.list_tools().tools" in source
    for tool in (await grpc_client.list_tools()).tools:
        definition = json.loads(tool.json_schema)
        assert definition["type"] == "function"
        assert definition["function"]["name"] == tool.name
        assert definition["function"]["parameters"]["type"] == "object"
