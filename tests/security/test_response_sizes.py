"""What was stored within the limits can be read back: responses larger than a request, and
MemoryService's channel to RetrievalService sized from the same setting as RetrievalService's limit."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from strata.client import AsyncMemoryClient
from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.limits import channel_options, outbox_batch_bytes
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.servers import ServicePair

MIB = 1024 * 1024
ANY_SIZE = [("grpc.max_receive_message_length", -1)]


@pytest.fixture
async def stack(tmp_path: Path, security_embedder: OnnxSentenceEmbedder) -> AsyncIterator[ServicePair]:
    running = ServicePair(tmp_path, security_embedder)
    await running.start()
    yield running
    await running.stop()


async def test_an_agent_whose_blocks_total_more_than_a_request_can_be_read_back(stack: ServicePair) -> None:
    """Each block fits in one request (8 MiB); together they are 9 MiB, which was refused on the way out."""
    async with grpc.aio.insecure_channel(stack.memory_address, options=ANY_SIZE) as channel:
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="big"), blocks=[]))
        for label in ("a", "b", "c"):
            await stub.CreateBlock(
                api.CreateBlockRequest(
                    agent_id=agent.id, block=pb.Block(label=label, value="x" * (3 * MIB), limit=4 * MIB)
                )
            )
        rendered = await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent.id))
        assert len(rendered.text) > 9 * MIB
        blocks = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
        assert sum(len(b.value) for b in blocks.blocks) == 9 * MIB
    async with AsyncMemoryClient(stack.memory_address) as client:  # the client takes it by default
        assert len((await client.render_memory(agent_id=agent.id)).text) > 9 * MIB


async def test_a_search_over_long_passages_is_answered(stack: ServicePair) -> None:
    """top_k 60 over passages of 30,000 CJK characters: ~5.4 MB of hits from RetrievalService, over
    gRPC's 4 MiB default that MemoryService's channel kept."""
    async with grpc.aio.insecure_channel(stack.memory_address, options=ANY_SIZE) as channel:
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="cjk")))
        passages = [pb.Passage(text=f"記憶{i} " + "漢" * 30_000) for i in range(60)]
        await stub.CreatePassages(
            api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True), timeout=600
        )
        found = await stub.SearchArchival(
            api.SearchArchivalRequest(agent_id=agent.id, query="漢", top_k=60, mode=api.SEARCH_MODE_VECTOR)
        )
        assert len(found.hits) == 60


def test_channel_sizes_and_the_outbox_budget_come_from_one_setting() -> None:
    assert channel_options(64 * MIB) == [
        ("grpc.max_send_message_length", 64 * MIB),
        ("grpc.max_receive_message_length", 64 * MIB),
    ]
    assert outbox_batch_bytes(64 * MIB) == 56 * MIB
    assert outbox_batch_bytes(1024) < 1024
