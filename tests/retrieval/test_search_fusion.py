"""RetrievalService's fusions through a real gRPC server on each engine: a service left at its
defaults ranks hybrid hits by the blend its settings name (``fusion=blend``, ``fusion_alpha``,
``fusion_rank_k``, the default leg weights); ``fusion=dbsf`` by distribution-based score fusion;
``fusion=rrf`` by RRF. Under every fusion a hit's ``score`` is what hits are ordered by and its
``rrf_score`` keeps its meaning, weight / (k + rank) summed; request weights are honoured."""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
import pytest_asyncio

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.model import Fusion
from strata_retrieval.settings import RetrievalSettings
from tests.retrieval.service_fixtures import ENGINES, MEMORIES, Service, running_service, search

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEFAULTS = RetrievalSettings()


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(ENGINES))
async def engine(request: pytest.FixtureRequest) -> dict[str, Any]:
    return dict(ENGINES[request.param])


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["default", "dbsf", "rrf"])
async def service(
    request: pytest.FixtureRequest,
    engine: dict[str, Any],
    tmp_path_factory: pytest.TempPathFactory,
    embedder: OnnxSentenceEmbedder,
) -> AsyncIterator[tuple[str, Service]]:
    data_dir = tmp_path_factory.mktemp("fusion") / "data"
    fusion = {} if request.param == "default" else {"fusion": request.param}
    async with running_service(data_dir, embedder, **fusion, **engine) as running:
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        yield request.param, running


def _scaled(hits: Iterable[pb.SearchHit], leg: str) -> dict[str, float]:
    """Each hit's score in ``leg`` scaled as DBSF scales it: by that leg's mean and 3 sd."""
    found = [hit for hit in hits if hit.HasField(f"{leg}_score")]  # type: ignore[arg-type]
    scores = [getattr(hit, f"{leg}_score") for hit in found]
    mean, sd = statistics.fmean(scores), statistics.pstdev(scores)
    return {hit.document.id: (getattr(hit, f"{leg}_score") - (mean - 3 * sd)) / (6 * sd) for hit in found}


def _rrf(hit: pb.SearchHit, vector_weight: float, k: float = 60.0) -> float:
    weighted = ((vector_weight, hit.vector_rank), (DEFAULTS.fts_weight, hit.fts_rank))
    return sum(weight / (k + rank) for weight, rank in weighted if rank)


def _expected(fusion: Fusion, hits: list[pb.SearchHit], vector_weight: float) -> dict[str, float]:
    """Each hit's fused score as the settings say ``fusion`` computes it."""
    if fusion is Fusion.RRF:
        return {hit.document.id: _rrf(hit, vector_weight) for hit in hits}
    alpha, k = (DEFAULTS.fusion_alpha, DEFAULTS.fusion_rank_k) if fusion is Fusion.BLEND else (1.0, 0.0)
    scaled = {"vector": _scaled(hits, "vector"), "fts": _scaled(hits, "fts")}
    out = {}
    for hit in hits:
        total = 0.0
        for leg, weight in (("vector", vector_weight), ("fts", DEFAULTS.fts_weight)):
            rank = getattr(hit, f"{leg}_rank") if hit.HasField(f"{leg}_rank") else None  # type: ignore[arg-type]
            if rank:
                total += weight * (alpha * scaled[leg][hit.document.id] + (1 - alpha) * (k + 1) / (k + rank))
        out[hit.document.id] = total
    return out


@pytest.mark.parametrize("vector_weight", [None, 0.35])
async def test_hybrid_hits_are_ranked_by_the_fusion_the_settings_name(
    service: tuple[str, Service], vector_weight: float | None
) -> None:
    name, running = service
    fusion = DEFAULTS.fusion if name == "default" else Fusion(name)
    weights: dict[str, Any] = (
        {} if vector_weight is None else {"vector_weight": vector_weight, "fts_weight": 1.0}
    )
    # every document of the tenant fits in top_k, so the hits hold each leg's whole candidate list
    response = await running.stub.Search(search("green tea in the morning", top_k=len(MEMORIES), **weights))
    hits = list(response.hits)
    assert len([hit for hit in hits if hit.HasField("vector_rank")]) == len(MEMORIES)
    assert 2 <= len([hit for hit in hits if hit.HasField("fts_rank")]) < len(MEMORIES)  # BM25 misses some
    w_vec = DEFAULTS.vector_weight if vector_weight is None else vector_weight
    expected = _expected(fusion, hits, w_vec)
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.document.id])
        assert hit.rrf_score == pytest.approx(_rrf(hit, w_vec))
    order = [(-hit.score, hit.document.id) for hit in hits]
    assert order == sorted(order)
    assert hits[0].document.id in {"p-tea", "m-2"}


async def test_the_default_is_the_blend_chosen_across_corpora() -> None:
    # bench/results/fusion_corpus_out.md; a change here is a change of the served default
    assert (DEFAULTS.fusion, DEFAULTS.fusion_alpha, DEFAULTS.fusion_rank_k) == (Fusion.BLEND, 0.5, 5.0)
    assert (DEFAULTS.vector_weight, DEFAULTS.fts_weight) == (0.75, 1.0)


async def test_single_leg_modes_keep_their_order_and_rrf_scores(service: tuple[str, Service]) -> None:
    response = await service[1].stub.Search(search("green tea", pb.SEARCH_MODE_FTS, top_k=3))
    assert [hit.fts_rank for hit in response.hits] == [1, 2, 3]
    assert [hit.score for hit in response.hits] == pytest.approx([1 / 61, 1 / 62, 1 / 63])
    assert [hit.rrf_score for hit in response.hits] == [hit.score for hit in response.hits]
