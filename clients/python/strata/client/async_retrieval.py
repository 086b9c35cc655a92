"""Typed asyncio client for RetrievalService; ``sync_retrieval.py`` is generated from this file.

RetrievalService indexes what MemoryService stores; applications normally reach search through
MemoryService (``search_archival``, ``search_messages``). This client is for operators, tests
and benchmarks that talk to the index directly. The tenant is part of every request (``Scope``,
``DocumentFilter``), not of the call's metadata.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from functools import cached_property

from strata.client.async_base import AsyncClientBase
from strata.client.paging import PageGuard
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc


class AsyncRetrievalClient(AsyncClientBase):
    """Every RetrievalService RPC over a ``grpc.aio`` channel; use as a context manager or ``close()``.

    Same constructor as ``AsyncMemoryClient``; failed calls raise ``StrataClientError`` subclasses.
    """

    @cached_property
    def _stub(self) -> retrieval_pb2_grpc.RetrievalServiceAsyncStub:
        return retrieval_pb2_grpc.RetrievalServiceStub(self._channel)

    async def upsert_documents(self, *, documents: Iterable[rpb.Document]) -> rpb.UpsertDocumentsResponse:
        """Embed and index documents (replacing any with the same tenant and id); searchable on return."""
        request = rpb.UpsertDocumentsRequest(documents=documents)
        return await self._call(self._stub.UpsertDocuments, request)

    async def delete_documents(
        self, *, ids: rpb.DocumentIds | None = None, filter: rpb.DocumentFilter | None = None
    ) -> rpb.DeleteDocumentsResponse:
        """Delete by ``ids`` or by ``filter`` (exactly one); deleting what is absent is not an error."""
        request = rpb.DeleteDocumentsRequest(ids=ids, filter=filter)
        return await self._call(self._stub.DeleteDocuments, request)

    async def search(
        self,
        *,
        query: str,
        mode: rpb.SearchMode.ValueType,
        filter: rpb.DocumentFilter,
        top_k: int = 0,
        rrf_k: float | None = None,
        vector_weight: float | None = None,
        fts_weight: float | None = None,
        vector_depth: int | None = None,
        fts_depth: int | None = None,
    ) -> rpb.SearchResponse:
        """Vector, full-text or hybrid (RRF) search; ``None`` tuning values use the service defaults."""
        request = rpb.SearchRequest(
            query=query,
            mode=mode,
            filter=filter,
            top_k=top_k,
            rrf_k=rrf_k,
            vector_weight=vector_weight,
            fts_weight=fts_weight,
            vector_depth=vector_depth,
            fts_depth=fts_depth,
        )
        return await self._call(self._stub.Search, request)

    async def stats(self, *, filter: rpb.DocumentFilter) -> rpb.StatsResponse:
        """Document counts and distinct tags of the documents matching ``filter``."""
        return await self._call(self._stub.Stats, rpb.StatsRequest(filter=filter))

    async def list_document_ids(
        self, *, filter: rpb.DocumentFilter, page_size: int = 0, page_token: str = ""
    ) -> rpb.ListDocumentIdsResponse:
        """One page of the ids of the documents matching ``filter``, in a stable (storage) order."""
        request = rpb.ListDocumentIdsRequest(filter=filter, page_size=page_size, page_token=page_token)
        return await self._call(self._stub.ListDocumentIds, request)

    async def find_documents(self, *, tenant_id: str, ids: Iterable[str]) -> rpb.FindDocumentsResponse:
        """Which of these ids each index leg holds, read by id (not by search): how a deletion is proved."""
        request = rpb.FindDocumentsRequest(ids=rpb.DocumentIds(tenant_id=tenant_id, ids=ids))
        return await self._call(self._stub.FindDocuments, request)

    async def iter_document_ids(
        self, *, filter: rpb.DocumentFilter, page_size: int = 0
    ) -> AsyncIterator[str]:
        """Every id matching ``filter``, following the pages."""
        token, pages = "", PageGuard("ListDocumentIds", self.max_pages)
        while True:
            page = await self.list_document_ids(filter=filter, page_size=page_size, page_token=token)
            for document_id in page.ids:
                yield document_id
            if not (token := pages.next(page.next_page_token)):
                return
