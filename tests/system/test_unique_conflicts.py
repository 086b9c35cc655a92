"""Concurrent creations of one name through three MemoryService replicas on one PostgreSQL database
answer only OK (once) or ALREADY_EXISTS: the loser of a unique-key race re-runs its transaction,
whose checks then see the winner's row (``store/failures.py``). Without that re-run most of them
were INTERNAL (issue 25: 47 of 60 concurrent CreateConversation calls)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import grpc
import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from tests.hermetic import unreachable_address
from tests.store_backends import postgres_schema

__all__ = ["postgres_schema"]
CALLS = 60


@pytest.fixture
async def replicas(postgres_schema: str, tmp_path: Path) -> AsyncIterator[list[MemoryStub]]:
    """Three MemoryService servers (each its own connection pool) on one PostgreSQL schema."""
    servers = [
        await start_memory_server(
            MemorySettings(
                address="127.0.0.1:0", database_url=postgres_schema, retrieval_address=unreachable_address()
            )
        )
        for _ in range(3)
    ]
    channels = [grpc.aio.insecure_channel(server.address) for server in servers]
    try:
        yield [memory_service_pb2_grpc.MemoryServiceStub(channel) for channel in channels]
    finally:
        for channel in channels:
            await channel.close(None)
        for server in servers:
            await server.stop(0)


async def race(stubs: list[MemoryStub], call: Callable[[MemoryStub], Awaitable[object]]) -> Counter[str]:
    """``CALLS`` calls at once, spread round robin over the replicas: how many answered each code."""

    async def one(stub: MemoryStub) -> str:
        try:
            await call(stub)
        except grpc.aio.AioRpcError as error:
            return (
                f"{error.code().name}: {error.details()}"
                if error.code() is not grpc.StatusCode.ALREADY_EXISTS
                else "ALREADY_EXISTS"
            )
        return "OK"

    answers = await asyncio.gather(*(one(stubs[i % len(stubs)]) for i in range(CALLS)))
    return Counter(answers)


async def test_one_conversation_id_created_at_once_everywhere_is_ok_once(replicas: list[MemoryStub]) -> None:
    agent = await replicas[0].CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="racer")))
    request = api.CreateConversationRequest(agent_id=agent.id, conversation_id="the-one")

    answers = await race(replicas, lambda stub: stub.CreateConversation(request, timeout=30))

    assert answers == Counter({"OK": 1, "ALREADY_EXISTS": CALLS - 1})


async def test_one_block_label_created_at_once_everywhere_is_ok_once(replicas: list[MemoryStub]) -> None:
    agent = await replicas[0].CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="racer")))
    request = api.CreateBlockRequest(block=pb.Block(label="race/notes", value="v"), agent_id=agent.id)

    answers = await race(replicas, lambda stub: stub.CreateBlock(request, timeout=30))

    assert answers == Counter({"OK": 1, "ALREADY_EXISTS": CALLS - 1})
    listed = await replicas[1].ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    assert [block.label for block in listed.blocks].count("race/notes") == 1
