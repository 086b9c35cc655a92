"""MemoryService's RetrievalConnection: what each RetrievalService failure becomes (the module docstring of
``indexing/retrieval_connection.py``), the credentials and deadlines it sends, and the delivery metrics.

RetrievalService is a gRPC stand-in on a free port that fails each call as told: it exists to inject
the faults (a full disk, a refusal, revoked credentials, an outage) a real one produces rarely.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client import CollectorRegistry

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.domain.errors import RetrievalUnavailable
from strata_memory.indexing.retrieval_connection import INDEX_DISK_FULL, RetrievalConnection
from strata_memory.metrics import DeliveryMetrics
from strata_serving.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, StrataError
from strata_serving.status import STATUS_DETAILS_KEY, rich_status
from strata_serving.tls import channel_credentials
from tests.security.certificates import _ca, _leaf

DOCUMENT = rpb.Document(id="passage-1", text="t", scope=rpb.Scope(tenant_id="t"))


@dataclass
class Fault:
    code: grpc.StatusCode
    reason: str = ""


@dataclass
class StandIn(retrieval_pb2_grpc.RetrievalServiceServicer):
    """Answers (or fails with ``fault``) and records each call's metadata and time remaining."""

    fault: Fault | None = None
    ids: list[str] = field(default_factory=list)
    calls: list[tuple[str, dict[str, str], float | None]] = field(default_factory=list)

    async def _answer(self, method: str, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        metadata = {
            key: value for key, value in context.invocation_metadata() or () if isinstance(value, str)
        }
        self.calls.append((method, metadata, context.time_remaining()))
        if self.fault is not None:
            error = StrataError("injected", reason=self.fault.reason) if self.fault.reason else None
            trailing = ((STATUS_DETAILS_KEY, rich_status(error).SerializeToString()),) if error else ()
            await context.abort(self.fault.code, "injected fault", trailing_metadata=trailing)

    async def UpsertDocuments(self, request: Any, context: Any) -> rpb.UpsertDocumentsResponse:  # noqa: N802
        await self._answer("upsert", context)
        return rpb.UpsertDocumentsResponse()

    async def DeleteDocuments(self, request: Any, context: Any) -> rpb.DeleteDocumentsResponse:  # noqa: N802
        await self._answer("delete", context)
        return rpb.DeleteDocumentsResponse()

    async def FindDocuments(self, request: Any, context: Any) -> rpb.FindDocumentsResponse:  # noqa: N802
        await self._answer("find", context)
        return rpb.FindDocumentsResponse()

    async def Stats(self, request: Any, context: Any) -> rpb.StatsResponse:  # noqa: N802
        await self._answer("stats", context)
        return rpb.StatsResponse()

    async def Search(self, request: Any, context: Any) -> rpb.SearchResponse:  # noqa: N802
        await self._answer("search", context)
        return rpb.SearchResponse()

    async def ListDocumentIds(self, request: Any, context: Any) -> rpb.ListDocumentIdsResponse:  # noqa: N802
        await self._answer("list", context)
        start = int(request.page_token or 0)
        end = start + request.page_size
        token = str(end) if end < len(self.ids) else ""
        return rpb.ListDocumentIdsResponse(ids=self.ids[start:end], next_page_token=token)


@dataclass
class Running:
    stand_in: StandIn
    address: str


@pytest.fixture
async def retrieval() -> AsyncIterator[Running]:
    stand_in = StandIn()
    server = grpc.aio.server()
    retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(stand_in, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield Running(stand_in, f"127.0.0.1:{port}")
    finally:
        await server.stop(0)


def delete_request() -> rpb.DeleteDocumentsRequest:
    return rpb.DeleteDocumentsRequest(ids=rpb.DocumentIds(tenant_id="t", ids=["passage-1"]))


@pytest.mark.parametrize(
    "code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNKNOWN]
)
async def test_transport_failures_become_retrieval_unavailable(
    retrieval: Running, code: grpc.StatusCode
) -> None:
    retrieval.stand_in.fault = Fault(code)
    client = RetrievalConnection(retrieval.address)
    try:
        with pytest.raises(RetrievalUnavailable) as failed:
            await client.upsert([DOCUMENT])
        assert failed.value.metadata == {"address": retrieval.address, "status": code.name}
        assert "writes are kept" in failed.value.message
    finally:
        await client.close()


async def test_a_full_index_disk_is_transient_but_other_resource_refusals_are_not(retrieval: Running) -> None:
    client = RetrievalConnection(retrieval.address)
    try:
        retrieval.stand_in.fault = Fault(grpc.StatusCode.RESOURCE_EXHAUSTED, INDEX_DISK_FULL)
        with pytest.raises(RetrievalUnavailable) as full:
            await client.upsert([DOCUMENT])
        assert "disk is full" in full.value.message
        assert full.value.metadata["status"] == "RESOURCE_EXHAUSTED"
        for reason in ("TOO_LARGE", ""):
            retrieval.stand_in.fault = Fault(grpc.StatusCode.RESOURCE_EXHAUSTED, reason)
            with pytest.raises(grpc.aio.AioRpcError) as refused:  # a refusal of these documents
                await client.upsert([DOCUMENT])
            assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        await client.close()


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED])
async def test_refused_credentials_keep_the_jobs_queued_and_say_what_to_check(
    retrieval: Running, code: grpc.StatusCode
) -> None:
    retrieval.stand_in.fault = Fault(code)
    client = RetrievalConnection(retrieval.address)
    try:
        with pytest.raises(RetrievalUnavailable) as failed:
            await client.delete(delete_request())
        assert "STRATA_MEMORY_RETRIEVAL_API_KEY" in failed.value.message
        assert failed.value.metadata["status"] == code.name
    finally:
        await client.close()


