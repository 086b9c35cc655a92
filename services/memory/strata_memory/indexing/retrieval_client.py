"""MemoryService's connection to RetrievalService: the few calls it makes, with deadlines.

Transport failures become ``RetrievalUnavailable`` (UNAVAILABLE) with a message a person can act
on; RetrievalService's own refusals keep their status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import grpc

from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_memory.domain.errors import RetrievalUnavailable

if TYPE_CHECKING:
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceAsyncStub
else:
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub

_CHANNEL_OPTIONS = (
    # Reconnect quickly once RetrievalService is back (gRPC's default backoff grows to 120 s).
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)
_TRANSPORT_FAILURES = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.UNKNOWN,
}


class RetrievalClient:
    """A long-lived channel to RetrievalService (opened lazily, so either service may start first)."""

    def __init__(self, address: str, *, timeout: float = 10.0) -> None:
        self.address = address
        self._timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        self._stub: RetrievalStub | None = None

    def _connect(self) -> RetrievalStub:
        if self._stub is None:
            self._channel = grpc.aio.insecure_channel(self.address, options=_CHANNEL_OPTIONS)
            self._stub = retrieval_pb2_grpc.RetrievalServiceStub(self._channel)
        return self._stub

    async def upsert(self, documents: Sequence[rpb.Document]) -> None:
        request = rpb.UpsertDocumentsRequest(documents=list(documents))
        await self._call(self._connect().UpsertDocuments, request, seconds=max(self._timeout, 60.0))

    async def delete(self, request: rpb.DeleteDocumentsRequest) -> None:
        await self._call(self._connect().DeleteDocuments, request)

    async def search(self, request: rpb.SearchRequest) -> rpb.SearchResponse:
        response: rpb.SearchResponse = await self._call(self._connect().Search, request)
        return response

    async def _call(self, method: Any, request: Any, *, seconds: float | None = None) -> Any:
        try:
            return await method(request, timeout=seconds or self._timeout)
        except grpc.aio.AioRpcError as failure:
            if failure.code() in _TRANSPORT_FAILURES:
                raise RetrievalUnavailable(
                    f"RetrievalService at {self.address} is unavailable ({failure.code().name}): search and "
                    "indexing will resume when it is back; writes are kept and indexed then.",
                    metadata={"address": self.address, "status": failure.code().name},
                ) from failure
            raise

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close(None)
