"""MCP client sessions made with the SDK's own client: over stdio (spawning ``strata mcp``) and over
streamable HTTP with a bearer key; and the tenants and HTTP server the tests open them for."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

T = TypeVar("T")


class LoopRunner(Protocol):
    """The shared servers' background event loop (``server_loop``): runs a coroutine there."""

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float = ...) -> T: ...


@dataclass(frozen=True)
class Tenant:
    """A tenant of one test: its API key and one agent of its own."""

    name: str
    key: str
    agent_id: str


@dataclass(frozen=True)
class HttpServer:
    """``strata mcp --transport http`` running for the tests."""

    url: str
    port: int


STRATA = str(Path(sys.executable).parent / "strata")
"""The ``strata`` console script of this environment."""


@asynccontextmanager
async def stdio_session(target: str, key: str, agent: str = "") -> AsyncIterator[ClientSession]:
    """``strata --target T mcp [--agent A]`` spawned with ``STRATA_API_KEY=key``; an initialized session."""
    args = ["--target", target, "--timeout", "10", "mcp", *(["--agent", agent] if agent else [])]
    env = {"STRATA_API_KEY": key}
    if "PYTHONPATH" in os.environ:  # the child imports what the test imports
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    parameters = StdioServerParameters(command=STRATA, args=args, env=env)
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, key: str) -> AsyncIterator[ClientSession]:
    """A session with ``strata mcp --transport http`` sending ``Authorization: Bearer key``."""
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


Open = Callable[[Tenant], AbstractAsyncContextManager[ClientSession]]
"""Opens a session acting as the tenant's key."""


def opener(transport: str, memory_target: str, mcp_http: HttpServer) -> Open:
    """stdio: ``strata mcp`` spawned with the tenant's key (agents chosen per call, like the HTTP
    server); http: the shared server with the tenant's key as bearer."""

    @asynccontextmanager
    async def open_session(tenant: Tenant) -> AsyncIterator[ClientSession]:
        if transport == "stdio":
            async with stdio_session(memory_target, tenant.key) as session:
                yield session
        else:
            async with http_session(mcp_http.url, tenant.key) as session:
                yield session

    return open_session