async def test_a_refused_write_keeps_its_status_so_the_outbox_can_isolate_it(retrieval: Running) -> None:
    retrieval.stand_in.fault = Fault(grpc.StatusCode.INVALID_ARGUMENT)
    client = RetrievalConnection(retrieval.address)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await client.upsert([DOCUMENT])
        assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("code", "category"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidArgument),
        (grpc.StatusCode.FAILED_PRECONDITION, FailedPrecondition),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, ResourceExhausted),
    ],
)
async def test_a_refused_search_reaches_the_caller_with_its_status(
    retrieval: Running, code: grpc.StatusCode, category: type[StrataError]
) -> None:
    retrieval.stand_in.fault = Fault(code)
    client = RetrievalConnection(retrieval.address)
    try:
        with pytest.raises(category) as refused:
            await client.search(rpb.SearchRequest(query="q", filter=rpb.DocumentFilter(tenant_id="t")))
        assert type(refused.value) is category
        assert refused.value.reason == f"RETRIEVAL_{code.name}"
        assert "injected fault" in refused.value.message
        retrieval.stand_in.fault = Fault(grpc.StatusCode.NOT_FOUND)
        with pytest.raises(grpc.aio.AioRpcError):  # not the caller's doing: as it came
            await client.search(rpb.SearchRequest(query="q", filter=rpb.DocumentFilter(tenant_id="t")))
    finally:
        await client.close()


async def test_the_service_key_is_sent_as_a_bearer_token(retrieval: Running) -> None:
    for key, expected in (("s3cret", "Bearer s3cret"), (None, None)):
        client = RetrievalConnection(retrieval.address, api_key=key)
        try:
            await client.delete(delete_request())
        finally:
            await client.close()
        _, metadata, _ = retrieval.stand_in.calls[-1]
        assert metadata.get("authorization") == expected


