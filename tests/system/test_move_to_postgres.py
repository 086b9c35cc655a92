"""Moving an embedded deployment (SQLite) to PostgreSQL loses nothing: copy the store table by table,
start MemoryService on the copy beside a new, empty index, Reindex, and compare.
"""

from __future__ import annotations

import json

import grpc
import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import start_memory_server
from strata_memory.settings import MemorySettings
from strata_memory.store.copy import TargetNotEmpty, copy_store
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.servers import ServicePair
from tests.store_backends import postgres_schema

__all__ = ["postgres_schema"]
pytestmark = pytest.mark.slow

FACTS = ["The lighthouse keeper feeds a grey cat", "Invoices are due on the fifth", "Bob plays the oboe"]


async def write_some_memory(memory: MemoryStub) -> str:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="mover")))
    for i in range(3):
        arguments = json.dumps({"label": "human", "content": f"fact {i}"})
        await memory.ExecuteTool(
            api.ExecuteToolRequest(agent_id=agent.id, tool_name="core_memory_append", arguments=arguments)
        )
    passages = [pb.Passage(text=text, tags=["moved"]) for text in FACTS]
    await memory.CreatePassages(
        api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True), timeout=60
    )
    turns = [pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"message number {i}") for i in range(5)]
    await memory.AppendMessages(
        api.AppendMessagesRequest(agent_id=agent.id, messages=turns, wait_searchable=True), timeout=60
    )
    return agent.id


async def snapshot(memory: MemoryStub, agent_id: str) -> tuple[object, ...]:
    ref = pb.BlockRef(agent_id=agent_id, label="human")
    block = await memory.GetBlock(api.GetBlockRequest(block=ref))
    history = await memory.ListBlockVersions(api.ListBlockVersionsRequest(block=ref, page_size=100))
    messages = await memory.ListMessages(api.ListMessagesRequest(agent_id=agent_id))
    passages = await memory.ListPassages(api.ListPassagesRequest(agent_id=agent_id))
    prompt = await memory.GetSystemPrompt(api.GetSystemPromptRequest(agent_id=agent_id))
    return (
        block.value,
        block.etag,
        [v.version for v in history.versions],
        [(m.id, m.content) for m in messages.messages],
        sorted((p.id, p.text) for p in passages.passages),
        prompt.text,
    )


async def test_a_sqlite_store_moves_to_postgresql_and_reindexes_with_every_count_equal(
    pair: ServicePair, memory: MemoryStub, postgres_schema: str, system_embedder: OnnxSentenceEmbedder
) -> None:
    agent_id = await write_some_memory(memory)
    before = await snapshot(memory, agent_id)
    sqlite_url = f"sqlite:///{pair.root}/memory.sqlite3"
    await pair.stop_memory()  # no writes during the copy

    counts = copy_store(sqlite_url, postgres_schema)
    assert all(count.matches for count in counts), counts
    copied = {count.table: count.target for count in counts}
    assert (copied["agents"], copied["messages"], copied["passages"]) == (1, 5, 3)
    with pytest.raises(TargetNotEmpty):  # a second copy into the now full store is refused
        copy_store(sqlite_url, postgres_schema)

    moved = ServicePair(
        pair.root / "moved", system_embedder
    )  # a new, empty index beside the PostgreSQL store
    await moved.start_retrieval()
    server = await start_memory_server(
        MemorySettings(
            address="127.0.0.1:0", database_url=postgres_schema, retrieval_address=moved.retrieval_address
        )
    )
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            assert await snapshot(stub, agent_id) == before
            progress = [step async for step in stub.Reindex(api.ReindexRequest(), timeout=120)]
            assert progress[-1].done
            assert progress[-1].documents_done == progress[-1].documents_total == 5 + 3
            found = await stub.SearchArchival(
                api.SearchArchivalRequest(agent_id=agent_id, query="grey cat lighthouse", top_k=3)
            )
            assert found.hits[0].passage.text == FACTS[0]
            recalled = await stub.SearchMessages(
                api.SearchMessagesRequest(agent_id=agent_id, query="message number 3", limit=5)
            )
            assert len(recalled.hits) == 5
    finally:
        await server.stop(0)
        await moved.stop_retrieval()
