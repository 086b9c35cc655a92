"""Both services' Prometheus endpoints, scraped before and after real traffic: the figures move."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata_memory.config import MemorySettings
from strata_memory.main import MemoryServer, start_memory_server
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings

SEARCH_ARCHIVAL = "/strata.memory.v1.MemoryService/SearchArchival"
SEARCH = "/strata.retrieval.v1.RetrievalService/Search"
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
    retrieval = RetrievalApp(
        RetrievalSettings(
            address="127.0.0.1:0", data_dir=tmp_path / "r", metrics_address="127.0.0.1:0", log_json=False
        ),
        embedder=system_embedder,
    )
    await retrieval.start()
    memory = await start_memory_server(
        MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{tmp_path}/m.sqlite3",
            retrieval_address=retrieval.address,
            metrics_address="127.0.0.1:0",
            outbox_max_backoff_seconds=0.5,
        )
    )
    yield Measured(memory, retrieval)
    await memory.stop(0)
    await retrieval.stop()


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

    assert moved(m0, m1, "strata_rpc_requests_total", method=SEARCH_ARCHIVAL, code="OK") == 2
    assert moved(r0, r1, "strata_rpc_requests_total", method=SEARCH, code="OK") == 2
    assert moved(m0, m1, "strata_rpc_duration_seconds_count", method=SEARCH_ARCHIVAL) == 2
    assert _value(m1, "strata_rpc_in_flight", method=SEARCH_ARCHIVAL) == 0
    assert moved(m0, m1, "strata_index_delivered_documents_total") >= 3
    assert _value(m1, "strata_outbox_jobs") == 0
    assert _value(m1, "strata_outbox_parked_jobs") == 0
    assert ("strata_outbox_oldest_job_age_seconds", ()) in m1
    assert moved(r0, r1, "strata_embedding_duration_seconds_count", kind="query") == 2
    assert moved(r0, r1, "strata_embedded_texts_total", kind="document") >= 3
    assert ("strata_vectors_unindexed", ()) in r1
    assert _value(r1, "strata_index_documents", tenant="default") == 3
