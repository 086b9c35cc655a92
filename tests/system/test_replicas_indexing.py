"""Three MemoryService processes on one PostgreSQL database index into one RetrievalService: messages
appended through all of them, one replica killed with ``kill -9`` mid-burst, and the index ends up
holding exactly the messages the store holds (the dead replica's leased jobs are taken over).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.memory_process import MemoryProcess
from tests.servers import ServicePair
from tests.store_backends import postgres_schema

__all__ = ["postgres_schema"]
pytestmark = pytest.mark.slow


async def stored_messages(stub: MemoryStub, agent_id: str) -> list[str]:
    listed = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent_id, page_size=1000))
    return [message.id for message in listed.messages]


async def indexed_messages(retrieval: RetrievalStub) -> int:
    stats = await retrieval.Stats(rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id="default")))
    return int(stats.message_count)


@pytest.mark.timeout(300)
async def test_kill_9_of_a_replica_mid_burst_leaves_every_stored_message_indexed_once(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder, postgres_schema: str
) -> None:
    pair = ServicePair(tmp_path, system_embedder)
    await pair.start_retrieval()
    replicas = [
        MemoryProcess(
            postgres_schema,
            retrieval_address=pair.retrieval_address,
            outbox_lease_seconds="2",
            outbox_max_backoff_seconds="0.5",
        )
        for _ in range(3)
    ]
    channels = [grpc.aio.insecure_channel(replica.address) for replica in replicas]
    retrieval_channel = grpc.aio.insecure_channel(pair.retrieval_address)
    try:
        for replica in replicas:
            await replica.wait_serving()
        stubs = [memory_service_pb2_grpc.MemoryServiceStub(channel) for channel in channels]
        retrieval = retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel)
        agent = await stubs[1].CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="indexed")))
        acknowledged = 0
        failed_on_live: list[str] = []

        async def one(i: int) -> None:
            nonlocal acknowledged
            message = pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"I walked {i} miles by the river")
            try:
                await stubs[i % 3].AppendMessages(
                    api.AppendMessagesRequest(agent_id=agent.id, messages=[message]), timeout=60
                )
            except grpc.aio.AioRpcError as error:  # only the killed replica may fail a call
                failed_on_live.extend([] if i % 3 == 0 else [f"{i}: {error.code()}"])
                return
            acknowledged += 1
            if acknowledged == 15:
                replicas[0].kill()

        await asyncio.gather(*(one(i) for i in range(60)))
        assert failed_on_live == []
        stored = await stored_messages(stubs[1], agent.id)
        assert len(stored) == len(set(stored)) >= acknowledged >= 40
        for _ in range(600):  # the outbox catches up; a lease of the dead replica expires after 2 s
            if await indexed_messages(retrieval) >= len(stored):
                break
            await asyncio.sleep(0.2)
        assert await indexed_messages(retrieval) == len(stored)
    finally:
        for channel in (*channels, retrieval_channel):
            await channel.close(None)
        for replica in replicas:
            replica.kill()
        await pair.stop_retrieval()
