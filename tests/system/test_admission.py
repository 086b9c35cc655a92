"""Admission through both real services (issue 26 item 2): a search request far over the largest valid
one is refused before it is parsed, a tenant past its share of searches is refused at once while
another tenant is served, and a refused flood is counted against the tenant that sent it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_serving.status import error_info_from
from tests.servers import ServicePair

NOISY = (("x-strata-tenant", "noisy"),)
QUIET = (("x-strata-tenant", "quiet"),)


async def _agent(stub: MemoryStub, metadata: tuple[tuple[str, str]]) -> str:
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="a")), metadata=metadata)
    passages = [pb.Passage(text=f"note {i} about the garden") for i in range(20)]
    await stub.CreatePassages(
        api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True),
        metadata=metadata,
        timeout=60,
    )
    return str(agent.id)


async def test_a_tag_flood_is_refused_before_it_is_parsed(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder
) -> None:
    async with (
        ServicePair(tmp_path, system_embedder) as pair,
        grpc.aio.insecure_channel(pair.memory_address) as channel,
    ):
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await _agent(stub, NOISY)
        flood = api.SearchArchivalRequest(
            agent_id=agent, query="garden", tags=[f"t{i}" for i in range(100_000)]
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.SearchArchival(flood, metadata=NOISY, timeout=10)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED  # INVALID_ARGUMENT once parsed
        assert "SearchArchival takes at most 131,072" in (refused.value.details() or "")
        widest = api.SearchArchivalRequest(agent_id=agent, query="😀" * 10_000, tags=["😀" * 100] * 64)
        await stub.SearchArchival(widest, metadata=NOISY, timeout=30)  # the largest valid one passes


async def test_a_tenant_past_its_queue_of_searches_is_refused_while_another_is_served(
    tmp_path: Path, system_embedder: OnnxSentenceEmbedder
) -> None:
    pools = {"admission_searches": (2, 1, 1)}  # one running per tenant, one waiting
    async with (
        ServicePair(tmp_path, system_embedder, memory_settings=pools) as pair,
        grpc.aio.insecure_channel(pair.memory_address) as channel,
    ):
        stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        noisy, quiet = await _agent(stub, NOISY), await _agent(stub, QUIET)

        async def search(agent: str, metadata: tuple[tuple[str, str]]) -> str:
            try:
                request = api.SearchArchivalRequest(agent_id=agent, query="garden notes")
                await stub.SearchArchival(request, metadata=metadata, timeout=30)
            except grpc.aio.AioRpcError as error:
                info = error_info_from(error.trailing_metadata())
                return info.reason if info is not None else error.code().name
            return "OK"

        outcomes = await asyncio.gather(*(search(noisy, NOISY) for _ in range(10)), search(quiet, QUIET))
    assert outcomes[-1] == "OK"
    assert outcomes[:-1].count("TENANT_CONCURRENCY_LIMIT") >= 5
    assert set(outcomes[:-1]) <= {"OK", "TENANT_CONCURRENCY_LIMIT"}
