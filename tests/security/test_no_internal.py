"""Inputs that were answered INTERNAL (issue 14 item 7), each sent through real servers.

Forged page tokens, date bounds and stored timestamps at the edges of the representable range in
timezones east and west of UTC, and escaped lone surrogates in tool arguments: each now gets a clear
status (INVALID_ARGUMENT, or a tool error the LLM can read), or a correct answer, and changes nothing.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.memory.integration.conftest import expect_error
from tests.servers import ServicePair

EAST, WEST = "Asia/Tokyo", "America/Los_Angeles"
YEAR_1 = Timestamp(seconds=-62_135_596_800)  # 0001-01-01T00:00:00Z, the first representable second
YEAR_9999 = Timestamp(seconds=253_402_300_799)  # 9999-12-31T23:59:59Z, the last


@pytest.fixture
async def stub(tmp_path: Path, security_embedder: OnnxSentenceEmbedder) -> AsyncIterator[MemoryStub]:
    running = ServicePair(tmp_path, security_embedder)
    await running.start()
    async with grpc.aio.insecure_channel(running.memory_address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)
    await running.stop()


def forged(offset: object, scope_digest: str = "0" * 16) -> str:
    """A page token shaped like the service's own, with the offset a hostile client chose."""
    return base64.urlsafe_b64encode(json.dumps({"o": offset, "s": scope_digest}).encode()).decode()


def forged_raw(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


async def real_token(stub: MemoryStub) -> str:
    for i in range(3):
        await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=f"a{i}")))
    listed = await stub.ListAgents(api.ListAgentsRequest(page_size=1))
    assert listed.next_page_token
    return listed.next_page_token


def with_offset(token: str, offset_json: str) -> str:
    """``token`` (a real one, so its scope digest matches) with its offset replaced verbatim."""
    decoded = json.loads(base64.urlsafe_b64decode(token))
    payload = json.dumps(decoded).replace(f'"o": {decoded["o"]}', f'"o": {offset_json}')
    return forged_raw(payload)


@pytest.mark.parametrize("offset", ["1e400", str(10**30), str(2**63), "-1", "1.5", "true", '"1"', "null"])
async def test_forged_page_token_offsets_are_invalid_argument(stub: MemoryStub, offset: str) -> None:
    token = with_offset(await real_token(stub), offset)
    await expect_error(
        stub.ListAgents(api.ListAgentsRequest(page_size=1, page_token=token)),
        grpc.StatusCode.INVALID_ARGUMENT,
    )


@pytest.mark.parametrize("offset", ["1e400", str(10**30), str(2**63)])
async def test_forged_message_page_tokens_are_invalid_argument(stub: MemoryStub, offset: str) -> None:
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="m")))
    messages = [pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"m{i}") for i in range(3)]
    await stub.AppendMessages(api.AppendMessagesRequest(agent_id=agent.id, messages=messages))
    first = await stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id, page_size=1))
    token = with_offset(first.next_page_token, offset)
    await expect_error(
        stub.ListMessages(api.ListMessagesRequest(agent_id=agent.id, page_size=1, page_token=token)),
        grpc.StatusCode.INVALID_ARGUMENT,
    )


async def test_a_valid_token_still_pages(stub: MemoryStub) -> None:
    token = await real_token(stub)
    second = await stub.ListAgents(api.ListAgentsRequest(page_size=1, page_token=token))
    assert len(second.agents) == 1
    await expect_error(
        stub.ListAgents(api.ListAgentsRequest(page_size=1, page_token=forged_raw("{}"))),
        grpc.StatusCode.INVALID_ARGUMENT,
    )


async def tool(stub: MemoryStub, agent_id: str, name: str, arguments: str) -> api.ExecuteToolResponse:
    return await stub.ExecuteTool(
        api.ExecuteToolRequest(agent_id=agent_id, tool_name=name, arguments=arguments)
    )


DATE_BOUNDS = [
    ("conversation_search", {"query": "tea", "start_date": "0001-01-01"}, EAST),
    ("conversation_search", {"query": "tea", "end_date": "9999-12-31"}, WEST),
    ("conversation_search", {"query": "tea", "start_date": "0001-01-01T00:00:00+05:00"}, "UTC"),
    ("conversation_search", {"query": "tea", "end_date": "9999-12-31T23:59:59-05:00"}, "UTC"),
    ("archival_memory_search", {"query": "tea", "start_datetime": "0001-01-01"}, EAST),
    ("archival_memory_search", {"query": "tea", "end_datetime": "9999-12-31"}, WEST),
    ("archival_memory_search", {"query": "tea", "start_datetime": "0001-01-01T00:00+14:00"}, "UTC"),
    ("archival_memory_search", {"query": "tea", "end_datetime": "9999-12-31T23:59-12:00"}, "UTC"),
]


