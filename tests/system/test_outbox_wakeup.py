"""A MemoryService replica on PostgreSQL is woken by the jobs another replica commits (LISTEN/NOTIFY)
instead of finding them at its next poll, and stopping such a replica never hangs on its listener.

The other replica is the real write path (``operations.messages.Messages``) over its own connection
pool on the same schema, with no worker of its own to wake: what a replica does when it writes while
its own worker is busy or gone. The replica under test polls every 30 s, so a delivery within a few
seconds can only come from the notice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.operations.messages import Messages
from strata_memory.settings import MemorySettings
from strata_memory.store import index_jobs
from strata_memory.store.database import Database
from strata_memory.store.records import DEFAULT_CONVERSATION, MessageRecord
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.hermetic import unreachable_address
from tests.servers import ServicePair
from tests.store_backends import postgres_schema

__all__ = ["postgres_schema"]
pytestmark = pytest.mark.slow
POLL_SECONDS = 30.0
WELL_BEFORE_THE_POLL_SECONDS = 10.0
STOP_CYCLES = 20
STOP_WITHIN_SECONDS = 15.0  # a hang detector: a stop takes well under a second


class NoWorkerHere:
    """The writing replica's index queue: it has no worker of its own to wake."""

    def notify(self) -> None:
        pass

    async def wait_delivered(self, job_ids: Sequence[int], within: float | None) -> bool:
        return False


async def replica(url: str, retrieval_address: str) -> MemoryServer:
    return await start_memory_server(
        MemorySettings(
            address="127.0.0.1:0",
            database_url=url,
            retrieval_address=retrieval_address,
            outbox_idle_poll_seconds=POLL_SECONDS,
        )
    )


@pytest.mark.timeout(180)
async def test_a_job_another_replica_commits_is_delivered_long_before_the_next_poll(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder, postgres_schema: str
) -> None:
    pair = ServicePair(tmp_path, system_embedder)
    await pair.start_retrieval()
    server = await replica(postgres_schema, pair.retrieval_address)
    elsewhere = Database(postgres_schema)
    loop = asyncio.get_running_loop()
    try:
        async with (
            grpc.aio.insecure_channel(server.address) as memory_channel,
            grpc.aio.insecure_channel(pair.retrieval_address) as retrieval_channel,
        ):
            memory = memory_service_pb2_grpc.MemoryServiceStub(memory_channel)
            retrieval = retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel)
            agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="woken")))
            message = MessageRecord("", "", "", "", role="user", content="I planted tomatoes today")
            written = await Messages(elsewhere, NoWorkerHere()).append(
                agent.tenant_id, agent.id, DEFAULT_CONVERSATION, [message]
            )
            committed = loop.time()
            counted = rpb.StatsRequest(
                filter=rpb.DocumentFilter(tenant_id=agent.tenant_id, agent_ids=[agent.id])
            )

            async def delivered() -> bool:
                searchable = (await retrieval.Stats(counted)).message_count == 1
                return searchable and not await elsewhere.read(
                    lambda conn: index_jobs.pending(conn, written.job_ids)
                )

            while not await delivered():
                waited = loop.time() - committed
                assert waited < WELL_BEFORE_THE_POLL_SECONDS, (
                    f"not delivered {waited:.0f} s after another replica committed it "
                    f"(this replica polls every {POLL_SECONDS:.0f} s)"
                )
                await asyncio.sleep(0.05)
    finally:
        await server.stop(0)
        elsewhere.close()
        await pair.stop_retrieval()


@pytest.mark.timeout(STOP_CYCLES * STOP_WITHIN_SECONDS + 60)
async def test_a_postgresql_backed_replica_stops_every_time(postgres_schema: str) -> None:
    """Stopped right after starting, while listening, and with a notice arriving: never hangs."""
    elsewhere = Database(postgres_schema)
    writer = Messages(elsewhere, NoWorkerHere())
    try:
        for cycle in range(STOP_CYCLES):
            server = await replica(postgres_schema, unreachable_address())
            if cycle % 3:
                await asyncio.wait_for(server.notices.listening.wait(), timeout=STOP_WITHIN_SECONDS)
            if cycle % 3 == 2:
                async with grpc.aio.insecure_channel(server.address) as channel:
                    stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
                    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=f"c{cycle}")))
                message = MessageRecord("", "", "", "", role="user", content=f"cycle {cycle}")
                await writer.append(agent.tenant_id, agent.id, DEFAULT_CONVERSATION, [message])
            try:
                await asyncio.wait_for(server.stop(0), timeout=STOP_WITHIN_SECONDS)
            except TimeoutError:
                pytest.fail(
                    f"stop {cycle + 1} of {STOP_CYCLES} did not finish within {STOP_WITHIN_SECONDS:.0f} s"
                )
            assert not server.notices.listening.is_set()
    finally:
        elsewhere.close()
