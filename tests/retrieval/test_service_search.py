"""RetrievalService through a real gRPC server (read-only calls on one shared, seeded service):
search modes, hit fields, fusion weights, filters inside the legs, newest-first, stats, health, reflection.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.settings import RetrievalSettings
from tests.retrieval.service_fixtures import (
    ENGINES,
    MEMORIES,
    TENANT,
    Service,
    at,
    ids,
    running_service,
    search,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(ENGINES))
async def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> AsyncIterator[Service]:
    data_dir = tmp_path_factory.mktemp("search") / "data"
    async with running_service(data_dir, embedder, **ENGINES[request.param]) as running:
        response = await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        assert response.upserted_count == len(MEMORIES)
        yield running


@pytest.mark.parametrize("mode", [pb.SEARCH_MODE_VECTOR, pb.SEARCH_MODE_FTS, pb.SEARCH_MODE_HYBRID])
async def test_each_mode_finds_the_relevant_passage_first(
    service: Service, mode: pb.SearchMode.ValueType
) -> None:
    response = await service.stub.Search(
        search("what is the name of my cat", mode, kinds=[pb.DOCUMENT_KIND_PASSAGE])
    )
    assert response.hits[0].document.id == "p-cat"
    assert response.search_mode == mode
    assert all(hit.search_mode == mode for hit in response.hits)


async def test_vector_mode_understands_meaning_without_shared_words(service: Service) -> None:
    assert (await ids(service, search("kitten", pb.SEARCH_MODE_VECTOR, top_k=1)))[0] == "p-cat"
    assert await ids(service, search("kitten", pb.SEARCH_MODE_FTS)) == []


async def test_hits_carry_ranks_scores_and_the_stored_document(service: Service) -> None:
    response = await service.stub.Search(search("green tea", pb.SEARCH_MODE_HYBRID, top_k=8, rrf_k=10))
    first = response.hits[0]
    assert first.HasField("vector_rank")
    assert first.HasField("fts_rank")
    defaults = RetrievalSettings()  # the default leg weights
    weighted = ((defaults.vector_weight, first.vector_rank), (defaults.fts_weight, first.fts_rank))
    expected = sum(weight / (10 + rank) for weight, rank in weighted)
    assert first.rrf_score == pytest.approx(expected)
    vector_only = [hit for hit in response.hits if not hit.HasField("fts_rank")]
    assert vector_only  # "kitten"-like passages share no word with the query
    assert all(not hit.HasField("fts_score") and hit.HasField("vector_score") for hit in vector_only)
    by_id = {hit.document.id: hit.document for hit in response.hits}
    assert by_id["p-tea"] == MEMORIES[0]
    order = [(-hit.score, hit.document.id) for hit in response.hits]
    assert order == sorted(order)  # best first, equal scores by id (exact ties: test_ties.py)


async def test_single_leg_modes_leave_the_other_rank_unset(service: Service) -> None:
    for hit in (await service.stub.Search(search("tea", pb.SEARCH_MODE_VECTOR))).hits:
        assert hit.HasField("vector_rank")
        assert not hit.HasField("fts_rank")
    for hit in (await service.stub.Search(search("tea", pb.SEARCH_MODE_FTS))).hits:
        assert hit.HasField("fts_rank")
        assert not hit.HasField("vector_rank")


async def test_leg_weights_change_the_fusion(service: Service) -> None:
    request = search("tea morning", pb.SEARCH_MODE_HYBRID, top_k=8, vector_weight=1.0, fts_weight=0.0)
    vector_order = await ids(service, search("tea morning", pb.SEARCH_MODE_VECTOR, top_k=8))
    assert await ids(service, request) == vector_order


@pytest.mark.parametrize(
    ("filter_fields", "expected"),
    [
        ({"tags": ["pets", "travel"]}, {"p-cat", "p-trip"}),
        ({"tags": ["preferences", "food"], "tag_match": pb.TAG_MATCH_ALL}, {"p-tea"}),
        ({"tags": ["preferences", "pets"], "tag_match": pb.TAG_MATCH_ALL}, set()),
        ({"roles": ["assistant"]}, {"m-2"}),
        ({"kinds": [pb.DOCUMENT_KIND_MESSAGE], "conversation_ids": ["conv-2"]}, {"m-3"}),
        ({"archive_ids": ["arc-2"]}, {"p-other-archive"}),
        ({"agent_ids": ["agent-1"], "roles": ["user"]}, {"m-1", "m-3"}),
        ({"created_at": pb.TimeRange(start=at(2), end=at(3))}, {"p-cat", "p-trip"}),
        ({"created_at": pb.TimeRange(start=at(7))}, {"m-2", "m-3"}),
        ({"tenant_id": "someone-else"}, set()),
        ({"agent_ids": ["no-such-agent"]}, set()),
    ],
)
@pytest.mark.parametrize("mode", [pb.SEARCH_MODE_VECTOR, pb.SEARCH_MODE_HYBRID])
async def test_filters_apply_inside_the_legs(
    service: Service, filter_fields: dict[str, object], expected: set[str], mode: pb.SearchMode.ValueType
) -> None:
    assert (
        set(await ids(service, search("anything at all about tea", mode, top_k=8, **filter_fields)))
        == expected
    )


async def test_empty_query_lists_the_newest_documents_in_scope(service: Service) -> None:
    for text in ("", "   "):
        assert await ids(service, search(text, pb.SEARCH_MODE_HYBRID, top_k=3)) == ["m-3", "m-2", "m-1"]
    assert await ids(service, search("", pb.SEARCH_MODE_FTS, top_k=2, kinds=[pb.DOCUMENT_KIND_PASSAGE])) == [
        "p-other-archive",
        "p-job",
    ]


async def test_search_in_an_unknown_scope_is_empty_not_an_error(service: Service) -> None:
    assert await ids(service, search("tea", tenant_id="nobody")) == []
    assert await ids(service, search("", tenant_id="nobody")) == []


async def test_stats_count_by_kind_and_list_distinct_tags(service: Service) -> None:
    stats = await service.stub.Stats(pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT)))
    assert (stats.document_count, stats.passage_count, stats.message_count) == (8, 5, 3)
    assert list(stats.tags) == ["food", "pets", "plans", "preferences", "travel", "work"]
    assert stats.embedding_model == "sentence-transformers/all-MiniLM-L6-v2:int8"  # the default
    assert stats.embedding_dimension == 384
    scoped = await service.stub.Stats(
        pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT, archive_ids=["arc-2"]))
    )
    assert (scoped.document_count, list(scoped.tags)) == (1, [])
    messages = await service.stub.Stats(
        pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT, kinds=[pb.DOCUMENT_KIND_MESSAGE]))
    )
    assert (messages.document_count, messages.passage_count) == (3, 0)


async def test_health_is_serving_and_reflection_lists_the_service(service: Service) -> None:
    health = health_pb2_grpc.HealthStub(service.channel)
    for name in ("", "strata.retrieval.v1.RetrievalService"):
        reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
    reflection = reflection_pb2_grpc.ServerReflectionStub(service.channel)
    call = reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names = {s.name async for reply in call for s in reply.list_services_response.service}
    assert "strata.retrieval.v1.RetrievalService" in names


async def test_document_ids_are_listed_page_by_page_within_the_filter(service: Service) -> None:
    everything = pb.DocumentFilter(tenant_id=TENANT)
    listed: list[str] = []
    token = ""
    while True:
        page = await service.stub.ListDocumentIds(
            pb.ListDocumentIdsRequest(filter=everything, page_size=2, page_token=token)
        )
        assert len(page.ids) <= 2
        listed += page.ids
        if not (token := page.next_page_token):
            break
    assert sorted(listed) == sorted(d.id for d in MEMORIES if d.scope.tenant_id == TENANT)
    passages = pb.DocumentFilter(tenant_id=TENANT, kinds=[pb.DOCUMENT_KIND_PASSAGE])
    only = await service.stub.ListDocumentIds(pb.ListDocumentIdsRequest(filter=passages))
    assert sorted(only.ids) == sorted(
        d.id for d in MEMORIES if d.scope.tenant_id == TENANT and d.kind == pb.DOCUMENT_KIND_PASSAGE
    )
    assert only.next_page_token == ""
    other = await service.stub.ListDocumentIds(
        pb.ListDocumentIdsRequest(filter=pb.DocumentFilter(tenant_id="nobody"))
    )
    assert list(other.ids) == []
