"""Limits through real servers: request size, and one tenant's searches cannot crowd out another's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import grpc
import pytest

from strata.client.async_stubs import MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.main import MemoryServer
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_serving.admission import TenantConcurrency
from strata_serving.errors import ResourceExhausted
from strata_serving.metrics import RPC_LABELS, rpc_labels
from strata_serving.status import error_info_from
from tests.memory.integration.conftest import expect_error
from tests.memory_process import free_port
from tests.security import faults
from tests.servers import ServicePair

CREATE_PASSAGES = "/strata.memory.v1.MemoryService/CreatePassages"
TENANT_A = (("x-strata-tenant", "tenant-a"),)
TENANT_B = (("x-strata-tenant", "tenant-b"),)


@pytest.fixture
async def limited(tmp_path: Path, security_embedder: OnnxSentenceEmbedder) -> AsyncIterator[ServicePair]:
    running = ServicePair(
        tmp_path,
        security_embedder,
        retrieval_settings={"max_message_bytes": 256 * 1024},
        memory_settings={"max_message_bytes": 64 * 1024, "searches_per_tenant": 1},
    )
    await running.start()
    yield running
    await running.stop()


async def test_requests_over_the_size_limit_are_resource_exhausted(limited: ServicePair) -> None:
    async with grpc.aio.insecure_channel(limited.memory_address) as channel:
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="big")))
        huge = [pb.Passage(text="x" * (70 * 1024))]
        await expect_error(
            stub.CreatePassages(api.CreatePassagesRequest(agent_id=agent.id, passages=huge)),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        )
        fits = [pb.Passage(text="y" * (30 * 1024))]
        await stub.CreatePassages(api.CreatePassagesRequest(agent_id=agent.id, passages=fits))
    async with grpc.aio.insecure_channel(limited.retrieval_address) as channel:
        retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        document = rpb.Document(id="d", text="z" * (300 * 1024), scope=rpb.Scope(tenant_id="t"))
        await expect_error(
            retrieval.UpsertDocuments(rpb.UpsertDocumentsRequest(documents=[document])),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        )


async def test_a_tenant_over_its_search_limit_is_refused_while_others_are_served(
    limited: ServicePair,
) -> None:
    async with grpc.aio.insecure_channel(limited.memory_address) as channel:
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agents = {}
        for metadata in (TENANT_A, TENANT_B):
            agent = await stub.CreateAgent(
                api.CreateAgentRequest(agent=pb.Agent(name="s")), metadata=metadata
            )
            passages = [pb.Passage(text=f"note {i} about gardening and tomatoes") for i in range(20)]
            await stub.CreatePassages(
                api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True),
                metadata=metadata,
            )
            agents[metadata] = agent.id

        async def search(metadata: tuple[tuple[str, str]], query: str) -> grpc.StatusCode:
            request = api.SearchArchivalRequest(agent_id=agents[metadata], query=query, top_k=10)
            try:
                await stub.SearchArchival(request, metadata=metadata)
            except grpc.aio.AioRpcError as error:
                info = error_info_from(error.trailing_metadata())
                assert info is not None
                assert info.reason == "TENANT_CONCURRENCY_LIMIT"
                return error.code()
            return grpc.StatusCode.OK

        noisy = [search(TENANT_A, f"tomatoes in the garden {i}") for i in range(16)]
        outcomes = await asyncio.gather(*noisy, search(TENANT_B, "gardening"))
        from_a, from_b = outcomes[:-1], outcomes[-1]
        assert set(from_a) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert grpc.StatusCode.OK in from_a
        assert grpc.StatusCode.RESOURCE_EXHAUSTED in from_a
        assert from_b == grpc.StatusCode.OK
        # The limit is on calls in flight: once they finished, tenant A is served again.
        assert await search(TENANT_A, "tomatoes") == grpc.StatusCode.OK


async def test_tenant_concurrency_counts_calls_in_flight_per_tenant() -> None:
    limit = TenantConcurrency(2, what="searches")
    async with limit.slot("a"), limit.slot("a"):
        assert limit.in_flight("a") == 2
        with pytest.raises(ResourceExhausted) as refused:
            async with limit.slot("a"):
                pass
        assert refused.value.reason == "TENANT_CONCURRENCY_LIMIT"
        async with limit.slot("b"):
            assert limit.in_flight("b") == 1
    assert limit.in_flight("a") == 0
    with pytest.raises(RuntimeError):
        async with limit.slot("a"):
            raise RuntimeError("a failing call releases its slot")
    assert limit.in_flight("a") == 0
    unlimited = TenantConcurrency(0, what="searches")
    async with unlimited.slot("a"), unlimited.slot("a"), unlimited.slot("a"):
        assert unlimited.in_flight("a") == 0
    with pytest.raises(ValueError, match=">= 0"):
        TenantConcurrency(-1, what="searches")


async def test_calls_honour_their_deadline_and_cancellation(tmp_path: Path) -> None:
    nowhere = f"127.0.0.1:{free_port()}"  # RetrievalService down: indexing cannot finish
    async with (
        faults.memory_server(tmp_path / "m.sqlite3", nowhere, metrics_address="127.0.0.1:0") as server,
        grpc.aio.insecure_channel(server.address) as channel,
    ):
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="deadline")))
        request = api.CreatePassagesRequest(
            agent_id=agent.id, passages=[pb.Passage(text="kept")], wait_searchable=True
        )
        await expect_error(stub.CreatePassages(request, timeout=1.0), grpc.StatusCode.DEADLINE_EXCEEDED)
        # The server's side of the deadline (its own early answer is pinned in
        # tests/memory/integration/test_wait_searchable.py): the handler ends and is counted as such.
        assert await faults.wait_until(partial(in_flight_is, server, 0), within=10)
        assert answered(server, CREATE_PASSAGES, "DEADLINE_EXCEEDED") == 1
        listed = await stub.ListPassages(api.ListPassagesRequest(agent_id=agent.id))
        assert [p.text for p in listed.passages] == ["kept"]  # stored; only the wait was cut short
        waiting = stub.CreatePassages(
            api.CreatePassagesRequest(
                agent_id=agent.id, passages=[pb.Passage(text="t")], wait_searchable=True
            )
        )
        assert await faults.wait_until(partial(in_flight_is, server, 1), within=10)  # the server waits on it
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        # The server gives up the wait: the handler ends, counted as CANCELLED.
        assert await faults.wait_until(partial(in_flight_is, server, 0), within=10)
        assert answered(server, CREATE_PASSAGES, "CANCELLED") == 1
        await stub.GetAgent(api.GetAgentRequest(agent_id=agent.id), timeout=5)  # still serving


async def in_flight_is(server: MemoryServer, count: int) -> bool:
    """Whether ``count`` CreatePassages calls are being handled by ``server`` now."""
    labels = dict(zip(RPC_LABELS, rpc_labels(CREATE_PASSAGES, "unary"), strict=True))
    value = server.grpc.registry.get_sample_value("strata_rpc_in_flight", labels)
    return value == count


def answered(server: MemoryServer, method: str, code: str) -> float:
    labels = dict(zip(RPC_LABELS, rpc_labels(method, "unary"), strict=True)) | {"grpc_code": code}
    return server.grpc.registry.get_sample_value("grpc_server_handled_total", labels) or 0.0
