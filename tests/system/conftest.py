"""Both services for real: RetrievalService (real embedder, Qdrant edge shard, Tantivy) and a
MemoryService that indexes into it, each on a free port with its data in a temporary folder."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from strata.client.async_stubs import MemoryStub
from strata.memory.v1 import memory_service_pb2_grpc
from strata_memory.config import MemorySettings
from strata_memory.main import MemoryServer, start_memory_server
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings


@pytest.fixture(scope="session")
def system_embedder(tmp_path_factory: pytest.TempPathFactory) -> OnnxSentenceEmbedder:
    return OnnxSentenceEmbedder.load(tmp_path_factory.mktemp("models"), threads=2, batch_size=16)


@dataclass
class Pair:
    """A running RetrievalService and MemoryService wired together, restartable one at a time."""

    root: Path
    embedder: OnnxSentenceEmbedder
    retrieval_port: int = 0
    retrieval: RetrievalApp | None = None
    memory: MemoryServer | None = None

    @property
    def retrieval_address(self) -> str:
        return f"127.0.0.1:{self.retrieval_port}"

    async def start_retrieval(self) -> None:
        settings = RetrievalSettings(
            address=f"127.0.0.1:{self.retrieval_port}", data_dir=self.root / "retrieval", log_json=False
        )
        self.retrieval = RetrievalApp(settings, embedder=self.embedder)
        await self.retrieval.start()
        self.retrieval_port = self.retrieval.server.port

    async def stop_retrieval(self) -> None:
        if self.retrieval is not None:
            await self.retrieval.stop()
            self.retrieval = None

    async def start_memory(self) -> None:
        settings = MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{self.root}/memory.sqlite3",
            retrieval_address=self.retrieval_address,
            outbox_max_backoff_seconds=0.5,
            retrieval_timeout_seconds=5.0,
        )
        self.memory = await start_memory_server(settings)

    async def stop_memory(self) -> None:
        if self.memory is not None:
            await self.memory.stop(0)
            self.memory = None


@pytest.fixture
async def pair(tmp_path: Path, system_embedder: OnnxSentenceEmbedder) -> AsyncIterator[Pair]:
    running = Pair(tmp_path, system_embedder)
    await running.start_retrieval()
    await running.start_memory()
    yield running
    await running.stop_memory()
    await running.stop_retrieval()


@pytest.fixture
async def memory(pair: Pair) -> AsyncIterator[MemoryStub]:
    assert pair.memory is not None
    async with grpc.aio.insecure_channel(pair.memory.address) as channel:
        yield memory_service_pb2_grpc.MemoryServiceStub(channel)
