"""What crosses the hop MemoryService -> RetrievalService: the caller's deadline (not a fixed 10 s)
and its request id."""

from __future__ import annotations

import logging

import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb

SEARCH = "/strata.retrieval.v1.RetrievalService/Search"
SEARCH_ARCHIVAL = "/strata.memory.v1.MemoryService/SearchArchival"


async def test_search_forwards_the_callers_deadline_and_request_id(
    memory: MemoryStub, caplog: pytest.LogCaptureFixture
) -> None:
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="hop")))
    await memory.CreatePassages(
        api.CreatePassagesRequest(
            agent_id=agent.id, passages=[pb.Passage(text="The boat leaves at noon.")], wait_searchable=True
        )
    )
    caplog.set_level(logging.INFO, logger="strata.rpc")
    reply = await memory.SearchArchival(
        api.SearchArchivalRequest(agent_id=agent.id, query="when does the boat leave"),
        timeout=3.0,
        metadata=(("x-request-id", "hop-test-1"),),
    )
    assert [hit.passage.text for hit in reply.hits] == ["The boat leaves at noon."]
    lines = {getattr(r, "rpc_method", ""): r for r in caplog.records if hasattr(r, "rpc_method")}
    inner, outer = lines[SEARCH], lines[SEARCH_ARCHIVAL]
    assert "request_id=hop-test-1" in outer.getMessage()
    assert "request_id=hop-test-1" in inner.getMessage()
    # gRPC rounds a deadline up when it encodes it (grpc-timeout), hence a little slack; the fixed
    # timeout this replaces was 10 s (retrieval_timeout_seconds, now only the cap).
    inner_ms, outer_ms = (float(getattr(line, "deadline_ms", 0)) for line in (inner, outer))
    assert outer_ms < 3100
    assert 0 < inner_ms <= outer_ms + 100
