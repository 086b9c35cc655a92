"""Kept replies through real servers: GetBlock, RenderMemory and GetSystemPrompt answered from a kept
reply (keyed by stamps glanced at on the event loop, ``store/glance.py``) show every write committed
elsewhere at once: through another replica over the same store, on both backends."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf.field_mask_pb2 import FieldMask

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from tests.hermetic import unreachable_address
from tests.memory.integration.conftest import Stub, new_agent, run_tool


@pytest.fixture
async def other_replica(store_url: str, memory_server: MemoryServer) -> AsyncIterator[Stub]:
    settings = MemorySettings(
        address="127.0.0.1:0", database_url=store_url, retrieval_address=unreachable_address()
    )
    server = await start_memory_server(settings)
    async with grpc.aio.insecure_channel(server.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)
    await server.stop(0)


async def block(stub: Stub, ref: pb.BlockRef) -> pb.Block:
    return await stub.GetBlock(api.GetBlockRequest(block=ref))


async def test_a_block_written_through_another_replica_is_read_at_once(
    stub: Stub, other_replica: Stub, memory_server: MemoryServer
) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob"))
    by_label = pb.BlockRef(agent_id=agent.id, label="human")
    first = await block(stub, by_label)
    by_id = pb.BlockRef(block_id=first.id)
    for ref in (by_label, by_id, by_label, by_id):  # read in full, then answered from the kept reply
        assert await block(stub, ref) == first
    if memory_server.database.is_sqlite:
        assert memory_server.database.glances.ran >= 2
    edit = json.dumps({"label": "human", "content": "Likes tea"})
    assert (await run_tool(other_replica, agent.id, "core_memory_append", edit)).ok
    for ref in (by_label, by_id):
        now = await block(stub, ref)
        assert now.value == "Name: Bob\nLikes tea"
        assert (now.version, now.etag) == (first.version + 1, (await block(other_replica, ref)).etag)
    await other_replica.UpdateBlock(
        api.UpdateBlockRequest(
            ref=by_label,
            block=pb.Block(description="About Bob"),
            update_mask=FieldMask(paths=["description"]),
        )
    )
    assert (await block(stub, by_id)).description == "About Bob"


async def test_a_label_given_to_another_block_reads_that_block(stub: Stub, other_replica: Stub) -> None:
    agent = await new_agent(stub, pb.Block(label="human", value="Name: Bob"))
    ref = pb.BlockRef(agent_id=agent.id, label="human")
    old = await block(stub, ref)
    assert await block(stub, ref) == old
    await other_replica.DeleteBlock(api.DeleteBlockRequest(block=ref))
    await other_replica.CreateBlock(
        api.CreateBlockRequest(agent_id=agent.id, block=pb.Block(label="human", value="Name: Ann"))
    )
    new = await block(stub, ref)
    assert (new.id, new.value) != (old.id, old.value)
    assert new.value == "Name: Ann"


async def test_a_prompt_reply_follows_messages_and_recompiles_elsewhere(
    stub: Stub, other_replica: Stub
) -> None:
    agent = await new_agent(
        stub, pb.Block(label="human", value="Name: Bob"), recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT
    )
    await stub.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    ask = api.GetSystemPromptRequest(agent_id=agent.id)
    before = await stub.GetSystemPrompt(ask)
    assert await stub.GetSystemPrompt(ask) == before
    assert not before.stale
    await other_replica.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id, messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="hi")]
        )
    )
    assert (await stub.GetSystemPrompt(ask)).stale  # a message more than the stored prompt counts
    await other_replica.RecompileSystemPrompt(api.RecompileSystemPromptRequest(agent_id=agent.id))
    after = await stub.GetSystemPrompt(ask)
    assert not after.stale
    assert "1 previous messages" in after.text
    assert after.receipt.id != before.receipt.id
