"""Dense vectors only, in a Qdrant collection through ``qdrant-client`` (one collection per service).

The base of the server engine's joint dense + BM25 index (:mod:`.qdrant_joint`).

``url`` points at a Qdrant server (``http(s)://``); ``":memory:"`` or a folder selects
qdrant-client's local mode, which speaks the same API and is what the shared behaviour tests use.
The server builds its HNSW graphs itself, so :meth:`optimize` has nothing to do. Local mode
searches exactly, so it gets no search params.
Writes use ``wait=True``: they return once searchable.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.model import Document, DocumentFilter, ScoredKey
from strata_retrieval.vectors.payload import (
    HNSW_EF,
    KEYWORD_FIELDS,
    TIME_FIELD,
    VECTOR_NAME,
    Between,
    Condition,
    MatchOne,
    MatchSome,
    filter_conditions,
    from_payload,
    to_payload,
)

_SCROLL_PAGE = 1000


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` is qdrant-client failing to reach the server (refused, reset, timed out) or
    the server answering with a server error or 429: an outage, saying nothing of the request."""
    if isinstance(error, ResponseHandlingException | httpx.TransportError):
        return True
    return isinstance(error, UnexpectedResponse) and (error.status_code or 0) in {429, *range(500, 600)}


def _client_condition(condition: Condition) -> models.FieldCondition:
    match condition:
        case MatchOne(key, value):
            return models.FieldCondition(key=key, match=models.MatchValue(value=value))
        case MatchSome(key, values):
            return models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))
        case Between(key, low, high):
            return models.FieldCondition(key=key, range=models.Range(gte=low, lte=high))


def _client(url: str, api_key: str | None) -> QdrantClient:
    """A client for a server (``http(s)://``), or local mode in memory (``:memory:``) or in a folder."""
    if url.startswith(("http://", "https://")):
        return QdrantClient(url=url, api_key=api_key)
    return QdrantClient(location=":memory:") if url == ":memory:" else QdrantClient(path=url)


def client_filter(flt: DocumentFilter) -> models.Filter:
    return models.Filter(must=[_client_condition(condition) for condition in filter_conditions(flt)])


class QdrantDenseIndex:
    """A :class:`~strata_retrieval.vectors.protocol.VectorIndex` over one Qdrant collection."""

    def __init__(
        self, url: str, dimension: int, *, collection: str = "strata_documents", api_key: str | None = None
    ) -> None:
        self._local = not url.startswith(("http://", "https://"))
        self._client = _client(url, api_key)
        self._collection = collection
        self._open(dimension)

    def _open(self, dimension: int) -> None:
        """Create the collection unless it exists."""
        if not self._client.collection_exists(self._collection):
            vectors = {VECTOR_NAME: models.VectorParams(size=dimension, distance=models.Distance.COSINE)}
            self._client.create_collection(self._collection, vectors_config=vectors)
            self._create_payload_indexes(self._collection)

    def _create_payload_indexes(self, collection: str) -> None:
        """A keyword index per filter field (the tenant's optimised for per-tenant search, ``is_tenant``)
        and an integer range index on the creation time."""
        if self._local:
            return  # local mode ignores payload indexes (and warns about each one)
        for name in KEYWORD_FIELDS:
            schema = models.KeywordIndexParams(
                type=models.KeywordIndexType.KEYWORD, is_tenant=name == "tenant_id"
            )
            self._client.create_payload_index(collection, name, schema)
        time_index = models.IntegerIndexParams(type=models.IntegerIndexType.INTEGER, lookup=False, range=True)
        self._client.create_payload_index(collection, TIME_FIELD, time_index)

    def upsert(self, documents: Sequence[Document], vectors: Vectors) -> None:
        points = [
            models.PointStruct(id=doc.key, vector={VECTOR_NAME: row.tolist()}, payload=to_payload(doc))
            for doc, row in zip(documents, vectors, strict=True)
        ]
        self._client.upsert(self._collection, points=points, wait=True)

    def delete(self, keys: Sequence[str]) -> None:
        if keys:
            selector = models.PointIdsList(points=list(keys))
            self._client.delete(self._collection, points_selector=selector, wait=True)

    def search(self, vector: Vectors, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        response = self._client.query_points(
            self._collection,
            query=vector.tolist(),
            using=VECTOR_NAME,
            query_filter=client_filter(flt),
            search_params=None if self._local else models.SearchParams(hnsw_ef=max(HNSW_EF, limit)),
            limit=limit,
            with_payload=False,
        )
        return [ScoredKey(key=str(point.id), score=float(point.score)) for point in response.points]

    def fetch(self, keys: Sequence[str]) -> dict[str, Document]:
        if not keys:
            return {}
        records = self._client.retrieve(self._collection, ids=list(keys), with_payload=True)
        return {str(record.id): from_payload(record.payload or {}) for record in records}

    def keys_after(self, flt: DocumentFilter, after_key: str, limit: int) -> list[str]:
        # A scroll starts at its offset key itself, which the page leaves out.
        records, _ = self._client.scroll(
            self._collection,
            scroll_filter=client_filter(flt),
            limit=limit + 1,
            offset=after_key or None,
            with_payload=False,
        )
        return [key for key in (str(record.id) for record in records) if key > after_key][:limit]

    def keys_matching(self, flt: DocumentFilter) -> list[str]:
        keys: list[str] = []
        offset: models.ExtendedPointId | None = None
        while True:
            records, next_offset = self._client.scroll(
                self._collection,
                scroll_filter=client_filter(flt),
                limit=_SCROLL_PAGE,
                offset=offset,
                with_payload=False,
            )
            keys.extend(str(record.id) for record in records)
            if next_offset is None:
                return keys
            offset = next_offset  # type: ignore[assignment]  # grpc PointId never comes back over REST

    def document_pages(self) -> Iterator[list[Document]]:
        offset: models.ExtendedPointId | None = None
        while True:
            records, next_offset = self._client.scroll(
                self._collection, limit=_SCROLL_PAGE, offset=offset, with_payload=True
            )
            yield [from_payload(record.payload or {}) for record in records]
            if next_offset is None:
                return
            offset = next_offset  # type: ignore[assignment]  # grpc PointId never comes back over REST

    def newest(self, flt: DocumentFilter, limit: int) -> list[Document]:
        order = models.OrderBy(key=TIME_FIELD, direction=models.Direction.DESC)
        records, _ = self._client.scroll(
            self._collection, scroll_filter=client_filter(flt), limit=limit, order_by=order, with_payload=True
        )
        return [from_payload(record.payload or {}) for record in records]

    def count(self, flt: DocumentFilter) -> int:
        return int(self._client.count(self._collection, count_filter=client_filter(flt), exact=True).count)

    def tags(self, flt: DocumentFilter, limit: int) -> list[str]:
        response = self._client.facet(
            self._collection, "tags", facet_filter=client_filter(flt), limit=limit, exact=True
        )
        return sorted(str(hit.value) for hit in response.hits)

    def unindexed_count(self) -> int:
        return 0  # the server indexes on its own schedule

    def optimize(self) -> bool:
        return False

    def close(self) -> None:
        self._client.close()
