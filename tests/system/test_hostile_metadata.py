"""Metadata a hostile peer sends over raw HTTP/2 cannot break a call, forge a log line or be echoed:
an ``x-request-id`` that is not printable ASCII of at most ``MAX_REQUEST_ID_LENGTH`` characters is
replaced with a fresh id (and the log says so); the replacement, never the raw bytes, is logged,
forwarded to RetrievalService and returned in trailers."""

from __future__ import annotations

import asyncio
import logging

import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import resources_pb2 as pb
from strata_serving.logs import ConsoleFormatter
from strata_serving.propagation import MAX_REQUEST_ID_LENGTH
from tests.raw_http2 import RawReply, raw_unary_call
from tests.servers import ServicePair

MEMORY = "/strata.memory.v1.MemoryService/"
SEARCH = "/strata.retrieval.v1.RetrievalService/Search"
NOT_FOUND, OK = 5, 0
HOSTILE = {
    "CR LF": b"abc\r\n2026-01-01 00:00:00 ERROR strata.auth FAKEINJECTED admin key accepted",
    "LF": b"x\nFAKEINJECTED",
    "ESC": b"\x1b[31mred\x1b[0m",
    "NUL": b"a\x00b",
    "DEL": b"a\x7fb",
    "non-ASCII": "caf\u00e9-\u202e".encode(),
    "space": b"two words",
    "too long": b"r" * (MAX_REQUEST_ID_LENGTH + 1),
}


def printable_id(value: bytes) -> bool:
    return 0 < len(value) <= MAX_REQUEST_ID_LENGTH and all(0x21 <= b <= 0x7E for b in value)


async def call(address: str, method: str, request: bytes, request_id: bytes) -> RawReply:
    metadata = [(b"x-request-id", request_id)]
    return await asyncio.to_thread(raw_unary_call, address, MEMORY + method, request, metadata)


@pytest.mark.parametrize("name", sorted(HOSTILE))
async def test_a_hostile_request_id_is_replaced_never_echoed_and_the_call_answers_as_usual(
    pair: ServicePair, memory: MemoryStub, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    assert pair.memory is not None
    hostile = HOSTILE[name]
    agent = await memory.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="raw")))
    await memory.CreatePassages(
        api.CreatePassagesRequest(
            agent_id=agent.id, passages=[pb.Passage(text="The boat leaves at noon.")], wait_searchable=True
        )
    )
    caplog.set_level(logging.INFO)

    missing = await call(
        pair.memory.address,
        "GetAgent",
        api.GetAgentRequest(agent_id="agent-missing").SerializeToString(),
        hostile,
    )
    search = api.SearchArchivalRequest(agent_id=agent.id, query="when does the boat leave")
    found = await call(pair.memory.address, "SearchArchival", search.SerializeToString(), hostile)

    assert (missing.status, found.status) == (NOT_FOUND, OK), (missing.message, found.message)
    hits = api.SearchArchivalResponse.FromString(found.body).hits
    assert [hit.passage.text for hit in hits] == ["The boat leaves at noon."]
    echoed = missing.metadata[b"x-request-id"]
    assert printable_id(echoed)
    assert hostile not in echoed
    # Every line logged for these calls (the forwarded Search included) carries a clean id only.
    formatter = ConsoleFormatter()
    lines = [formatter.format(record) for record in caplog.records]
    assert not any(hostile.decode("utf-8", "replace") in line for line in lines)
    assert not any(ch in line for line in lines for ch in "\r\n\x1b\x00\x7f")
    replaced = [
        r for r in caplog.records if "x-request-id" in r.getMessage() and "replaced" in r.getMessage()
    ]
    assert len(replaced) == 2
    assert any(getattr(r, "rpc_method", "") == SEARCH for r in caplog.records)  # it was forwarded


async def test_a_printable_request_id_is_kept_and_echoed(pair: ServicePair) -> None:
    assert pair.memory is not None
    chosen = b"trace-me_01.AZ~"
    missing = await call(
        pair.memory.address,
        "GetAgent",
        api.GetAgentRequest(agent_id="agent-missing").SerializeToString(),
        chosen,
    )
    assert missing.status == NOT_FOUND
    assert missing.metadata[b"x-request-id"] == chosen
