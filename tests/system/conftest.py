"""Both services for real: RetrievalService (real embedder, Qdrant edge shard, Tantivy) and a
MemoryService that indexes into it, each on a free port with its data in a temporary folder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.servers import ServicePair


@pytest.fixture(scope="session")
def system_embedder(tmp_path_factory: pytest.TempPathFactory) -> OnnxSentenceEmbedder:
    return OnnxSentenceEmbedder.load(tmp_path_factory.mktemp("models"), threads=2, batch_size=16)


@pytest.fixture
async def pair(tmp_path: Path, system_embedder: OnnxSentenceEmbedder) -> AsyncIterator[ServicePair]:
    running = ServicePair(tmp_path, system_embedder)
    await running.start_retrieval()
    await running.start_memory()
    yield running
    await running.stop_memory()
    await running.stop_retrieval()


@pytest.fixture
async def memory(pair: ServicePair) -> AsyncIterator[MemoryStub]:
    assert pair.memory is not None
    async with grpc.aio.insecure_channel(pair.memory.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)
