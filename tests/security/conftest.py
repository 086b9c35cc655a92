"""Secured stacks: RetrievalService (real embedder) and MemoryService with API keys and/or TLS."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import NamedTuple

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
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.security.certificates import Pki, make_pki
from tests.servers import ServicePair

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


async def searchable(stack: ServicePair, tenant: str) -> int:
    """How many documents RetrievalService holds for ``tenant`` (asked with the service key)."""
    async with grpc.aio.insecure_channel(stack.retrieval_address) as channel:
        retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        stats = await retrieval.Stats(
            rpb.StatsRequest(filter=rpb.DocumentFilter(tenant_id=tenant)), metadata=bearer(SERVICE_KEY)
        )
    return stats.document_count


AUTH_MEMORY = {"auth_enabled": True, "admin_api_key": ADMIN_KEY, "retrieval_api_key": SERVICE_KEY}
AUTH_RETRIEVAL = {"api_key": SERVICE_KEY}


@pytest.fixture
async def stack(tmp_path: Path, security_embedder: OnnxSentenceEmbedder) -> AsyncIterator[ServicePair]:
    """Both services with API keys on (no TLS)."""
    async with ServicePair(tmp_path, security_embedder, dict(AUTH_RETRIEVAL), dict(AUTH_MEMORY)) as running:
        yield running


@pytest.fixture
async def channel(stack: ServicePair) -> AsyncIterator[grpc.aio.Channel]:
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
