"""Secured stacks: RetrievalService (real embedder) and MemoryService with API keys and/or TLS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import pytest

from strata.admin.v1 import admin_pb2 as admin
from strata.admin.v1 import admin_pb2_grpc
from strata.client.async_stubs import AdminStub, MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.config import MemorySettings
from strata_memory.main import MemoryServer, start_memory_server
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.main import RetrievalApp
from strata_retrieval.settings import RetrievalSettings
from tests.security.certificates import Pki, make_pki

ADMIN_KEY = "admin-key-for-tests-0123456789"
SERVICE_KEY = "service-key-for-tests-0123456789"


def bearer(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


@pytest.fixture(scope="session")
def security_embedder(tmp_path_factory: pytest.TempPathFactory) -> OnnxSentenceEmbedder:
    return OnnxSentenceEmbedder.load(tmp_path_factory.mktemp("models"), threads=2, batch_size=16)


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@dataclass
class Stack:
    """A RetrievalService and a MemoryService with the given extra settings."""

    root: Path
    embedder: OnnxSentenceEmbedder
    retrieval_settings: dict[str, Any] = field(default_factory=dict)
    memory_settings: dict[str, Any] = field(default_factory=dict)
    retrieval: RetrievalApp | None = None
    memory: MemoryServer | None = None

    @property
    def retrieval_address(self) -> str:
        assert self.retrieval is not None
        return self.retrieval.address

    @property
    def memory_address(self) -> str:
        assert self.memory is not None
        return self.memory.address

    async def start(self) -> None:
        settings = RetrievalSettings(
            address="127.0.0.1:0", data_dir=self.root / "retrieval", log_json=False, **self.retrieval_settings
        )
        self.retrieval = RetrievalApp(settings, embedder=self.embedder)
        await self.retrieval.start()
        await self.start_memory()

    async def start_memory(self, **overrides: Any) -> None:
        settings = MemorySettings(
            address="127.0.0.1:0",
            database_url=f"sqlite:///{self.root}/memory.sqlite3",
            retrieval_address=self.retrieval_address,
            outbox_max_backoff_seconds=0.5,
            retrieval_timeout_seconds=5.0,
            **{**self.memory_settings, **overrides},
        )
        self.memory = await start_memory_server(settings)

    async def stop_memory(self) -> None:
        if self.memory is not None:
            await self.memory.stop(0)
            self.memory = None

    async def stop(self) -> None:
        await self.stop_memory()
        if self.retrieval is not None:
            await self.retrieval.stop()
            self.retrieval = None

    async def __aenter__(self) -> Stack:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def searchable(self, tenant: str) -> int:
        """How many documents RetrievalService holds for ``tenant`` (asked with the service key)."""
        async with grpc.aio.insecure_channel(self.retrieval_address) as channel:
            retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
            stats = await retrieval.Stats(
                rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id=tenant)), metadata=bearer(SERVICE_KEY)
            )
        return stats.document_count


AUTH_MEMORY = {"auth_enabled": True, "admin_api_key": ADMIN_KEY, "retrieval_api_key": SERVICE_KEY}
AUTH_RETRIEVAL = {"api_key": SERVICE_KEY}


@pytest.fixture
async def stack(tmp_path: Path, security_embedder: OnnxSentenceEmbedder) -> AsyncIterator[Stack]:
    """Both services with API keys on (no TLS)."""
    async with Stack(tmp_path, security_embedder, dict(AUTH_RETRIEVAL), dict(AUTH_MEMORY)) as running:
        yield running


@pytest.fixture
async def channel(stack: Stack) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(stack.memory_address) as opened:
        yield opened


async def create_key(channel: grpc.aio.Channel, tenant: str) -> str:
    stub: AdminStub = admin_pb2_grpc.AdminServiceStub(channel)
    created = await stub.CreateApiKey(
        admin.CreateApiKeyRequest(tenant_id=tenant, display_name=f"{tenant} test key"),
        metadata=bearer(ADMIN_KEY),
    )
    return created.secret


class Tenant(NamedTuple):
    """A tenant's MemoryService stub, its bearer metadata and one agent of its own."""

    stub: MemoryStub
    key: tuple[tuple[str, str]]
    agent_id: str


async def new_tenant(channel: grpc.aio.Channel, tenant: str) -> Tenant:
    """An API key for ``tenant`` (made with the admin key) and an agent named after it."""
    key = bearer(await create_key(channel, tenant))
    stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=tenant)), metadata=key)
    return Tenant(stub, key, agent.id)
