"""Tenant-scoped scoring, through a real RetrievalService on each engine: a tenant's search scores and
order depend only on its own documents. Another tenant loading documents that share (or skew) the
query's words, and differ in length, leaves every score of the first tenant's searches unchanged —
BM25's document frequencies, document count and mean length are the tenant's own.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.conversions import document_from_pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.text_index import TantivyTextIndex
from strata_retrieval.text_tenants import LEGACY_TEXT_FOLDERS, TEXT_FOLDER
from tests.retrieval.service_fixtures import ENGINES, MEMORIES, T0, Service, passage, running_service, search

QUERIES = ("green tea in the morning", "cat keyboard", "hiking trip Alps", "nurse hospital tea")


def _other_tenant() -> list[pb.Document]:
    """Documents of another tenant that would shift index-wide statistics: the query words made
    common (IDF down), rare words everywhere else, and long texts (mean length up)."""
    filler = " ".join(f"word{i}" for i in range(120))
    return [
        passage(f"noise-{i}", f"green tea cat tea morning {filler} hospital", tenant_id="tenant-2")
        for i in range(40)
    ] + [passage(f"long-{i}", f"{filler} {filler}", tenant_id="tenant-2") for i in range(40)]


async def _scores(service: Service, mode: pb.SearchMode.ValueType) -> list[list[tuple[str, float]]]:
    """Each query's hits as (id, that mode's score) in order."""
    found = []
    for query in QUERIES:
        response = await service.stub.Search(search(query, mode=mode, top_k=8))
        found.append(
            [
                (hit.document.id, hit.fts_score if mode == pb.SEARCH_MODE_FTS else hit.rrf_score)
                for hit in response.hits
            ]
        )
    return found


@pytest.mark.parametrize("engine", sorted(ENGINES))
async def test_another_tenants_documents_change_no_score(
    engine: str, tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    async with running_service(tmp_path / "data", embedder, **ENGINES[engine]) as service:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        fts_alone = await _scores(service, pb.SEARCH_MODE_FTS)
        hybrid_alone = await _scores(service, pb.SEARCH_MODE_HYBRID)
        assert all(fts_alone), "every query finds something by its words"

        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=_other_tenant()))

        assert await _scores(service, pb.SEARCH_MODE_FTS) == fts_alone
        assert await _scores(service, pb.SEARCH_MODE_HYBRID) == hybrid_alone
        hybrid = await service.stub.Search(search(QUERIES[0], top_k=8))
        other = await service.stub.Search(search(QUERIES[0], top_k=8, tenant_id="tenant-2"))
        assert {hit.document.id for hit in hybrid.hits}.isdisjoint(hit.document.id for hit in other.hits)


@pytest.mark.parametrize("backend", ["edge", "qdrant"])
async def test_a_shared_text_index_of_an_older_version_becomes_one_per_tenant(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, backend: str
) -> None:
    """A data folder laid out before tenant-scoped BM25 (one ``text/`` index for every tenant) is
    moved at start: each tenant's documents into its own index, from the vector index's documents
    (the Edge shard, or dense vectors in a Qdrant collection: here local mode in a folder), and the
    shared index removed."""
    data = tmp_path / "data"
    settings = {"vector_backend": backend, "qdrant_url": str(tmp_path / "qdrant")}
    other = [passage("o-1", "green tea for the other tenant", tenant_id="tenant-2")]
    async with running_service(data, embedder, **settings) as service:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[*MEMORIES, *other]))
        before = await _scores(service, pb.SEARCH_MODE_FTS)
    shutil.rmtree(data / TEXT_FOLDER)  # as an older version left it: the shared index only
    shared = TantivyTextIndex(data / LEGACY_TEXT_FOLDERS[0])
    shared.upsert([document_from_pb(MEMORIES[0], "documents[0]", lambda: T0)])
    shared.close()

    async with running_service(data, embedder, **settings) as service:
        assert not (data / LEGACY_TEXT_FOLDERS[0]).exists()
        assert await _scores(service, pb.SEARCH_MODE_FTS) == before
        found = await service.stub.Search(search("green tea", mode=pb.SEARCH_MODE_FTS, tenant_id="tenant-2"))
        assert [hit.document.id for hit in found.hits] == ["o-1"]
