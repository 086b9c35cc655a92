"""RetrievalService's refusals through a real gRPC server: every bad input names its field,
hostile query text never fails, and an index built with another embedding model is refused.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import pytest_asyncio
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.limits import Limits
from strata_retrieval.manifest import MANIFEST_NAME
from strata_serving.status import bad_request_from, error_info_from
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

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(ENGINES))
async def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> AsyncIterator[Service]:
    data_dir = tmp_path_factory.mktemp("errors") / "data"
    async with running_service(data_dir, embedder, **ENGINES[request.param]) as running:
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        yield running


async def refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


def violated_fields(error: grpc.aio.AioRpcError) -> list[str]:
    bad_request = bad_request_from(error.trailing_metadata())
    assert bad_request is not None
    return [violation.field for violation in bad_request.field_violations]


def upsert(*documents: pb.Document) -> pb.UpsertDocumentsRequest:
    return pb.UpsertDocumentsRequest(documents=list(documents))


BAD_UPSERTS = [
    (upsert(), "documents"),
    (upsert(*(passage(f"d{i}", "x") for i in range(513))), "documents"),
    (upsert(passage("same", "a"), passage("same", "b")), "documents[1].id"),
    (upsert(passage("", "no id")), "documents[0].id"),
    (upsert(passage("x" * 257, "long id")), "documents[0].id"),
    (upsert(passage("big", "w" * 32_769)), "documents[0].text"),
    (upsert(passage("no-tenant", "text", tenant_id="")), "documents[0].scope.tenant_id"),
    (upsert(pb.Document(id="k", text="t", scope=pb.Scope(tenant_id=TENANT))), "documents[0].kind"),
    (upsert(passage("tags", "t", tags=("a", "a"))), "documents[0].tags"),
    (upsert(passage("tags", "t", tags=("",))), "documents[0].tags[0]"),
]


@pytest.mark.parametrize(("request_", "field"), BAD_UPSERTS)
async def test_bad_upserts_are_invalid_argument_naming_the_field(
    service: Service, request_: pb.UpsertDocumentsRequest, field: str
) -> None:
    error = await refused(service.stub.UpsertDocuments(request_))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert violated_fields(error) == [field]


BAD_SEARCHES = [
    (search("tea", top_k=0), "top_k"),
    (search("tea", top_k=-3), "top_k"),
    (search("tea", top_k=101), "top_k"),
    (search("tea", pb.SEARCH_MODE_UNSPECIFIED), "mode"),
    (search("tea", 7), "mode"),  # type: ignore[arg-type]  # an enum number this server does not know
    (search("tea", tenant_id=""), "filter.tenant_id"),
    (search("tea", rrf_k=-1), "rrf_k"),
    (search("tea", rrf_k=float("nan")), "rrf_k"),
    (search("tea", fts_weight=-0.5), "fts_weight"),
    (search("tea", top_k=10, vector_depth=5), "vector_depth"),
    (search("tea", fts_depth=1001), "fts_depth"),
    (search("q" * (Limits().max_query_chars + 1)), "query"),
    (search("tea", kinds=[pb.DOCUMENT_KIND_UNSPECIFIED]), "filter.kinds[0]"),
    (search("tea", tags=[""]), "filter.tags[0]"),
    (search("tea", tags=[f"t{i}" for i in range(Limits().max_tags + 1)]), "filter.tags"),
    (search("q", archive_ids=[str(i) for i in range(Limits().max_filter_values + 1)]), "filter.archive_ids"),
]


def _inverted_range() -> pb.SearchRequest:
    request = search("tea")
    request.filter.created_at.start.FromSeconds(2_000)
    request.filter.created_at.end.FromSeconds(1_000)
    return request


@pytest.mark.parametrize(("request_", "field"), [*BAD_SEARCHES, (_inverted_range(), "filter.created_at")])
async def test_bad_searches_are_invalid_argument_naming_the_field(
    service: Service, request_: pb.SearchRequest, field: str
) -> None:
    error = await refused(service.stub.Search(request_))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert violated_fields(error) == [field]


async def test_bad_deletes_and_stats_are_invalid_argument(service: Service) -> None:
    empty = await refused(service.stub.DeleteDocuments(pb.DeleteDocumentsRequest()))
    assert violated_fields(empty) == ["selector"]
    no_tenant = await refused(
        service.stub.DeleteDocuments(pb.DeleteDocumentsRequest(ids=pb.DocumentIds(ids=["a"])))
    )
    assert violated_fields(no_tenant) == ["ids.tenant_id"]
    by_filter = pb.DeleteDocumentsRequest(filter=pb.DocumentFilter())
    assert violated_fields(await refused(service.stub.DeleteDocuments(by_filter))) == ["filter.tenant_id"]
    stats = await refused(service.stub.Stats(pb.StatsRequest()))
    assert violated_fields(stats) == ["filter.tenant_id"]


async def test_a_refused_batch_changes_nothing(service: Service) -> None:
    await refused(
        service.stub.UpsertDocuments(upsert(passage("fresh", "brand new words"), passage("", "bad")))
    )
    assert await ids(service, search("brand new words", pb.SEARCH_MODE_FTS)) == []


HOSTILE = [
    'he said "hello',
    "foo:bar",
    "tenant_id:tenant-2 tea",
    "deadline: Friday (tentatively",
    "cats AND",
    "NOT cats",
    "-tea",
    "IN [a b]",
    "*",
    "\\",
    '"',
    ")",
    "{}",
    "C++ x^2 a && b || !c",
    "🙂🍵 tea",
    "",
    "_",
    "tea^100 OR text:*",
    "\x01\x7f control characters",  # a NUL is refused (below), other control characters are text
]


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("mode", [pb.SEARCH_MODE_FTS, pb.SEARCH_MODE_HYBRID])
async def test_hostile_query_text_never_fails(
    service: Service, text: str, mode: pb.SearchMode.ValueType
) -> None:
    response = await service.stub.Search(search(text, mode, top_k=10))
    assert all(hit.document.scope.tenant_id == TENANT for hit in response.hits)


def _with_metadata(document: pb.Document, metadata: dict[str, str]) -> pb.Document:
    document.metadata.update(metadata)
    return document


NUL_REQUESTS = [
    ("UpsertDocuments", upsert(passage("nul", "tea\x00time")), "documents[0].text"),
    ("UpsertDocuments", upsert(passage("nul", "tea", tags=("a\x00",))), "documents[0].tags[0]"),
    (
        "UpsertDocuments",
        upsert(_with_metadata(passage("nul", "tea"), {"k\x00": "v"})),
        "documents[0].metadata",
    ),
    ("Search", search("\x00\x01 control characters"), "query"),
    ("Search", search("tea", tenant_id="tenant-1\x00"), "filter.tenant_id"),
]


@pytest.mark.parametrize(("method", "request_", "field"), NUL_REQUESTS)
async def test_a_nul_in_any_string_field_or_map_key_is_refused_naming_it(
    service: Service, method: str, request_: Any, field: str
) -> None:
    error = await refused(getattr(service.stub, method)(request_))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = error_info_from(error.trailing_metadata())
    assert info is not None
    assert info.reason == "NUL_CHARACTER"
    assert violated_fields(error) == [field]
    assert "nul" not in await ids(service, search("tea", pb.SEARCH_MODE_FTS, top_k=20))


async def test_an_enum_number_the_proto_does_not_define_names_its_reason(service: Service) -> None:
    error = await refused(service.stub.Search(search("tea", 7)))  # type: ignore[arg-type]
    info = error_info_from(error.trailing_metadata())
    assert info is not None
    assert info.reason == "UNKNOWN_ENUM_VALUE"
    assert violated_fields(error) == ["mode"]


async def test_field_syntax_in_the_query_cannot_reach_another_tenant(service: Service) -> None:
    response = await service.stub.Search(
        search("tenant_id:tenant-1 tea", pb.SEARCH_MODE_FTS, tenant_id="tenant-2")
    )
    assert list(response.hits) == []


async def test_an_index_built_with_another_model_is_refused(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / MANIFEST_NAME).write_text(
        json.dumps({"embedding_model": "bge-small-en", "embedding_dimension": 384})
    )
    async with running_service(data_dir, embedder) as refusing:
        for call in (
            refusing.stub.Search(search("tea")),
            refusing.stub.UpsertDocuments(upsert(passage("a", "b"))),
            refusing.stub.Stats(pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT))),
        ):
            error = await refused(call)
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "bge-small-en" in (error.details() or "")
            info = error_info_from(error.trailing_metadata())
            assert info is not None
            assert info.reason == "EMBEDDING_MODEL_MISMATCH"
            assert info.metadata["configured_model"] == embedder.name


async def test_a_refusing_service_reports_not_serving_and_still_says_why(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    """A replica that refuses every call must not look healthy: a mesh or Kubernetes readiness probe
    would keep sending it traffic (every search failing) while its peers could answer. It reports
    NOT_SERVING for the server and the service, and a call still says why."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / MANIFEST_NAME).write_text(
        json.dumps({"embedding_model": "bge-small-en", "embedding_dimension": 384})
    )
    async with running_service(data_dir, embedder) as refusing:
        health = health_pb2_grpc.HealthStub(refusing.channel)
        for name in ("", "strata.retrieval.v1.RetrievalService"):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name))
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING, name
        error = await refused(refusing.stub.Search(search("tea")))
        info = error_info_from(error.trailing_metadata())
        assert info is not None
        assert info.reason == "EMBEDDING_MODEL_MISMATCH"
    async with running_service(tmp_path / "fixed", embedder) as fixed:
        reply = await health_pb2_grpc.HealthStub(fixed.channel).Check(health_pb2.HealthCheckRequest())
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_rebuild_on_model_change_starts_over(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / MANIFEST_NAME).write_text(
        json.dumps({"embedding_model": "bge-small-en", "embedding_dimension": 384})
    )
    async with running_service(data_dir, embedder, rebuild_on_model_change=True) as rebuilt:
        stats = await rebuilt.stub.Stats(pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT)))
        assert stats.document_count == 0
    assert json.loads((data_dir / MANIFEST_NAME).read_text())["embedding_model"] == embedder.name


async def test_bad_document_id_listings_are_invalid_argument(service: Service) -> None:
    flt = pb.DocumentFilter(tenant_id=TENANT)
    no_tenant = await refused(service.stub.ListDocumentIds(pb.ListDocumentIdsRequest()))
    assert violated_fields(no_tenant) == ["filter.tenant_id"]
    forged = await refused(
        service.stub.ListDocumentIds(pb.ListDocumentIdsRequest(filter=flt, page_token="x"))
    )
    assert violated_fields(forged) == ["page_token"]
    for size in (-1, 10_001):
        bad = await refused(
            service.stub.ListDocumentIds(pb.ListDocumentIdsRequest(filter=flt, page_size=size))
        )
        assert violated_fields(bad) == ["page_size"]
