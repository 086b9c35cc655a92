"""The gRPC servicer: parse the request, run the engine in the executor, convert the result.

Until the engine is open every call fails with UNAVAILABLE; if the index on disk belongs to another
embedding model every call fails with that FAILED_PRECONDITION (reason EMBEDDING_MODEL_MISMATCH). A
call the Qdrant server could not answer (down, restarting, timed out, a server error) fails with
UNAVAILABLE (reason INDEX_UNAVAILABLE), which MemoryService's outbox waits out instead of parking.
Before any handler runs, a request with a NUL in any string field or map key, or an enum number its
proto does not define, is refused with INVALID_ARGUMENT (NUL_CHARACTER, UNKNOWN_ENUM_VALUE) naming
the field (:mod:`strata_serving.request_checks`, the rules MemoryService applies too).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from datetime import UTC, datetime
from typing import Any, TypeVar

import grpc

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2_grpc as pb_grpc
from strata_retrieval import conversions
from strata_retrieval.engine import RetrievalEngine
from strata_retrieval.errors import REQUEST_REFUSALS, IndexUnavailable
from strata_retrieval.vectors.qdrant_dense import unreachable
from strata_serving import tracing
from strata_serving.errors import InvalidArgument, StrataError, Unavailable
from strata_serving.request_checks import checked_requests

_T = TypeVar("_T")
DEFAULT_ID_PAGE = 1_000
MAX_ID_PAGE = 10_000
Context = grpc.aio.ServicerContext[Any, Any]


@checked_requests(pb.DESCRIPTOR.services_by_name["RetrievalService"], REQUEST_REFUSALS)  # no NUL, no bad enum
class RetrievalServicer(pb_grpc.RetrievalServiceServicer):
    def __init__(self, executor: Executor) -> None:
        self._executor = executor
        self._engine: RetrievalEngine | None = None
        self._refusal: StrataError = Unavailable("the retrieval engine is still starting", reason="STARTING")

    def attach(self, engine: RetrievalEngine) -> None:
        self._engine = engine

    def refuse(self, error: StrataError) -> None:
        """Answer every call with ``error`` (the index cannot be used as configured)."""
        self._refusal = error

    async def UpsertDocuments(
        self, request: pb.UpsertDocumentsRequest, context: Context
    ) -> pb.UpsertDocumentsResponse:
        engine = self._ready()
        now = datetime.now(UTC)
        documents = [
            conversions.document_from_pb(message, f"documents[{i}]", lambda: now)
            for i, message in enumerate(request.documents)
        ]
        count = await self._run(engine.upsert, documents)
        return pb.UpsertDocumentsResponse(upserted_count=count)

    async def DeleteDocuments(
        self, request: pb.DeleteDocumentsRequest, context: Context
    ) -> pb.DeleteDocumentsResponse:
        engine = self._ready()
        match request.WhichOneof("selector"):
            case "ids":
                deleted = await self._run(engine.delete_ids, request.ids.tenant_id, list(request.ids.ids))
            case "filter":
                flt = conversions.filter_from_pb(request.filter)
                deleted = await self._run(engine.delete_matching, flt)
            case _:
                raise InvalidArgument.field("selector", "set either ids or filter")
        return pb.DeleteDocumentsResponse(deleted_count=deleted)

    async def Search(self, request: pb.SearchRequest, context: Context) -> pb.SearchResponse:
        engine = self._ready()
        query = conversions.search_from_pb(request, engine.default_weights)
        result = await self._run(engine.search, query)
        return conversions.search_result_to_pb(result)

    async def Stats(self, request: pb.StatsRequest, context: Context) -> pb.StatsResponse:
        engine = self._ready()
        stats = await self._run(engine.stats, conversions.filter_from_pb(request.filter))
        return conversions.stats_to_pb(stats)

    async def ListDocumentIds(
        self, request: pb.ListDocumentIdsRequest, context: Context
    ) -> pb.ListDocumentIdsResponse:
        engine = self._ready()
        if not 0 <= request.page_size <= MAX_ID_PAGE:
            raise InvalidArgument.field(
                "page_size", f"must be between 0 and {MAX_ID_PAGE} (0: {DEFAULT_ID_PAGE})"
            )
        after = request.page_token
        if after and not _is_key(after):
            raise InvalidArgument.field("page_token", "is not a token this service issued")
        flt = conversions.filter_from_pb(request.filter)
        ids, following = await self._run(
            lambda: engine.list_ids(flt, after_key=after, limit=request.page_size or DEFAULT_ID_PAGE)
        )
        return pb.ListDocumentIdsResponse(ids=ids, next_page_token=following)

    async def FindDocuments(
        self, request: pb.FindDocumentsRequest, context: Context
    ) -> pb.FindDocumentsResponse:
        engine = self._ready()
        ids = request.ids
        vector_ids, text_ids = await self._run(engine.find_ids, ids.tenant_id, list(ids.ids))
        return pb.FindDocumentsResponse(vector_ids=vector_ids, text_ids=text_ids)

    def _ready(self) -> RetrievalEngine:
        if self._engine is None:
            raise self._refusal
        return self._engine

    async def _run(self, function: Callable[..., _T], *args: Any) -> _T:
        # in_context: the engine's spans are children of this call's span, on the executor's thread too
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._executor, tracing.in_context(function), *args
            )
        except Exception as failure:
            if unreachable(failure):  # an outage of the Qdrant server, not a fault of the request
                raise IndexUnavailable(
                    f"the index server cannot be reached or failed ({type(failure).__name__}: {failure}); "
                    "retry later (writes are idempotent)"
                ) from failure
            raise


def _is_key(token: str) -> bool:
    """Page tokens are storage keys (UUIDs)."""
    try:
        return str(uuid.UUID(token)) == token
    except ValueError:
        return False
