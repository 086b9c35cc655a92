"""Retried writes through a real MemoryService (AIP-155 request_id): a response lost after the commit,
then the retry; the same id with another request; tenants, methods, bad ids; concurrent duplicates
over two replicas of one store; a retry after a restart."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer, start_memory_server
from strata_memory.settings import MemorySettings
from strata_serving.status import error_info_from
from tests.hermetic import unreachable_address
from tests.lossy_proxy import LossyProxy
from tests.memory.integration.conftest import Stub, expect_error, new_agent

USER = pb.MESSAGE_ROLE_USER
INVALID = grpc.StatusCode.INVALID_ARGUMENT


@pytest.fixture
async def proxy(memory_server: MemoryServer) -> AsyncIterator[LossyProxy]:
    lossy = LossyProxy(memory_server.address, ["AppendMessages", "CreatePassages"])
    await lossy.start()
    yield lossy
    await lossy.stop()


@pytest.fixture
async def lossy_stub(proxy: LossyProxy) -> AsyncIterator[Stub]:
    async with grpc.aio.insecure_channel(proxy.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)


async def start_replica(store_url: str) -> MemoryServer:
    settings = MemorySettings(
        address="127.0.0.1:0", database_url=store_url, retrieval_address=unreachable_address()
    )
    return await start_memory_server(settings)


def append(agent_id: str, *texts: str, request_id: str = "") -> api.AppendMessagesRequest:
    messages = [pb.Message(role=USER, content=text) for text in texts]
    return api.AppendMessagesRequest(agent_id=agent_id, messages=messages, request_id=request_id)


async def stored(stub: Stub, agent_id: str, **metadata: str) -> list[tuple[str, int, str]]:
    listed = await stub.ListMessages(
        api.ListMessagesRequest(agent_id=agent_id), metadata=tuple(metadata.items())
    )
    return [(m.id, m.sequence, m.content) for m in listed.messages]


def as_stored(response: api.AppendMessagesResponse) -> list[tuple[str, int, str]]:
    return [(m.id, m.sequence, m.content) for m in response.messages]


async def test_an_append_retried_after_its_response_was_lost_is_stored_once(
    stub: Stub, lossy_stub: Stub, proxy: LossyProxy
) -> None:
    agent = await new_agent(stub)
    request = append(agent.id, "hi", "again", request_id=str(uuid.uuid4()))
    await expect_error(lossy_stub.AppendMessages(request), grpc.StatusCode.UNAVAILABLE)
    retried = await lossy_stub.AppendMessages(request)
    assert proxy.forwarded["AppendMessages"] == 2
    assert await stored(stub, agent.id) == as_stored(retried)
    assert [(m.sequence, m.content) for m in retried.messages] == [(1, "hi"), (2, "again")]
    later = await stub.AppendMessages(append(agent.id, "next"))  # numbering goes on from the first call
    assert later.messages[0].sequence == 3


async def test_passages_retried_after_the_response_was_lost_are_stored_once(
    stub: Stub, lossy_stub: Stub, proxy: LossyProxy
) -> None:
    agent = await new_agent(stub)
    request = api.CreatePassagesRequest(
        agent_id=agent.id,
        passages=[pb.Passage(text="tea at five", tags=["habits"]), pb.Passage(text="likes jazz")],
        request_id=str(uuid.uuid4()),
    )
    await expect_error(lossy_stub.CreatePassages(request), grpc.StatusCode.UNAVAILABLE)
    retried = await lossy_stub.CreatePassages(request)
    listed = await stub.ListPassages(api.ListPassagesRequest(agent_id=agent.id))
    assert [(p.id, p.text, list(p.tags)) for p in listed.passages] == [
        (p.id, p.text, list(p.tags)) for p in retried.passages
    ]
    assert [p.text for p in retried.passages] == ["tea at five", "likes jazz"]
    assert proxy.forwarded["CreatePassages"] == 2
    request.passages[0].text = "tea at six"  # a refusal passes through the proxy with its details
    await expect_error(lossy_stub.CreatePassages(request), INVALID, "REQUEST_ID_REUSED")


async def test_a_retry_after_a_passage_was_deleted_returns_the_ones_left(stub: Stub) -> None:
    agent = await new_agent(stub)
    request = api.CreatePassagesRequest(
        agent_id=agent.id,
        passages=[pb.Passage(text="first"), pb.Passage(text="second")],
        request_id=str(uuid.uuid4()),
    )
    created = await stub.CreatePassages(request)
    await stub.DeletePassage(api.DeletePassageRequest(passage_id=created.passages[0].id))
    retried = await stub.CreatePassages(request)
    assert [p.id for p in retried.passages] == [created.passages[1].id]
    listed = await stub.ListPassages(api.ListPassagesRequest(agent_id=agent.id))
    assert [p.text for p in listed.passages] == ["second"]


async def test_the_same_request_id_with_another_request_is_refused_and_changes_nothing(stub: Stub) -> None:
    agent, other = await new_agent(stub), await new_agent(stub)
    request_id = str(uuid.uuid4())
    first = await stub.AppendMessages(append(agent.id, "hi", request_id=request_id))
    for changed in (
        append(agent.id, "hello", request_id=request_id),
        append(agent.id, "hi", "more", request_id=request_id),
        append(other.id, "hi", request_id=request_id),
        api.AppendMessagesRequest(
            agent_id=agent.id,
            conversation_id="other",
            messages=[pb.Message(role=USER, content="hi")],
            request_id=request_id,
        ),
    ):
        error = await expect_error(stub.AppendMessages(changed), INVALID, "REQUEST_ID_REUSED")
        assert "a new request needs a new request_id" in (error.details() or "")
        info = error_info_from(error.trailing_metadata())
        assert info is not None
        assert dict(info.metadata) == {
            "request_id": request_id,
            "method": "AppendMessages",
        }
    assert await stored(stub, agent.id) == as_stored(first)
    assert await stored(stub, other.id) == []


async def test_request_ids_are_per_tenant_and_per_method(stub: Stub) -> None:
    request_id = str(uuid.uuid4())
    mine = await new_agent(stub)
    theirs = await stub.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="bo")), metadata=(("x-strata-tenant", "other"),)
    )
    await stub.AppendMessages(append(mine.id, "hi", request_id=request_id))
    await stub.AppendMessages(
        append(theirs.id, "hi", request_id=request_id), metadata=(("x-strata-tenant", "other"),)
    )
    assert [text for _, _, text in await stored(stub, theirs.id, **{"x-strata-tenant": "other"})] == ["hi"]
    passages = await stub.CreatePassages(
        api.CreatePassagesRequest(agent_id=mine.id, passages=[pb.Passage(text="x")], request_id=request_id)
    )
    assert [p.text for p in passages.passages] == ["x"]
    assert len(await stored(stub, mine.id)) == 1


async def test_a_bad_request_id_is_refused_before_anything_is_stored(stub: Stub) -> None:
    agent = await new_agent(stub)
    good = str(uuid.uuid4())
    for bad in ("not-a-uuid", good + "0", "{" + good + "}", good.replace("-", ""), "x" * 5000):
        error = await expect_error(stub.AppendMessages(append(agent.id, "hi", request_id=bad)), INVALID)
        assert (error.details() or "").startswith("request_id: must be a UUID")
        await expect_error(
            stub.CreatePassages(
                api.CreatePassagesRequest(agent_id=agent.id, passages=[pb.Passage(text="x")], request_id=bad)
            ),
            INVALID,
        )
    assert await stored(stub, agent.id) == []
    listed = await stub.ListPassages(api.ListPassagesRequest(agent_id=agent.id))
    assert list(listed.passages) == []
    upper = await stub.AppendMessages(append(agent.id, "hi", request_id=good.upper()))
    assert as_stored(await stub.AppendMessages(append(agent.id, "hi", request_id=good))) == as_stored(upper)


async def test_concurrent_duplicates_over_two_replicas_apply_once(
    stub: Stub, memory_server: MemoryServer, store_url: str
) -> None:
    replica = await start_replica(store_url)
    try:
        async with grpc.aio.insecure_channel(replica.address) as channel:
            stubs = [stub, memory_service_pb2_grpc.MemoryServiceStub(channel)]
            agent = await new_agent(stub)
            for round_ in range(3):
                request = append(agent.id, f"a{round_}", f"b{round_}", request_id=str(uuid.uuid4()))
                answers = await asyncio.gather(*(stubs[i % 2].AppendMessages(request) for i in range(8)))
                assert len({tuple(as_stored(a)) for a in answers}) == 1
            contents = [text for _, _, text in await stored(stub, agent.id)]
            assert contents == ["a0", "b0", "a1", "b1", "a2", "b2"]
    finally:
        await replica.stop(0)


async def test_a_retry_after_a_restart_returns_the_first_outcome(
    memory_server: MemoryServer, store_url: str
) -> None:
    request_id = str(uuid.uuid4())
    async with grpc.aio.insecure_channel(memory_server.address) as channel:
        first_stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await new_agent(first_stub)
        first = await first_stub.AppendMessages(append(agent.id, "before the restart", request_id=request_id))
    await memory_server.stop(0)
    restarted = await start_replica(store_url)
    try:
        async with grpc.aio.insecure_channel(restarted.address) as channel:
            second_stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
            retried = await second_stub.AppendMessages(
                append(agent.id, "before the restart", request_id=request_id)
            )
            assert as_stored(retried) == as_stored(first)
            assert await stored(second_stub, agent.id) == as_stored(first)
    finally:
        await restarted.stop(0)


async def test_a_retry_with_wait_searchable_waits_for_the_first_calls_indexing(stub: Stub) -> None:
    """RetrievalService is unreachable here: the first call's jobs stay pending, so a retry asking to
    wait runs out of time instead of answering as if its messages were searchable (and wait_searchable,
    how to wait, is not part of the request: the retry is not refused as another request)."""
    agent = await new_agent(stub)
    request = append(agent.id, "hi", request_id=str(uuid.uuid4()))
    first = await stub.AppendMessages(request)
    request.wait_searchable = True
    await expect_error(stub.AppendMessages(request, timeout=1), grpc.StatusCode.DEADLINE_EXCEEDED)
    assert await stored(stub, agent.id) == as_stored(first)
