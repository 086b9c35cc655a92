"""RetrievalService through a real gRPC server (a fresh service per test): idempotent upserts,
tenant isolation, deletes, restarts, start-up refusal and full pages under selective filters.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.main import RetrievalApp
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.settings import RetrievalSettings
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex
from tests.retrieval.service_fixtures import (
    ENGINES,
    MEMORIES,
    TENANT,
    Service,
    ids,
    passage,
    running_service,
    search,
)


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The settings selecting one engine of the behaviour suite."""
    return ENGINES[str(request.param)]


@pytest.fixture
async def service(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, engine: dict[str, Any]
) -> AsyncIterator[Service]:
    async with running_service(tmp_path / "data", embedder, **engine) as running:
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        yield running


async def test_a_filtered_search_returns_top_k_when_enough_documents_match(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, engine: dict[str, Any]
) -> None:
    noise = [passage(f"n{i}", f"green tea fact number {i}", minutes=i) for i in range(40)]
    rare = [passage(f"r{i}", f"an unrelated note about taxes {i}", tags=("rare",)) for i in range(5)]
    async with running_service(tmp_path / "data", embedder, **engine) as running:
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=noise + rare))
        for mode in (pb.SEARCH_MODE_VECTOR, pb.SEARCH_MODE_HYBRID):
            found = await ids(
                running, search("green tea", mode, top_k=5, tags=["rare"], vector_depth=5, fts_depth=5)
            )
            assert sorted(found) == [f"r{i}" for i in range(5)]


async def test_reupsert_is_idempotent_and_replaces_by_id(service: Service) -> None:
    await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
    stats = await service.stub.Stats(pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT)))
    assert stats.document_count == len(MEMORIES)
    changed = passage("p-cat", "The user's dog is called Biscuit", minutes=2, tags=("pets",))
    await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[changed]))
    assert "p-cat" not in await ids(service, search("Miso", pb.SEARCH_MODE_FTS))
    assert await ids(service, search("Biscuit", pb.SEARCH_MODE_FTS)) == ["p-cat"]
    assert (
        await service.stub.Stats(pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT)))
    ).document_count == 8


async def test_same_id_in_two_tenants_are_two_documents(service: Service) -> None:
    other = passage("p-cat", "another tenant's cat", tenant_id="tenant-2")
    await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[other]))
    mine = await service.stub.Search(search("Miso", pb.SEARCH_MODE_FTS))
    assert [(hit.document.id, hit.document.scope.tenant_id) for hit in mine.hits] == [("p-cat", TENANT)]
    found = await service.stub.Search(search("cat", pb.SEARCH_MODE_FTS, tenant_id="tenant-2"))
    assert [hit.document.text for hit in found.hits] == ["another tenant's cat"]


async def test_delete_by_ids_counts_what_existed(service: Service) -> None:
    request = pb.DeleteDocumentsRequest(
        ids=pb.DocumentIds(tenant_id=TENANT, ids=["p-tea", "m-2", "never-was"])
    )
    assert (await service.stub.DeleteDocuments(request)).deleted_count == 2
    assert {"p-tea", "m-2"}.isdisjoint(await ids(service, search("green tea", top_k=10)))
    assert (await service.stub.DeleteDocuments(request)).deleted_count == 0


async def test_delete_by_filter_removes_the_scope_only(service: Service) -> None:
    by_conversation = pb.DocumentFilter(tenant_id=TENANT, conversation_ids=["conv-1"])
    deleted = await service.stub.DeleteDocuments(pb.DeleteDocumentsRequest(filter=by_conversation))
    assert deleted.deleted_count == 2
    assert await ids(service, search("", top_k=10, kinds=[pb.DOCUMENT_KIND_MESSAGE])) == ["m-3"]
    assert set(await ids(service, search("tea", pb.SEARCH_MODE_FTS, top_k=10))) == {
        "p-tea",
        "p-other-archive",
        "m-3",
    }


async def test_writes_survive_a_restart(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, engine: dict[str, Any]
) -> None:
    if engine.get("qdrant_url") == ":memory:":  # the collection must outlive the process: local mode on disk
        engine = {**engine, "qdrant_url": str(tmp_path / "qdrant")}
    async with running_service(tmp_path / "data", embedder, **engine) as first:
        await first.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES[:2]))
    async with running_service(tmp_path / "data", embedder, **engine) as second:
        assert await ids(second, search("cat", pb.SEARCH_MODE_HYBRID, top_k=1)) == ["p-cat"]


