"""A real MemoryService on a free port over each store backend (SQLite, PostgreSQL), and a stub to call it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_serving.status import error_info_from
from tests.hermetic import unreachable_address
from tests.store_backends import postgres_schema, store_url

if TYPE_CHECKING:  # mypy-protobuf types the stub built on an aio channel as the async stub
    Stub = memory_service_pb2_grpc.MemoryServiceAsyncStub
else:
    Stub = memory_service_pb2_grpc.MemoryServiceStub

__all__ = ["postgres_schema", "store_url"]  # fixtures this suite's tests use through memory_server


@pytest.fixture
async def memory_server(store_url: str) -> AsyncIterator[MemoryServer]:
    settings = MemorySettings(
        address="127.0.0.1:0", database_url=store_url, retrieval_address=unreachable_address()
    )
    server = await start_memory_server(settings)
    yield server
    await server.stop(0)


@pytest.fixture
async def stub(memory_server: MemoryServer) -> AsyncIterator[Stub]:
    async with grpc.aio.insecure_channel(memory_server.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)


async def expect_error(
    call: Awaitable[Any], code: grpc.StatusCode, reason: str | None = None
) -> grpc.aio.AioRpcError:
    """Await a call that must fail with ``code`` (and ``reason`` in its ErrorInfo, when given)."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    error = caught.value
    assert error.code() == code, f"{error.code()}: {error.details()}"
    if reason is not None:
        info = error_info_from(error.trailing_metadata())
        assert info is not None, "no ErrorInfo attached"
        assert info.reason == reason
    return error


async def new_agent(stub: Stub, *blocks: pb.Block, **fields: Any) -> pb.Agent:
    return await stub.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="sam", **fields), blocks=list(blocks))
    )


async def run_tool(
    stub: Stub, agent_id: str, name: str, arguments: str, **extra: Any
) -> api.ExecuteToolResponse:
    return await stub.ExecuteTool(
        api.ExecuteToolRequest(agent_id=agent_id, tool_name=name, arguments=arguments, **extra)
    )


async def block_value(stub: Stub, agent_id: str, label: str) -> str:
    block = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent_id, label=label)))
    return block.value
