"""``strata mcp``: an MCP server (the official SDK's low-level ``Server``) in front of MemoryService.

The tools and resources are those of :mod:`strata.mcp.tools` and :mod:`strata.mcp.resources`; each
request reaches MemoryService through the public gRPC API with the caller's key
(:mod:`strata.mcp.access`). Two transports:

- **stdio** (:func:`serve_stdio`) for desktop hosts: one caller, the key from ``STRATA_API_KEY``.
- **streamable HTTP** (:func:`http_app`, :func:`serve_http`) for remote and multi-user hosts: every
  request's bearer token is its caller's key. By default the server binds to loopback and accepts
  only loopback ``Host`` and ``Origin`` headers (the MCP specification's guard against DNS
  rebinding); request bodies above ``max_request_bytes`` (MemoryService's own request limit,
  8 MiB) are refused with 413.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.types import ASGIApp

from strata.client import AsyncMemoryClient, StrataClientError
from strata.mcp import resources, tools
from strata.mcp.access import BearerGate, ClientPool, request_key
from strata.mcp.options import MAX_REQUEST_BYTES, McpOptions

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MCP_PATH = "/mcp"


class Handlers:
    """The MCP request handlers: each asks MemoryService as the request's caller."""

    def __init__(self, options: McpOptions, pool: ClientPool) -> None:
        self.options = options
        self.pool = pool

    def client(self, ctx: ServerRequestContext[Any]) -> AsyncMemoryClient:
        return self.pool.client(request_key(ctx.request, self.options.api_key))

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        try:
            served = (await self.client(ctx).list_tools()).tools
        except StrataClientError as error:
            raise resources.service_error(error) from None
        return types.ListToolsResult(tools=tools.memory_tools(served, fixed_agent=self.options.agent))

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        etag = (params.meta or {}).get(tools.ETAG_META, "")
        if not isinstance(etag, str):
            return tools.failure(f"{tools.ETAG_META} in _meta must be a string.", "INVALID_ARGUMENT")
        return await tools.call_tool(
            self.client(ctx), params.name, params.arguments or {}, fixed_agent=self.options.agent, etag=etag
        )

    async def list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params else None
        return await resources.list_resources(self.client(ctx), fixed_agent=self.options.agent, cursor=cursor)

    async def list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=resources.templates())

    async def read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await resources.read_resource(
            self.client(ctx), str(params.uri), fixed_agent=self.options.agent
        )


def build_server(options: McpOptions, pool: ClientPool) -> Server[Any]:
    """The low-level MCP server with :class:`Handlers` for tools and resources."""
    handlers = Handlers(options, pool)
    return Server(
        "strata",
        version="0.1.0",
        instructions="Strata memory: the memory tools edit the agent's core memory blocks "
        "(budgets, read-only blocks and etags enforced by MemoryService); archival_memory_search "
        "and conversation_search search long-term memory and past messages.",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_templates,
        on_read_resource=handlers.read_resource,
    )


def client_pool(options: McpOptions, *, with_tenant: bool) -> ClientPool:
    """Clients of ``options.target``; ``with_tenant`` sends ``options.tenant`` (stdio only)."""

    def open_client(key: str | None) -> AsyncMemoryClient:
        return AsyncMemoryClient(
            options.target,
            tenant=options.tenant if with_tenant else None,
            timeout=options.timeout,
            api_key=key or "",
            options=options.client_options,
        )

    return ClientPool(open_client)


async def serve_stdio(options: McpOptions) -> None:
    """Serve one host over stdin/stdout until it closes them."""
    pool = client_pool(options, with_tenant=True)
    server = build_server(options, pool)
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await pool.close()


def transport_security(host: str, port: int, allowed_origins: Sequence[str]) -> TransportSecuritySettings:
    """Accept ``Host`` headers naming this server and ``Origin`` headers of loopback or as allowed."""
    hosts = [f"{name}:{port}" for name in ("127.0.0.1", "localhost", "[::1]")]
    if host not in LOOPBACK_HOSTS and host not in ("0.0.0.0", "::"):  # noqa: S104 (a name, not a bind)
        hosts.append(f"{host}:{port}")
    origins = [f"http://{name}:*" for name in ("127.0.0.1", "localhost", "[::1]")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts + [h for h in allowed_origins if "://" not in h],
        allowed_origins=origins + [o for o in allowed_origins if "://" in o],
    )


def http_app(
    options: McpOptions,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    allowed_origins: Sequence[str] = (),
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> tuple[ASGIApp, ClientPool]:
    """The streamable-HTTP app at ``/mcp`` behind the bearer gate, and its client pool to close."""
    pool = client_pool(options, with_tenant=False)
    server = build_server(options, pool)
    app: Starlette = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(host, port, allowed_origins),
        max_request_body_size=max_request_bytes,
        host=host,
    )
    return BearerGate(app, pool), pool


class KeysNotChecked(Exception):
    """MemoryService serves calls whatever key they carry: over HTTP all callers would share a tenant."""


PROBE_KEY = "sk_strata-mcp-probe_not-a-key"


async def require_key_checks(options: McpOptions) -> None:
    """Refuse to serve HTTP in front of a MemoryService that accepts any key (keys off): the bearer
    token is the only identity the HTTP server knows, so every caller would act as one tenant.
    A MemoryService that cannot be reached now is not refused (callers get 503 until it can)."""
    async with AsyncMemoryClient(options.target, timeout=options.timeout, api_key=PROBE_KEY) as client:
        try:
            await client.list_tools()
        except StrataClientError:
            return
    raise KeysNotChecked(
        f"MemoryService at {options.target} accepted a made-up API key: it runs without keys "
        "(STRATA_MEMORY_AUTH_ENABLED is off), so over HTTP every caller would share one tenant. "
        "Turn keys on, or serve one user over stdio."
    )


@asynccontextmanager
async def _closing(pool: ClientPool) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await pool.close()


async def serve_http(
    options: McpOptions,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    allowed_origins: Sequence[str] = (),
    max_request_bytes: int = MAX_REQUEST_BYTES,
) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp`` until interrupted (after
    :func:`require_key_checks`)."""
    await require_key_checks(options)
    app, pool = http_app(
        options, host=host, port=port, allowed_origins=allowed_origins, max_request_bytes=max_request_bytes
    )
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    async with _closing(pool):
        await uvicorn.Server(config).serve()