async def test_calls_before_the_engine_is_open_are_unavailable(tmp_path: Path) -> None:
    app = RetrievalApp(RetrievalSettings(address="127.0.0.1:0", data_dir=tmp_path, grace_seconds=0))
    await app.server.start()  # bound, engine not attached yet
    try:
        async with grpc.aio.insecure_channel(app.address) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await retrieval_pb2_grpc.RetrievalServiceStub(channel).Search(search("tea"))
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await app.stop()


class HeldEmbedder:
    """The real embedder, except that once ``armed`` a batch of documents waits in the executor
    until ``release`` is set (the fault: a model that takes as long as the test needs)."""

    def __init__(self, inner: OnnxSentenceEmbedder) -> None:
        self.inner = inner
        self.armed = False
        self.embedding = threading.Event()
        self.release = threading.Event()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if self.armed:
            self.embedding.set()
            self.release.wait(timeout=30)
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.inner.embed_query(text)


async def test_a_long_upsert_does_not_block_other_calls(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    held = HeldEmbedder(embedder)
    async with running_service(tmp_path / "data", held) as service:
        held.armed = True
        request = pb.UpsertDocumentsRequest(documents=MEMORIES)
        upserting = asyncio.ensure_future(service.stub.UpsertDocuments(request))
        assert await asyncio.to_thread(held.embedding.wait, 30)  # the batch is in the embedder now
        health = health_pb2_grpc.HealthStub(service.channel)
        reply = await health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        tenant = pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT))
        stats = await service.stub.Stats(tenant, timeout=10)
        assert stats.document_count == 0  # answered while the embedder was busy, before the batch landed
        assert not upserting.done()
        held.release.set()
        assert (await upserting).upserted_count == len(MEMORIES)


async def test_the_qdrant_backend_setting_serves_the_same_contract(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    async with running_service(
        tmp_path / "data", embedder, vector_backend="qdrant", qdrant_url=":memory:"
    ) as qdrant:
        await qdrant.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        cat_query = search("what is the name of my cat", top_k=3, kinds=[pb.DOCUMENT_KIND_PASSAGE])
        assert (await ids(qdrant, cat_query))[0] == "p-cat"
        assert await ids(qdrant, search("", top_k=2, roles=["user"])) == ["m-3", "m-1"]
        stats = await qdrant.stub.Stats(pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT)))
        assert (stats.document_count, stats.passage_count) == (8, 5)


async def test_the_server_engine_keeps_nothing_on_local_disk(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    async with running_service(data_dir, embedder, **ENGINES["server"]) as server:
        await server.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        cat_query = search("what is the name of my cat", top_k=3, kinds=[pb.DOCUMENT_KIND_PASSAGE])
        hits = (await server.stub.Search(cat_query)).hits
        assert hits[0].document.id == "p-cat"
        assert (hits[0].vector_rank, hits[0].fts_rank) != (0, 0)
        await server.stub.DeleteDocuments(
            pb.DeleteDocumentsRequest(ids=pb.DocumentIds(tenant_id=TENANT, ids=["p-cat"]))
        )
        assert "p-cat" not in await ids(server, search("Miso the cat", pb.SEARCH_MODE_FTS))
    assert not data_dir.exists()  # no manifest, no shard, no text index: all of it is in the collection


async def test_the_server_engine_refuses_a_collection_built_with_another_model(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    url = str(tmp_path / "qdrant")  # local mode on disk stands in for the shared server
    QdrantJointIndex(url, IndexManifest("bge-small-en", embedder.dimension)).close()
    settings: dict[str, Any] = {"vector_backend": "server", "qdrant_url": url}
    async with running_service(tmp_path / "data", embedder, **settings) as refusing:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await refusing.stub.Search(search("tea"))
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "bge-small-en" in (caught.value.details() or "")
    async with running_service(
        tmp_path / "data", embedder, **settings, rebuild_on_model_change=True
    ) as rebuilt:
        await rebuilt.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES[:2]))
        assert await ids(rebuilt, search("cat", pb.SEARCH_MODE_FTS)) == ["p-cat"]
