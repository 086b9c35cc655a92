"""Nothing acknowledged is lost: RetrievalService outages, kill -9 of MemoryService, and Reindex."""

from __future__ import annotations

import asyncio
import shutil

import grpc
import pytest

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from tests.memory_process import MemoryProcess
from tests.servers import ServicePair

TOPICS = [
    "sailing in Norway",
    "baking sourdough",
    "learning the cello",
    "repairing bicycles",
    "growing chillies",
]


async def indexed_count(pair: ServicePair) -> int:
    options = [("grpc.use_local_subchannel_pool", 1)]  # not the shared subchannel's reconnect backoff
    async with grpc.aio.insecure_channel(pair.retrieval_address, options=options) as channel:
        stub: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        stats = await stub.Stats(rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id="default")))
        return int(stats.document_count)


async def write_while_down(memory: MemoryStub) -> str:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="outage")))
    messages = [
        pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"I have been {topic} lately.") for topic in TOPICS
    ]
    await memory.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=messages))
    passages = [pb.Passage(text=f"Bob enjoys {topic}.") for topic in TOPICS]
    await memory.CreatePassages(api.CreatePassagesRequest(agent_id=agent.id, passages=passages))
    return agent.id


async def wait_until(predicate: object, within: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await predicate():  # type: ignore[operator]
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.2)


async def search_topics(memory: MemoryStub, agent_id: str) -> list[list[str]]:
    """The top passage and message for each topic (what a user would see)."""
    results = []
    for topic in TOPICS:
        passages = await memory.SearchArchival(
            api.SearchArchivalRequest(agent_id=agent_id, query=topic, top_k=2)
        )
        messages = await memory.SearchMessages(
            api.SearchMessagesRequest(agent_id=agent_id, query=topic, limit=2)
        )
        results.append([h.passage.text for h in passages.hits] + [h.message.content for h in messages.hits])
    return results


async def test_writes_during_a_retrieval_outage_become_searchable_once_it_returns(
    pair: ServicePair, memory: MemoryStub
) -> None:
    await pair.stop_retrieval()
    agent_id = await write_while_down(memory)
    await pair.start_retrieval()

    async def all_indexed() -> bool:
        return await indexed_count(pair) == 2 * len(TOPICS)

    await wait_until(all_indexed)
    found = await search_topics(memory, agent_id)
    assert all(f"Bob enjoys {topic}." in hits for topic, hits in zip(TOPICS, found, strict=True))
    assert await indexed_count(pair) == 2 * len(TOPICS)  # redelivery never duplicates


async def test_search_fails_fast_with_unavailable_while_retrieval_is_down(
    pair: ServicePair, memory: MemoryStub
) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="down")))
    await pair.stop_retrieval()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await memory.SearchMessages(
            api.SearchMessagesRequest(agent_id=agent.id, query="anything"), timeout=10
        )
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "RetrievalService" in (caught.value.details() or "")
    run = await memory.ExecuteTool(
        api.ExecuteToolRequest(agent_id=agent.id, tool_name="conversation_search", arguments='{"query": "x"}')
    )
    assert (run.ok, run.reason) == (False, "RETRIEVAL_UNAVAILABLE")


async def test_reindex_after_losing_the_index_folder_restores_identical_results(
    pair: ServicePair, memory: MemoryStub
) -> None:
    agent_id = await write_while_down(memory)

    async def all_indexed() -> bool:
        return await indexed_count(pair) == 2 * len(TOPICS)

    await wait_until(all_indexed)
    before = await search_topics(memory, agent_id)
    await pair.stop_retrieval()
    shutil.rmtree(pair.root / "retrieval")
    await pair.start_retrieval()
    assert await indexed_count(pair) == 0
    progress = [p async for p in memory.Reindex(api.ReindexRequest())]
    assert progress[-1].done
    assert progress[-1].documents_done == progress[-1].documents_total == 2 * len(TOPICS)
    assert await search_topics(memory, agent_id) == before


@pytest.mark.slow
async def test_jobs_pending_at_kill_9_are_delivered_after_restart(
    pair: ServicePair, monkeypatch: pytest.MonkeyPatch
) -> None:
    await pair.stop_memory()
    await pair.stop_retrieval()
    database = pair.root / "memory.sqlite3"
    monkeypatch.setenv("STRATA_MEMORY_OUTBOX_MAX_BACKOFF_SECONDS", "0.5")
    first = MemoryProcess(f"sqlite:///{database}", retrieval_address=pair.retrieval_address)
    try:
        await first.wait_serving()
        async with grpc.aio.insecure_channel(first.address) as channel:
            agent_id = await write_while_down(memory_service_pb2_grpc.MemoryServiceStub(channel))
    finally:
        first.kill()
    await pair.start_retrieval()
    second = MemoryProcess(f"sqlite:///{database}", retrieval_address=pair.retrieval_address)
    try:
        await second.wait_serving()

        async def all_indexed() -> bool:
            return await indexed_count(pair) == 2 * len(TOPICS)

        await wait_until(all_indexed)
        async with grpc.aio.insecure_channel(second.address) as channel:
            found = await search_topics(memory_service_pb2_grpc.MemoryServiceStub(channel), agent_id)
        assert all(f"Bob enjoys {topic}." in hits for topic, hits in zip(TOPICS, found, strict=True))
    finally:
        second.kill()
