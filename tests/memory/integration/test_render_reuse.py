"""Rendering is reused only while the store says memory is unchanged: never a stale read.

Each server keeps rendered memory keyed by the block versions it reads in the call's own transaction
(``operations/render_cache.py``). Here one server has rendered an agent's memory and prompt; the agent
is then edited through a second server over the same store (another replica), or by another
connection to the store, and the first server must show the edit at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask
from sqlalchemy import bindparam, update

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_memory.store import schema
from strata_memory.store.database import Database
from strata_memory.store.records import now_us
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub, new_agent, run_tool


@pytest.fixture
async def other_replica(store_url: str, memory_server: MemoryServer) -> AsyncIterator[Stub]:
    """A second MemoryService over the same store as ``memory_server``."""
    settings = MemorySettings(
        address="127.0.0.1:0", database_url=store_url, retrieval_address=unreachable_address()
    )
    server = await start_memory_server(settings)
    async with grpc.aio.insecure_channel(server.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)
    await server.stop(0)


async def rendered(stub: Stub, agent_id: str) -> str:
    return (await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent_id))).text


async def prompt(stub: Stub, agent_id: str) -> pb.SystemPrompt:
    return await stub.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent_id))


async def test_an_edit_through_another_replica_is_rendered_at_once(stub: Stub, other_replica: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob"))
    for _ in range(2):  # rendered, then served again from the cache
        assert "Name: Bob" in await rendered(stub, agent.id)
        assert "Name: Bob" in (await prompt(stub, agent.id)).text
    edit = json.dumps({"label": "human", "content": "Likes tea"})
    assert (await run_tool(other_replica, agent.id, "core_memory_append", edit)).ok
    assert "Name: Bob\nLikes tea" in await rendered(stub, agent.id)
    fresh = await prompt(stub, agent.id)
    assert "Name: Bob\nLikes tea" in fresh.text
    assert not fresh.stale
    await other_replica.UpdateBlock(
        api.UpdateBlockRequest(
            ref=pb.BlockRef(agent_id=agent.id, label="human"),
            block=pb.Block(value="Name: Ann"),
            update_mask=FieldMask(paths=["value"]),
        )
    )
    assert "Name: Ann" in await rendered(stub, agent.id)
    assert "Name: Ann" in (await prompt(stub, agent.id)).text


async def test_a_prompt_left_stale_by_another_replica_reads_as_stale(stub: Stub, other_replica: Stub) -> None:
    agent = await new_agent(
        stub,
        pb.Block(label="human", value="Name: Bob"),
        recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT,
    )
    await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    before = await prompt(stub, agent.id)
    assert not before.stale
    edit = json.dumps({"label": "human", "content": "Likes tea"})
    assert (await run_tool(other_replica, agent.id, "core_memory_append", edit)).ok
    after = await prompt(stub, agent.id)
    assert after.stale  # the stored prompt is kept (explicit policy), and said to be behind memory
    assert "Likes tea" not in after.text
    assert "Likes tea" in await rendered(stub, agent.id)


async def test_a_write_by_another_connection_to_the_store_is_rendered_at_once(
    stub: Stub, store_url: str
) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob"))
    block = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    assert "Name: Bob" in await rendered(stub, agent.id)
    other = Database(store_url)
    try:
        with other.writing() as conn:
            conn.execute(
                update(schema.blocks)
                .where(schema.blocks.c.id == bindparam("block_id"))
                .values(value="Name: Eve", version=schema.blocks.c.version + 1, updated_us=now_us()),
                {"block_id": block.id},
            )
    finally:
        other.close()
    assert "Name: Eve" in await rendered(stub, agent.id)
    assert (await prompt(stub, agent.id)).stale  # the stored prompt predates that write
