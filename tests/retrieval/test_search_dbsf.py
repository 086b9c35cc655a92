"""RetrievalService configured with ``fusion=dbsf``, through a real gRPC server on each engine: a hybrid
search ranks by distribution-based score fusion of the two legs' scores (weights per request honoured),
and a service left at its default still fuses by RRF."""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.retrieval.service_fixtures import ENGINES, MEMORIES, Service, running_service, search

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(ENGINES))
async def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> AsyncIterator[Service]:
    data_dir = tmp_path_factory.mktemp("dbsf") / "data"
    async with running_service(data_dir, embedder, fusion="dbsf", **ENGINES[request.param]) as running:
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        yield running


def _scaled(hits: list[pb.SearchHit], leg: str) -> dict[str, float]:
    """Each hit's score in ``leg`` scaled as DBSF scales it: by that leg's mean and 3 sd."""
    found = [hit for hit in hits if hit.HasField(f"{leg}_score")]  # type: ignore[arg-type]
    scores = [getattr(hit, f"{leg}_score") for hit in found]
    mean, sd = statistics.fmean(scores), statistics.pstdev(scores)
    return {hit.document.id: (getattr(hit, f"{leg}_score") - (mean - 3 * sd)) / (6 * sd) for hit in found}


@pytest.mark.parametrize("vector_weight", [1.0, 0.35])
async def test_hybrid_hits_are_ranked_by_the_weighted_sum_of_scaled_leg_scores(
    service: Service, vector_weight: float
) -> None:
    # every document of the tenant fits in top_k, so the hits hold each leg's whole candidate list
    response = await service.stub.Search(
        search("green tea in the morning", top_k=len(MEMORIES), vector_weight=vector_weight)
    )
    hits = list(response.hits)
    vector, fts = _scaled(hits, "vector"), _scaled(hits, "fts")
    assert len(vector) == len(MEMORIES)
    assert 2 <= len(fts) < len(MEMORIES)  # BM25 misses some
    for hit in hits:
        expected = vector_weight * vector[hit.document.id] + fts.get(hit.document.id, 0.0)
        assert hit.rrf_score == pytest.approx(expected)
        assert hit.rrf_score != pytest.approx(
            sum(1 / (60 + rank) for rank in (hit.vector_rank, hit.fts_rank) if rank)
        )
    order = [(-hit.rrf_score, hit.document.id) for hit in hits]
    assert order == sorted(order)
    assert hits[0].document.id in {"p-tea", "m-2"}


async def test_single_leg_modes_are_unchanged(service: Service) -> None:
    response = await service.stub.Search(search("green tea", pb.SEARCH_MODE_FTS, top_k=3))
    assert [hit.fts_rank for hit in response.hits] == [1, 2, 3]


async def test_the_default_service_still_fuses_by_rank(
    tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> None:
    async with running_service(tmp_path_factory.mktemp("rrf") / "data", embedder) as running:
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        response = await running.stub.Search(search("green tea", top_k=3))
    for hit in response.hits:
        ranks = [rank for rank in (hit.vector_rank, hit.fts_rank) if rank]
        assert hit.rrf_score == pytest.approx(sum(1 / (60 + rank) for rank in ranks))