@pytest.mark.parametrize(("name", "arguments", "timezone"), DATE_BOUNDS)
async def test_date_bounds_at_the_edges_of_the_range_search_normally(
    stub: MemoryStub, name: str, arguments: dict[str, str], timezone: str
) -> None:
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="d", timezone=timezone)))
    await stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="I like tea")],
            wait_searchable=True,
        )
    )
    await stub.CreatePassages(
        api.CreatePassagesRequest(agent_id=agent.id, passages=[pb.Passage(text="tea")], wait_searchable=True)
    )
    run = await tool(stub, agent.id, name, json.dumps(arguments))
    assert run.ok, run.text
    assert "tea" in run.text  # the bound covers today: the stored item is found


@pytest.mark.parametrize("stamp", [YEAR_1, YEAR_9999], ids=["year-1", "year-9999"])
@pytest.mark.parametrize("timezone", [EAST, WEST])
async def test_stored_items_at_the_edges_of_the_range_are_shown_in_any_timezone(
    stub: MemoryStub, stamp: Timestamp, timezone: str
) -> None:
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="e", timezone=timezone)))
    await stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="edge of time tea", create_time=stamp)],
            wait_searchable=True,
        )
    )
    await stub.CreatePassages(
        api.CreatePassagesRequest(
            agent_id=agent.id,
            passages=[pb.Passage(text="edge of time tea", create_time=stamp)],
            wait_searchable=True,
        )
    )
    for name in ("conversation_search", "archival_memory_search"):
        run = await tool(stub, agent.id, name, '{"query": "edge of time tea"}')
        assert run.ok, run.text
        assert "edge of time tea" in run.text
    rendered = await stub.RenderMemory(api.RenderMemoryRequest(agent_id=agent.id))
    assert rendered.text


SURROGATE_CALLS = [
    ("conversation_search", '{"query": "\\ud800"}'),
    ("archival_memory_search", '{"query": "\\udfff tea"}'),
    ("archival_memory_search", '{"query": "tea", "tags": ["\\ud800"]}'),
    ("archival_memory_insert", '{"content": "x\\ud800y"}'),
    ("archival_memory_insert", '{"content": "ok", "tags": ["\\udc00"]}'),
    ("core_memory_append", '{"label": "human", "content": "\\ud800"}'),
    ("core_memory_replace", '{"label": "human", "old_content": "a", "new_content": "\\ud800"}'),
    ("memory_replace", '{"label": "human", "old_string": "a", "new_string": "\\ud83d"}'),
    ("memory_insert", '{"label": "human", "new_string": "\\ud800"}'),
    ("memory_rethink", '{"label": "human", "new_memory": "\\ud800"}'),
    ("memory_rethink", '{"label": "\\ud800", "new_memory": "v"}'),
    ("memory", '{"command": "create", "path": "/memories/n\\ud800", "file_text": "v"}'),
]


@pytest.mark.parametrize(("name", "arguments"), SURROGATE_CALLS)
async def test_escaped_lone_surrogates_in_tool_arguments_are_a_tool_error(
    stub: MemoryStub, name: str, arguments: str
) -> None:
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(
            agent=pb.Agent(name="s", timezone=EAST), blocks=[pb.Block(label="human", value="a", limit=100)]
        )
    )
    before = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    run = await tool(stub, agent.id, name, arguments)
    assert not run.ok
    assert "surrogate" in run.text
    after = await stub.ListBlocks(api.ListBlocksRequest(agent_id=agent.id))
    assert after == before
    passages = await stub.ListPassages(api.ListPassagesRequest(agent_id=agent.id))
    assert list(passages.passages) == []
    # A surrogate pair (one astral character, escaped) is an ordinary character and is kept.
    run = await tool(stub, agent.id, "core_memory_append", '{"label": "human", "content": "\\ud83d\\ude00"}')
    assert run.ok, run.text
    block = await stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="human")))
    assert block.value == "a\n\U0001f600"


async def test_health_watch_streams_the_serving_status(
    tmp_path: Path, security_embedder: OnnxSentenceEmbedder
) -> None:
    """grpc.health.v1.Health/Watch streams with context.write(): the request-id interceptor
    answered every Watch INTERNAL (found by fuzzing the health service)."""
    running = ServicePair(tmp_path, security_embedder)
    await running.start()
    try:
        for address in (running.memory_address, running.retrieval_address):
            async with grpc.aio.insecure_channel(address) as channel:
                watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
                first = await watch.read()
                assert first.status == health_pb2.HealthCheckResponse.SERVING
                watch.cancel()
    finally:
        await running.stop()


async def test_a_role_repeated_100k_times_is_one_role_filter(stub: MemoryStub) -> None:
    """Roles are four values: repeating one must not reach RetrievalService as a 100,000-value filter
    (which it refuses, over its 1,000-value filter limit)."""
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="roles")))
    await stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id,
            messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content="tea")],
            wait_searchable=True,
        )
    )
    run = await tool(
        stub, agent.id, "conversation_search", json.dumps({"query": "tea", "roles": ["user"] * 100_000})
    )
    assert run.ok, run.text
    assert "tea" in run.text
    request = api.SearchMessagesRequest(
        agent_id=agent.id, query="tea", roles=[pb.MESSAGE_ROLE_USER] * 100_000
    )
    found = await stub.SearchMessages(request)
    assert [hit.message.content for hit in found.hits] == ["tea"]
