"""MemoryService's connection to RetrievalService: the few calls it makes, with deadlines.

A call made while serving a client gets what that client's deadline has left (at most the
configured timeout) and carries its request id and trace context; background calls (the outbox)
get the configured timeout.

Transport failures, RetrievalService's refusal of a write because its disk is full, and its refusal
of every call for its own state (an index built with another embedding model, its model missing, a
whole-index rebuild in progress elsewhere) become ``RetrievalUnavailable`` (UNAVAILABLE, retried
later) with a message a person can act on: they say nothing about the documents, so the outbox keeps
their jobs waiting rather than parking them. RetrievalService's other refusals keep their status.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import grpc

from strata.contract import channel_policy
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.domain.errors import RetrievalUnavailable
from strata_memory.limits import DEFAULT_RETRIEVAL_MESSAGE_BYTES, channel_options
from strata_serving.admission import TenantConcurrency
from strata_serving.client_tracing import client_span
from strata_serving.errors import FailedPrecondition, InvalidArgument, ResourceExhausted, StrataError
from strata_serving.propagation import outgoing_metadata, outgoing_timeout
from strata_serving.status import error_info_from

if TYPE_CHECKING:
    from strata_memory.metrics import DeliveryMetrics

    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceAsyncStub
else:
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub

_RETRIEVAL = "strata.retrieval.v1.RetrievalService"
_CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    # Reconnect quickly once RetrievalService is back (gRPC's default backoff grows to 120 s).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    # keepalive, retry of UNAVAILABLE, round robin over the replicas that report SERVING
    *channel_policy.channel_options([(_RETRIEVAL, None)], balance_on_health=_RETRIEVAL),
)
ID_PAGE = 5_000
_TRANSPORT_FAILURES = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
}
INDEX_DISK_FULL = "INDEX_DISK_FULL"  # RetrievalService's reason (strata_retrieval.disk.IndexDiskFull)
_REFUSES_EVERY_CALL = frozenset(
    {"EMBEDDING_MODEL_MISMATCH", "EMBEDDING_MODEL_MISSING", "REBUILD_IN_PROGRESS"}
)
"""RetrievalService's reasons for refusing every call until its operator acts (strata_retrieval.errors)."""
_AUTH_FAILURES = {grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED}
_CALLER_ERRORS: dict[grpc.StatusCode, type[StrataError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
}


class RetrievalConnection:
    """A long-lived channel to RetrievalService (opened lazily, so either service may start first)."""

    def __init__(
        self,
        address: str,
        *,
        timeout: float = 10.0,
        credentials: grpc.ChannelCredentials | None = None,
        api_key: str | None = None,
        tls_server_name: str | None = None,
        searches_per_tenant: int = 0,
        max_message_bytes: int = DEFAULT_RETRIEVAL_MESSAGE_BYTES,
        deliveries: DeliveryMetrics | None = None,
    ) -> None:
        """``credentials`` select TLS (mTLS with a client certificate); ``api_key`` is the service key
        sent as a bearer token; ``searches_per_tenant`` bounds each tenant's searches in flight (each
        embeds its query), 0 for no bound; ``max_message_bytes`` bounds what the channel sends and
        receives (RetrievalService's own request limit); ``deliveries`` counts index and delete calls."""
        self.address = address
        self._timeout = timeout
        self._credentials = credentials
        self._metadata = (("authorization", f"Bearer {api_key}"),) if api_key else ()
        self._options: tuple[tuple[str, Any], ...] = (*_CHANNEL_OPTIONS, *channel_options(max_message_bytes))
        if tls_server_name:
            self._options = (*self._options, ("grpc.ssl_target_name_override", tls_server_name))
        self.searches = TenantConcurrency(searches_per_tenant, what="searches")
        self._deliveries = deliveries
        self._channel: grpc.aio.Channel | None = None
        self._stub: RetrievalStub | None = None

    def _connect(self) -> RetrievalStub:
        if self._stub is None:
            if self._credentials is None:
                self._channel = grpc.aio.insecure_channel(self.address, options=self._options)
            else:
                self._channel = grpc.aio.secure_channel(
                    self.address, self._credentials, options=self._options
                )
            self._stub = retrieval_pb2_grpc.RetrievalServiceStub(self._channel)
        return self._stub

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        request = rpb.UpsertDocumentsRequest(documents=list(documents))
        await self._delivery("UpsertDocuments", request, seconds=max(self._timeout, 60.0))
        if self._deliveries is not None:
            self._deliveries.delivered(len(request.documents))

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        await self._delivery("DeleteDocuments", request)

    async def delete_counted(self, request: rpb.DeleteDocumentsRequest) -> int:
        """Delete, as :meth:`delete`; how many documents existed (a purge counts them)."""
        response: rpb.DeleteDocumentsResponse = await self._call("DeleteDocuments", request)
        return int(response.deleted_count)

    async def find(self, tenant_id: str, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Which of these ids the vector leg and the text leg each hold (read by id, not searched)."""
        request = rpb.FindDocumentsRequest(ids=rpb.DocumentIds(tenant_id=tenant_id, ids=list(ids)))
        found: rpb.FindDocumentsResponse = await self._call("FindDocuments", request)
        return list(found.vector_ids), list(found.text_ids)

    async def list_ids(self, flt: rpb.DocumentFilter) -> AsyncIterator[list[str]]:
        """The ids of the indexed documents matching ``flt``, a page at a time."""
        token = ""
        while True:
            request = rpb.ListDocumentIdsRequest(filter=flt, page_size=ID_PAGE, page_token=token)
            page: rpb.ListDocumentIdsResponse = await self._call("ListDocumentIds", request)
            yield list(page.ids)
            if not (token := page.next_page_token):
                return

    async def search(self, request: rpb.SearchRequest) -> rpb.SearchResponse:
        """Search; a refusal of what the caller asked for (a bad tag, a query too long) keeps its
        status, so it reaches the caller as that status rather than as an internal error."""
        async with self.searches.slot(request.filter.tenant_id):
            try:
                response: rpb.SearchResponse = await self._call("Search", request)
            except grpc.aio.AioRpcError as refusal:
                category = _CALLER_ERRORS.get(refusal.code())
                if category is None:
                    raise
                raise category(
                    f"RetrievalService refused the search: {refusal.details()}",
                    reason=f"RETRIEVAL_{refusal.code().name}",
                ) from refusal
        return response

    async def _delivery(self, method: str, request: Any, *, seconds: float | None = None) -> None:
        """An index or delete call, its failures counted in the delivery metrics."""
        try:
            await self._call(method, request, seconds=seconds)
        except StrataError as failure:
            if self._deliveries is not None:
                self._deliveries.failed(str(failure.metadata.get("status", failure.reason)))
            raise
        except grpc.aio.AioRpcError as failure:
            if self._deliveries is not None:
                self._deliveries.failed(failure.code().name)
            raise

    async def _call(self, method: str, request: Any, *, seconds: float | None = None) -> Any:
        """RetrievalService's ``method`` under a CLIENT span (its traceparent is the one sent)."""
        call = getattr(self._connect(), method)
        try:
            with client_span(_RETRIEVAL, method):
                return await call(
                    request,
                    timeout=outgoing_timeout(seconds or self._timeout),
                    metadata=outgoing_metadata(self._metadata),
                )
        except grpc.aio.AioRpcError as failure:
            if failure.code() in _TRANSPORT_FAILURES:
                reason = _reason(failure)
                said = ", ".join(filter(None, (failure.code().name, reason)))
                raise RetrievalUnavailable(
                    f"RetrievalService at {self.address} is unavailable ({said}: {failure.details()}): "
                    "search and indexing will resume when it is back; writes are kept and indexed then.",
                    metadata={"address": self.address, "status": failure.code().name},
                ) from failure
            if _index_disk_full(failure):  # transient: the outbox keeps the jobs and retries later
                raise RetrievalUnavailable(
                    f"RetrievalService at {self.address} cannot index: its disk is full "
                    f"({failure.details()}); writes are kept and indexed once space is freed.",
                    metadata={"address": self.address, "status": failure.code().name},
                ) from failure
            if (reason := _reason(failure)) in _REFUSES_EVERY_CALL:  # its state, not the documents
                raise RetrievalUnavailable(
                    f"RetrievalService at {self.address} refuses every call until its operator acts "
                    f"({reason}: {failure.details()}); writes are kept and indexed once it serves again.",
                    metadata={"address": self.address, "status": failure.code().name, "refusal": reason},
                ) from failure
            if failure.code() in _AUTH_FAILURES:  # a configuration fault: keep jobs queued, say why
                raise RetrievalUnavailable(
                    f"RetrievalService at {self.address} refused MemoryService's credentials "
                    f"({failure.code().name}): check STRATA_MEMORY_RETRIEVAL_API_KEY and the TLS settings.",
                    metadata={"address": self.address, "status": failure.code().name},
                ) from failure
            raise

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close(None)


def _index_disk_full(failure: grpc.aio.AioRpcError) -> bool:
    """RetrievalService refused a write because its disk is full (RESOURCE_EXHAUSTED, reason
    INDEX_DISK_FULL): unlike other refusals this says nothing about the documents."""
    return failure.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and _reason(failure) == INDEX_DISK_FULL


def _reason(failure: grpc.aio.AioRpcError) -> str:
    """The ErrorInfo reason RetrievalService gave (empty when it gave none)."""
    info = error_info_from(failure.trailing_metadata())
    return info.reason if info is not None else ""
