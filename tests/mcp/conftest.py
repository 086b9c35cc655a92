"""Real servers for the MCP tests: MemoryService with API keys on (and the shared RetrievalService)
on a background event loop, ``strata mcp`` over streamable HTTP on a free port, and tenants made
with the admin key, each with its own key and agent."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import uvicorn

from strata.client import AdminClient, AsyncMemoryClient
from strata.mcp.options import McpOptions
from strata.mcp.server import http_app
from strata_memory.main import start_memory_server
from tests.client.conftest import retrieval_target, server_loop, shared_pair  # noqa: F401  (fixtures)
from tests.mcp.sessions import HttpServer, LoopRunner, Open, Tenant, opener
from tests.memory_process import free_port
from tests.security.conftest import ADMIN_KEY
from tests.servers import ServicePair


@pytest.fixture(scope="session")
def memory_target(
    server_loop: LoopRunner,  # noqa: F811  (the fixture imported above)
    retrieval_target: str,  # noqa: F811
    shared_pair: ServicePair,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[str]:
    """MemoryService with API keys required (STRATA_MEMORY_AUTH_ENABLED), indexing into the shared
    RetrievalService (a second MemoryService beside the shared pair's)."""
    database: Path = tmp_path_factory.mktemp("mcp-memory") / "memory.sqlite3"
    settings = shared_pair.memory_config(
        database_url=f"sqlite:///{database}", auth_enabled=True, admin_api_key=ADMIN_KEY
    )
    server = server_loop.run(start_memory_server(settings))
    yield server.address
    server_loop.run(server.stop(0))


def make_tenant(target: str) -> Tenant:
    """A new tenant: an API key made with the admin key, and an agent created with that key."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    with AdminClient(target, api_key=ADMIN_KEY, timeout=10) as admin:
        key = admin.create_api_key(tenant_id=name, display_name="mcp test").secret
    agent_id = asyncio.run(_new_agent(target, key))
    return Tenant(name, key, agent_id)


async def _new_agent(target: str, key: str) -> str:
    async with AsyncMemoryClient(target, api_key=key, timeout=10) as client:
        return (await client.create_agent()).id


@pytest.fixture
def tenant(memory_target: str) -> Tenant:
    return make_tenant(memory_target)


@pytest.fixture
def other_tenant(memory_target: str) -> Tenant:
    return make_tenant(memory_target)


@pytest.fixture
async def grpc_client(memory_target: str, tenant: Tenant) -> AsyncIterator[AsyncMemoryClient]:
    """A direct gRPC client of the tenant: what the MCP calls are compared with."""
    async with AsyncMemoryClient(memory_target, api_key=tenant.key, timeout=10) as opened:
        yield opened


@pytest.fixture(scope="session")
def mcp_http(server_loop: LoopRunner, memory_target: str) -> Iterator[HttpServer]:  # noqa: F811
    """``strata mcp --transport http`` (per-call agents) on a free loopback port."""
    port = free_port()
    app, pool = http_app(McpOptions(target=memory_target, timeout=10), host="127.0.0.1", port=port)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def start() -> asyncio.Task[None]:
        task = asyncio.create_task(server.serve())
        while not server.started:
            if task.done():
                task.result()
            await asyncio.sleep(0.02)
        return task

    task = server_loop.run(start())
    yield HttpServer(f"http://127.0.0.1:{port}/mcp", port)
    server.should_exit = True
    server_loop.run(asyncio.wait_for(task, 30))
    server_loop.run(pool.close())


@pytest.fixture(params=["stdio", "http"])
def open_session(request: pytest.FixtureRequest, memory_target: str, mcp_http: HttpServer) -> Open:
    """Opens an MCP session as a tenant's key, over stdio (spawning ``strata mcp``) or HTTP."""
    transport: str = request.param
    return opener(transport, memory_target, mcp_http)
