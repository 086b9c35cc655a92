"""The MCP tools: MemoryService's memory tools exactly as ``ListTools`` serves them, plus two readers.

Names, descriptions and parameter schemas come from ``ListTools`` on every ``tools/list``; nothing
here repeats them. When the server is not fixed to one agent, each tool gains a required
``agent_id`` parameter naming the agent of the call (the one change made to a served schema), and
``list_agents`` names the tenant's agents. ``read_memory`` returns the agent's rendered core memory.
Search over archival memory and recall is the served ``archival_memory_search`` and
``conversation_search``.

A call may carry ``_meta: {"strata/etag": ETAG}``: the edit then applies only if the block it edits
is still in that state (``ExecuteTool``'s etag). A successful edit returns the block's new etag and
label in the result's ``_meta`` (``strata/etag``, ``strata/label``), so a host can chain conditional
edits.

A call runs as ``ExecuteTool`` (or ``RenderMemory`` / ``ListAgents``) with the caller's key. Every
failure is a tool result with ``is_error`` set whose text is the service's message and reason, never a
protocol error: a tool's own refusal (budget, read-only block) as ``ExecuteTool`` returned it, a failed
call (stale etag, unknown agent, another tenant's agent) as the gRPC status, message and reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from strata.client import AsyncMemoryClient, StrataClientError
from strata.memory.v1 import resources_pb2 as pb

AGENT_ARGUMENT = "agent_id"
ETAG_META = "strata/etag"
LABEL_META = "strata/label"
REASON_META = "strata/reason"
READ_MEMORY = "read_memory"
LIST_AGENTS = "list_agents"
LIST_AGENTS_PAGE = 100
"""Agents ``list_agents`` returns per call (its ``page_token`` continues)."""

_AGENT_PROPERTY = {
    "type": "string",
    "description": "The agent whose memory this call uses ('agent-…'; list_agents names them).",
}


def served_parameters(tool: pb.Tool) -> dict[str, Any]:
    """The JSON schema of a served tool's parameters (``function.parameters`` of its definition)."""
    definition = json.loads(tool.json_schema)
    parameters: dict[str, Any] = definition["function"]["parameters"]
    return parameters


def with_agent(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` with a required ``agent_id`` first (for a server not fixed to one agent)."""
    properties = {AGENT_ARGUMENT: dict(_AGENT_PROPERTY), **parameters.get("properties", {})}
    required = [AGENT_ARGUMENT, *parameters.get("required", [])]
    return {**parameters, "properties": properties, "required": required}


def memory_tools(served: Sequence[pb.Tool], *, fixed_agent: str) -> list[types.Tool]:
    """The MCP definitions of the served tools, then ``read_memory`` (and ``list_agents``)."""
    tools = []
    for tool in served:
        parameters = served_parameters(tool)
        schema = parameters if fixed_agent else with_agent(parameters)
        tools.append(types.Tool(name=tool.name, description=tool.description, input_schema=schema))
    tools.append(_read_memory_tool(fixed_agent))
    if not fixed_agent:
        tools.append(_list_agents_tool())
    return tools


def _read_memory_tool(fixed_agent: str) -> types.Tool:
    parameters: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    return types.Tool(
        name=READ_MEMORY,
        description="Read the agent's core memory as it is rendered into its prompt: every block with "
        "its label, description, size and limit, and the line numbers the edit tools must not copy.",
        input_schema=parameters if fixed_agent else with_agent(parameters),
        annotations=types.ToolAnnotations(read_only_hint=True),
    )


def _list_agents_tool() -> types.Tool:
    schema = {
        "type": "object",
        "properties": {
            "page_token": {"type": "string", "description": "From the previous call, for the next page."}
        },
        "required": [],
    }
    return types.Tool(
        name=LIST_AGENTS,
        description=f"List the agents of your tenant (id and name), {LIST_AGENTS_PAGE} per call; pass "
        "an agent's id as agent_id to the memory tools.",
        input_schema=schema,
        annotations=types.ToolAnnotations(read_only_hint=True),
    )


async def call_tool(
    client: AsyncMemoryClient,
    name: str,
    arguments: Mapping[str, Any],
    *,
    fixed_agent: str,
    etag: str = "",
) -> types.CallToolResult:
    """Run one tool call as the client's caller; any failure is an ``is_error`` result."""
    try:
        if name == LIST_AGENTS and not fixed_agent:
            return await _list_agents(client, arguments)
        arguments = dict(arguments)
        agent_id = fixed_agent or arguments.pop(AGENT_ARGUMENT, None)
        if not isinstance(agent_id, str) or not agent_id:
            return failure(
                f"{name}: {AGENT_ARGUMENT} is required: the agent whose memory to use "
                f"(the {LIST_AGENTS} tool names them).",
                "INVALID_TOOL_ARGUMENTS",
            )
        if name == READ_MEMORY:
            rendered = await client.render_memory(agent_id=agent_id)
            return success(rendered.text)
        result = await client.execute_tool(agent_id=agent_id, tool_name=name, arguments=arguments, etag=etag)
    except StrataClientError as error:
        return failure(f"{error.code.name}: {error.message}", error.reason)
    if not result.ok:
        return failure(result.text, result.reason)
    edited = result.HasField("block")
    meta = {ETAG_META: result.block.etag, LABEL_META: result.block.label} if edited else None
    return success(result.text, meta)


async def _list_agents(client: AsyncMemoryClient, arguments: Mapping[str, Any]) -> types.CallToolResult:
    token = arguments.get("page_token") or ""
    if not isinstance(token, str):
        return failure("list_agents: page_token must be a string.", "INVALID_TOOL_ARGUMENTS")
    page = await client.list_agents(page_size=LIST_AGENTS_PAGE, page_token=token)
    lines = [f"{agent.id}\t{agent.name}" for agent in page.agents] or ["(no agents)"]
    if page.next_page_token:
        lines.append(f"More agents: call list_agents with page_token='{page.next_page_token}'.")
    return success("\n".join(lines))


def success(text: str, meta: dict[str, Any] | None = None) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=False, meta=meta)


def failure(message: str, reason: str) -> types.CallToolResult:
    """A tool error: the service's message, then its machine-readable reason (also in ``_meta``)."""
    text = f"{message} (reason: {reason})" if reason else message
    meta = {REASON_META: reason} if reason else None
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True, meta=meta)
