"""The MCP resources: an agent's rendered memory, its compiled system prompt and each of its blocks.

    strata://agents/{agent_id}/memory          core memory as rendered into the prompt (RenderMemory)
    strata://agents/{agent_id}/system-prompt   the stored compiled prompt (GetSystemPrompt); _meta
                                               says whether memory changed since it was compiled
    strata://agents/{agent_id}/blocks/{label}  one block's value (GetBlock); labels keep their "/"

Every read asks MemoryService afresh, so a resource shows edits made by any client. Reading another
tenant's agent fails as MemoryService fails it (NOT_FOUND): the resource read is a protocol error,
the only failure the protocol has for it, carrying the service's message and reason.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.shared.exceptions import MCPError

from strata.client import AsyncMemoryClient, NotFoundError, StrataClientError
from strata.memory.v1 import resources_pb2 as pb

SCHEME = "strata://agents/"
AGENTS_PER_PAGE = 20
"""Agents whose resources one ``resources/list`` page names (a server not fixed to one agent)."""
RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error code the MCP specification gives an unknown resource."""
INTERNAL_ERROR = -32603


def memory_uri(agent_id: str) -> str:
    return f"{SCHEME}{quote(agent_id, safe='')}/memory"


def prompt_uri(agent_id: str) -> str:
    return f"{SCHEME}{quote(agent_id, safe='')}/system-prompt"


def block_uri(agent_id: str, label: str) -> str:
    return f"{SCHEME}{quote(agent_id, safe='')}/blocks/{quote(label, safe='/')}"


def parse_uri(uri: str) -> tuple[str, str, str]:
    """``(agent_id, kind, label)`` of a resource URI; kind is memory, system-prompt or blocks."""
    if not uri.startswith(SCHEME):
        raise MCPError(RESOURCE_NOT_FOUND, f"unknown resource {uri!r}: Strata's resources start {SCHEME}")
    agent, _, rest = uri.removeprefix(SCHEME).partition("/")
    kind, _, label = rest.partition("/")
    if not agent or kind not in ("memory", "system-prompt", "blocks") or (kind == "blocks") != bool(label):
        raise MCPError(
            RESOURCE_NOT_FOUND,
            f"unknown resource {uri!r}: expected {SCHEME}AGENT/memory, {SCHEME}AGENT/system-prompt "
            f"or {SCHEME}AGENT/blocks/LABEL",
        )
    return unquote(agent), kind, unquote(label)


def templates() -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            name="memory",
            uri_template=SCHEME + "{agent_id}/memory",
            description="The agent's core memory as rendered into its prompt.",
            mime_type="text/plain",
        ),
        types.ResourceTemplate(
            name="system-prompt",
            uri_template=SCHEME + "{agent_id}/system-prompt",
            description="The agent's compiled system prompt, as stored.",
            mime_type="text/plain",
        ),
        types.ResourceTemplate(
            name="block",
            uri_template=SCHEME + "{agent_id}/blocks/{label}",
            description="One memory block's value.",
            mime_type="text/plain",
        ),
    ]


async def list_resources(
    client: AsyncMemoryClient, *, fixed_agent: str, cursor: str | None
) -> types.ListResourcesResult:
    """The fixed agent's resources, or a page of the tenant's agents' (the cursor is ListAgents')."""
    try:
        if fixed_agent:
            agents, next_cursor = [await client.get_agent(agent_id=fixed_agent)], None
        else:
            page = await client.list_agents(page_size=AGENTS_PER_PAGE, page_token=cursor or "")
            agents, next_cursor = list(page.agents), page.next_page_token or None
        resources = []
        for agent in agents:
            resources.extend(await _agent_resources(client, agent))
    except StrataClientError as error:
        raise service_error(error) from None
    return types.ListResourcesResult(resources=resources, next_cursor=next_cursor)


async def _agent_resources(client: AsyncMemoryClient, agent: pb.Agent) -> list[types.Resource]:
    name = agent.name or agent.id
    found = [
        types.Resource(
            name=f"{name}: memory",
            uri=memory_uri(agent.id),
            mime_type="text/plain",
            description=f"Core memory of agent {agent.id} as rendered into its prompt.",
        ),
        types.Resource(
            name=f"{name}: system prompt",
            uri=prompt_uri(agent.id),
            mime_type="text/plain",
            description=f"The compiled system prompt of agent {agent.id}.",
        ),
    ]
    found.extend(
        [
            types.Resource(
                name=f"{name}: {block.label}",
                uri=block_uri(agent.id, block.label),
                mime_type="text/plain",
                description=block.description or None,
                size=len(block.value.encode()),
            )
            async for block in client.iter_blocks(agent_id=agent.id)
        ]
    )
    return found


async def read_resource(client: AsyncMemoryClient, uri: str, *, fixed_agent: str) -> types.ReadResourceResult:
    """Read one resource now, as the client's caller."""
    agent_id, kind, label = parse_uri(uri)
    if fixed_agent and agent_id != fixed_agent:
        raise MCPError(RESOURCE_NOT_FOUND, f"this server serves agent {fixed_agent} only, not {agent_id}")
    meta: dict[str, Any] | None = None
    try:
        if kind == "memory":
            text = (await client.render_memory(agent_id=agent_id)).text
        elif kind == "system-prompt":
            prompt = await client.get_system_prompt(agent_id=agent_id)
            text, meta = prompt.text, {"stale": prompt.stale}
        else:
            block = await client.get_block(agent_id=agent_id, label=label)
            text, meta = block.value, {"etag": block.etag, "version": block.version}
    except StrataClientError as error:
        raise service_error(error) from None
    contents = types.TextResourceContents(uri=uri, mime_type="text/plain", text=text, meta=meta)
    return types.ReadResourceResult(contents=[contents])


def service_error(error: StrataClientError) -> MCPError:
    """A failed MemoryService call as a protocol error with its status, message and reason."""
    code = RESOURCE_NOT_FOUND if isinstance(error, NotFoundError) else INTERNAL_ERROR
    reason = f" (reason: {error.reason})" if error.reason else ""
    data = {"status": error.code.name, "reason": error.reason}
    return MCPError(code, f"{error.code.name}: {error.message}{reason}", data)
