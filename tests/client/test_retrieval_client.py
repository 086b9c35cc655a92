"""AsyncRetrievalClient and the generated RetrievalClient against the shared real RetrievalService.

The tenant used here is one no MemoryService test writes to, so the counts are this file's alone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from strata.client import AsyncRetrievalClient, InvalidArgumentError, RetrievalClient
from strata.retrieval.v1 import retrieval_pb2 as rpb

TENANT = "retrieval-client-direct"
PASSAGES = {
    "p-tea": "Ada drinks green tea every morning.",
    "p-bike": "Ada commutes to work by bicycle.",
    "p-cat": "Ada's cat is called Turing.",
}


@pytest.fixture
async def retrieval(retrieval_target: str) -> AsyncIterator[AsyncRetrievalClient]:
    async with AsyncRetrievalClient(retrieval_target, timeout=30) as client:
        yield client


def scope_filter() -> rpb.DocumentFilter:
    return rpb.DocumentFilter(tenant_id=TENANT)


async def test_upsert_search_stats_delete(retrieval: AsyncRetrievalClient) -> None:
    documents = [
        rpb.Document(
            id=doc_id,
            text=text,
            kind=rpb.DOCUMENT_KIND_PASSAGE,
            scope=rpb.Scope(tenant_id=TENANT, archive_id="arc-1"),
            tags=["ada"],
        )
        for doc_id, text in PASSAGES.items()
    ]
    upserted = await retrieval.upsert_documents(documents=documents)
    assert upserted.upserted_count == 3

    found = await retrieval.search(
        query="what does Ada drink", mode=rpb.SEARCH_MODE_HYBRID, filter=scope_filter(), top_k=2
    )
    assert found.hits[0].document.id == "p-tea"
    assert len(found.hits) == 2
    fts_only = await retrieval.search(
        query="bicycle", mode=rpb.SEARCH_MODE_FTS, filter=scope_filter(), top_k=3
    )
    assert [hit.document.id for hit in fts_only.hits] == ["p-bike"]

    stats = await retrieval.stats(filter=scope_filter())
    assert (stats.document_count, stats.passage_count, list(stats.tags)) == (3, 3, ["ada"])

    held = await retrieval.find_documents(tenant_id=TENANT, ids=["p-cat", "absent"])
    assert (list(held.vector_ids), list(held.text_ids)) == (["p-cat"], ["p-cat"])
    deleted = await retrieval.delete_documents(ids=rpb.DocumentIds(tenant_id=TENANT, ids=["p-cat", "absent"]))
    assert deleted.deleted_count == 1
    assert (await retrieval.stats(filter=scope_filter())).document_count == 2
    gone = await retrieval.find_documents(tenant_id=TENANT, ids=["p-cat"])
    assert (list(gone.vector_ids), list(gone.text_ids)) == ([], [])


async def test_bad_request_is_invalid_argument(retrieval: AsyncRetrievalClient) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        await retrieval.search(query="tea", mode=rpb.SEARCH_MODE_UNSPECIFIED, filter=scope_filter(), top_k=3)
    assert caught.value.field_violations


def test_generated_sync_retrieval_client(retrieval_target: str) -> None:
    with RetrievalClient(retrieval_target, timeout=30) as client:
        stats = client.stats(filter=rpb.DocumentFilter(tenant_id="nobody-here"))
        assert stats.document_count == 0
        assert stats.embedding_dimension > 0


async def test_document_ids_are_listed_page_by_page(retrieval: AsyncRetrievalClient) -> None:
    tenant = "retrieval-client-ids"
    ids = [f"p-{i:02d}" for i in range(5)]
    documents = [
        rpb.Document(
            id=doc_id,
            text=f"note {doc_id}",
            kind=rpb.DOCUMENT_KIND_PASSAGE,
            scope=rpb.Scope(tenant_id=tenant),
        )
        for doc_id in ids
    ]
    await retrieval.upsert_documents(documents=documents)
    first = await retrieval.list_document_ids(filter=rpb.DocumentFilter(tenant_id=tenant), page_size=2)
    assert len(first.ids) == 2
    assert first.next_page_token
    every = [
        i async for i in retrieval.iter_document_ids(filter=rpb.DocumentFilter(tenant_id=tenant), page_size=2)
    ]
    assert sorted(every) == ids
    assert every[:2] == list(first.ids)
    assert [
        i async for i in retrieval.iter_document_ids(filter=rpb.DocumentFilter(tenant_id="nobody-here"))
    ] == []
