"""Reindex never empties search (issue 14, items 2 and 5): cancelled part-way, every stored message
is still searchable; documents the store no longer holds are dropped at the end; a tenant may run a
bounded number of streams at once; a key revoked during a stream stops it.

Real services with API keys on; RetrievalService is asked directly (with the service key) which
documents it holds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

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
from tests.security.conftest import ADMIN_KEY, AUTH_MEMORY, AUTH_RETRIEVAL, SERVICE_KEY, bearer, searchable
from tests.servers import ServicePair

EOF = grpc.aio.EOF  # type: ignore[attr-defined]  # grpc-stubs omit it
MESSAGES = 300
Metadata = tuple[tuple[str, str]]


@pytest.fixture
async def stack(tmp_path: Path, system_embedder: OnnxSentenceEmbedder) -> AsyncIterator[ServicePair]:
    async with ServicePair(tmp_path, system_embedder, dict(AUTH_RETRIEVAL), dict(AUTH_MEMORY)) as running:
        yield running


async def _tenant(channel: grpc.aio.Channel, tenant: str) -> tuple[MemoryStub, Metadata, str, str]:
    """A tenant key, an agent, and ``MESSAGES`` messages written and searchable; returns the key id too."""
    admin_stub: AdminStub = admin_pb2_grpc.AdminServiceStub(channel)
    created = await admin_stub.CreateApiKey(
        admin.CreateApiKeyRequest(tenant_id=tenant), metadata=bearer(ADMIN_KEY)
    )
    key = bearer(created.secret)
    stub: MemoryStub = memory_service_pb2_grpc.MemoryServiceStub(channel)
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name=tenant)), metadata=key)
    messages = [
        pb.Message(role=pb.MESSAGE_ROLE_USER, content=f"note {i} about herons") for i in range(MESSAGES)
    ]
    await stub.AppendMessages(
        api.AppendMessagesRequest(agent_id=agent.id, messages=messages, wait_searchable=True),
        metadata=key,
        timeout=300,
    )
    return stub, key, agent.id, created.api_key.key_id


async def test_a_reindex_cancelled_mid_stream_leaves_every_stored_message_searchable(
    stack: ServicePair,
) -> None:
    async with grpc.aio.insecure_channel(stack.memory_address) as channel:
        stub, key, _, _ = await _tenant(channel, "tenant-a")
        assert await searchable(stack, "tenant-a") == MESSAGES
        call = stub.Reindex(api.ReindexRequest(batch_size=20), metadata=key)
        seen = 0
        async for progress in call:
            seen += 1
            if seen == 4:  # the plan, then three batches sent
                assert 0 < progress.documents_done < MESSAGES
                call.cancel()
                break
        assert await searchable(stack, "tenant-a") == MESSAGES


async def test_a_completed_reindex_drops_only_what_the_store_no_longer_holds(stack: ServicePair) -> None:
    async with grpc.aio.insecure_channel(stack.memory_address) as channel:
        stub, key, _, _ = await _tenant(channel, "tenant-a")
        stray = rpb.Document(
            id="message-stray",
            text="a heron the store never held",
            kind=rpb.DOCUMENT_KIND_MESSAGE,
            scope=rpb.Scope(tenant_id="tenant-a", agent_id="agent-gone"),
        )
        other = rpb.Document(
            id="message-other",
            text="another tenant's heron",
            kind=rpb.DOCUMENT_KIND_MESSAGE,
            scope=rpb.Scope(tenant_id="tenant-b"),
        )
        async with grpc.aio.insecure_channel(stack.retrieval_address) as retrieval_channel:
            retrieval: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel)
            await retrieval.UpsertDocuments(
                rpb.UpsertDocumentsRequest(documents=[stray, other]), metadata=bearer(SERVICE_KEY)
            )
        assert await searchable(stack, "tenant-a") == MESSAGES + 1
        progress = [p async for p in stub.Reindex(api.ReindexRequest(batch_size=100), metadata=key)]
        assert progress[-1].done
        assert progress[-1].documents_done == MESSAGES
        assert await searchable(stack, "tenant-a") == MESSAGES
        assert await searchable(stack, "tenant-b") == 1  # another tenant's documents are not touched


async def test_a_tenant_runs_one_reindex_stream_at_a_time(stack: ServicePair) -> None:
    async with grpc.aio.insecure_channel(stack.memory_address) as channel:
        stub, key, _, _ = await _tenant(channel, "tenant-a")
        first = stub.Reindex(api.ReindexRequest(batch_size=10), metadata=key)
        await first.read()  # the first stream is running (its plan was sent)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            async for _ in stub.Reindex(api.ReindexRequest(batch_size=10), metadata=key):
                pass
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "Reindex" in (refused.value.details() or "")
        assert (await _rest(first))[-1].done  # the first one was not disturbed
        progress = [p async for p in stub.Reindex(api.ReindexRequest(batch_size=100), metadata=key)]
        assert progress[-1].done  # and once it ended, the tenant may start another


async def test_a_key_revoked_during_a_reindex_stream_stops_it(stack: ServicePair) -> None:
    async with grpc.aio.insecure_channel(stack.memory_address) as channel:
        stub, key, _, key_id = await _tenant(channel, "tenant-a")
        call = stub.Reindex(api.ReindexRequest(batch_size=10), metadata=key)
        first = await call.read()
        assert isinstance(first, api.ReindexProgress)
        assert not first.done
        admin_stub: AdminStub = admin_pb2_grpc.AdminServiceStub(channel)
        await admin_stub.RevokeApiKey(admin.RevokeApiKeyRequest(key_id=key_id), metadata=bearer(ADMIN_KEY))
        with pytest.raises(grpc.aio.AioRpcError) as stopped:
            await _rest(call)
        assert stopped.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def _rest(call: Any) -> list[api.ReindexProgress]:
    """The messages left on a stream already read from with ``read()`` (the two APIs do not mix)."""
    rest = []
    while (progress := await call.read()) is not EOF:
        rest.append(progress)
    return rest
