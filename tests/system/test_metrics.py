"""Both services' Prometheus endpoints, scraped before and after real traffic: the figures move.

RPC metrics follow grpc-prometheus (go-grpc-prometheus, py-grpc-prometheus): ``grpc_server_started_total``,
``grpc_server_handled_total`` and ``grpc_server_handling_seconds`` by ``grpc_type``, ``grpc_service``,
``grpc_method`` (and ``grpc_code``), so stock dashboards and alerts work; the process collectors
(``process_*``, ``python_*``) are on both endpoints; a Health/Watch its client ends is not an error."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.main import MemoryServer
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from tests.servers import ServicePair

SEARCH_ARCHIVAL = {
    "grpc_type": "unary",
    "grpc_service": "strata.memory.v1.MemoryService",
    "grpc_method": "SearchArchival",
}
SEARCH = {
    "grpc_type": "unary",
    "grpc_service": "strata.retrieval.v1.RetrievalService",
    "grpc_method": "Search",
}
WATCH = {"grpc_type": "server_stream", "grpc_service": "grpc.health.v1.Health", "grpc_method": "Watch"}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass
class Measured:
    memory: MemoryServer
    retrieval: RetrievalApp

    def scrape(self, which: str) -> Samples:
        server = self.memory.grpc if which == "memory" else self.retrieval.server
        assert server.metrics is not None
        url = f"http://127.0.0.1:{server.metrics.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as reply:  # loopback only
            text = reply.read().decode()
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }


@pytest.fixture
async def measured(tmp_path: Path, system_embedder: OnnxSentenceEmbedder) -> AsyncIterator[Measured]:
    metrics = {"metrics_address": "127.0.0.1:0"}
    memory_settings = {**metrics, "outbox_max_backoff_seconds": 0.5}
    pair = ServicePair(
        tmp_path,
        embedder=system_embedder,
        retrieval_settings=metrics,
        memory_settings=memory_settings,
        quick_retries=False,
    )
    async with pair:
        assert pair.memory is not None
        assert pair.retrieval is not None
        yield Measured(pair.memory, pair.retrieval)


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_both_endpoints_count_real_traffic(measured: Measured) -> None:
    m0 = await asyncio.to_thread(measured.scrape, "memory")
    r0 = await asyncio.to_thread(measured.scrape, "retrieval")
    async with grpc.aio.insecure_channel(measured.memory.address) as channel:
        stub = memory_service_pb2_grpc.MemoryServiceStub(channel)
        agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="m")))
        passages = [pb.Passage(text=f"Fact {i} about tides.") for i in range(3)]
        await stub.CreatePassages(
            api.CreatePassagesRequest(agent_id=agent.id, passages=passages, wait_searchable=True)
        )
        for _ in range(2):
            await stub.SearchArchival(api.SearchArchivalRequest(agent_id=agent.id, query="tides"))
    m1 = await asyncio.to_thread(measured.scrape, "memory")
    r1 = await asyncio.to_thread(measured.scrape, "retrieval")

    def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert moved(m0, m1, "grpc_server_started_total", **SEARCH_ARCHIVAL) == 2
    assert moved(m0, m1, "grpc_server_handled_total", **SEARCH_ARCHIVAL, grpc_code="OK") == 2
    assert moved(r0, r1, "grpc_server_handled_total", **SEARCH, grpc_code="OK") == 2
    assert moved(m0, m1, "grpc_server_handling_seconds_count", **SEARCH_ARCHIVAL) == 2
    assert _value(m1, "strata_rpc_in_flight", **SEARCH_ARCHIVAL) == 0
    assert moved(m0, m1, "strata_index_delivered_documents_total") >= 3
    assert _value(m1, "strata_outbox_jobs") == 0
    assert _value(m1, "strata_outbox_parked_jobs") == 0
    assert ("strata_outbox_oldest_job_age_seconds", ()) in m1
    assert moved(r0, r1, "strata_embedding_duration_seconds_count", kind="query") == 1  # asked twice
    assert moved(r0, r1, "strata_query_embeddings_reused_total") == 1
    assert moved(r0, r1, "strata_embedded_texts_total", kind="document") >= 3
    assert ("strata_vectors_unindexed", ()) in r1
    assert _value(r1, "strata_index_documents", tenant="default") == 3


async def test_process_collectors_are_on_both_endpoints(measured: Measured) -> None:
    for which in ("memory", "retrieval"):
        names = {name for name, _ in await asyncio.to_thread(measured.scrape, which)}
        assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "python_info"} <= names, which


async def test_a_health_watch_its_client_ends_is_not_counted_as_an_error(measured: Measured) -> None:
    before = await asyncio.to_thread(measured.scrape, "memory")
    async with grpc.aio.insecure_channel(measured.memory.address) as channel:
        watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest())
        assert (await watch.read()).status == health_pb2.HealthCheckResponse.SERVING
        watch.cancel()  # how every watcher (a balancing channel, a probe) ends one
    for _ in range(50):  # the server sees the cancellation a moment later
        after = await asyncio.to_thread(measured.scrape, "memory")
        if _value(after, "grpc_server_handled_total", **WATCH, grpc_code="OK") > _value(
            before, "grpc_server_handled_total", **WATCH, grpc_code="OK"
        ):
            break
        await asyncio.sleep(0.1)
    assert _value(after, "grpc_server_handled_total", **WATCH, grpc_code="CANCELLED") == _value(
        before, "grpc_server_handled_total", **WATCH, grpc_code="CANCELLED"
    )
    assert _value(after, "grpc_server_handled_total", **WATCH, grpc_code="OK") == 1 + _value(
        before, "grpc_server_handled_total", **WATCH, grpc_code="OK"
    )