async def test_upserts_get_at_least_a_minute_and_other_calls_the_configured_timeout(
    retrieval: Running,
) -> None:
    client = RetrievalConnection(retrieval.address, timeout=2.0)
    try:
        await client.upsert([DOCUMENT])
        await client.delete(delete_request())
        await client.search(rpb.SearchRequest(query="q", filter=rpb.DocumentFilter(tenant_id="t")))
    finally:
        await client.close()
    remaining = {method: seconds for method, _, seconds in retrieval.stand_in.calls}
    assert 30 < (remaining["upsert"] or 0) <= 60.5  # embedding a batch takes time (60 s; 0.5 s as below)
    for method in ("delete", "search"):
        assert 0 < (remaining[method] or 0) <= 2.5  # 2 s, read on the server with its clock


async def test_ids_are_read_a_page_at_a_time_until_the_last(
    retrieval: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    from strata_memory.indexing import retrieval_connection

    monkeypatch.setattr(retrieval_connection, "ID_PAGE", 2)
    retrieval.stand_in.ids = [f"passage-{i}" for i in range(5)]
    client = RetrievalConnection(retrieval.address)
    try:
        pages = [page async for page in client.list_ids(rpb.DocumentFilter(tenant_id="t"))]
        assert pages == [["passage-0", "passage-1"], ["passage-2", "passage-3"], ["passage-4"]]
        retrieval.stand_in.fault = Fault(grpc.StatusCode.UNAVAILABLE)
        with pytest.raises(RetrievalUnavailable):
            [page async for page in client.list_ids(rpb.DocumentFilter(tenant_id="t"))]
    finally:
        await client.close()


async def test_deliveries_are_counted_by_outcome(retrieval: Running) -> None:
    registry = CollectorRegistry()
    client = RetrievalConnection(retrieval.address, deliveries=DeliveryMetrics(registry))
    try:
        await client.upsert([DOCUMENT, DOCUMENT])
        await client.delete(delete_request())  # a delete acknowledged counts no documents
        retrieval.stand_in.fault = Fault(grpc.StatusCode.UNAVAILABLE)
        with pytest.raises(RetrievalUnavailable):
            await client.upsert([DOCUMENT])
        retrieval.stand_in.fault = Fault(grpc.StatusCode.INVALID_ARGUMENT)
        with pytest.raises(grpc.aio.AioRpcError):
            await client.delete(delete_request())
    finally:
        await client.close()
    assert registry.get_sample_value("strata_index_delivered_documents_total") == 2
    assert registry.get_sample_value("strata_index_delivery_failures_total", {"code": "UNAVAILABLE"}) == 1
    assert (
        registry.get_sample_value("strata_index_delivery_failures_total", {"code": "INVALID_ARGUMENT"}) == 1
    )


async def test_tls_checks_the_configured_server_name_instead_of_the_address(tmp_path: Path) -> None:
    """``STRATA_MEMORY_RETRIEVAL_TLS_SERVER_NAME``: RetrievalService's certificate names a host other
    than the address dialled (an IP, a load balancer); the TLS channel verifies that name."""
    ca = _ca(tmp_path, "strata-test-ca")
    cert, key = _leaf(
        tmp_path, "retrieval", ca, "subjectAltName=DNS:retrieval.internal\nextendedKeyUsage=serverAuth\n"
    )
    stand_in = StandIn()
    server = grpc.aio.server()
    retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(stand_in, server)
    port = server.add_secure_port(
        "127.0.0.1:0", grpc.ssl_server_credentials([(key.read_bytes(), cert.read_bytes())])
    )
    await server.start()
    address = f"127.0.0.1:{port}"
    try:
        named = RetrievalConnection(
            address, credentials=channel_credentials(ca[0]), tls_server_name="retrieval.internal"
        )
        unnamed = RetrievalConnection(address, credentials=channel_credentials(ca[0]), timeout=5.0)
        try:
            await named.upsert([DOCUMENT])
            assert [method for method, _, _ in stand_in.calls] == ["upsert"]
            with pytest.raises(RetrievalUnavailable):  # 127.0.0.1 is not a name the certificate holds
                await unnamed.delete(delete_request())
            assert len(stand_in.calls) == 1
        finally:
            await named.close()
            await unnamed.close()
    finally:
        await server.stop(0)
