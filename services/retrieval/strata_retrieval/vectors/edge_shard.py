"""The default vector store: Qdrant's engine in-process (``qdrant-edge-py``), one shard on disk.

Points live in plain (appendable) segments, which are searched exactly, until :meth:`optimize`
builds HNSW graphs; searches are therefore always correct, only slower on large unindexed shards.
A shard created here also keeps an int8 copy of every vector (Qdrant's scalar quantisation, in RAM)
that ``optimize`` builds with the graph: the graph is walked on the int8 copies and the best
``OVERSAMPLING`` x limit candidates are rescored with the float vectors, so scores are exact cosines
(faster at the same recall: bench/perf/findings.md). Shards created before keep their float-only
layout and search as before.
Every filter field has a payload index, and the filter is part of the query, so a filtered search
returns as many hits as there are matches, up to the limit.

``EdgeShard.optimize`` and ``query`` hold the GIL for their whole run (every other Python thread
stops meanwhile), so ``optimize`` must never run while the service answers calls; the service runs
it before it reports SERVING (see ``engine``).
One process owns a shard directory (its WAL is locked).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import qdrant_edge as qe

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
INT8_COPIES = qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, quantile=0.99, always_ram=True)
OVERSAMPLING = 1.5  # candidates rescored per hit wanted; recall@50 was the float graph's at 1.5 and 2


def _edge_condition(condition: Condition) -> qe.FieldCondition:
    match condition:
        case MatchOne(key, value):
            return qe.FieldCondition(key=key, match=qe.MatchValue(value))
        case MatchSome(key, values):
            return qe.FieldCondition(key=key, match=qe.MatchAny(list(values)))
        case Between(key, low, high):
            return qe.FieldCondition(key=key, range=qe.RangeFloat(gte=low, lte=high))


def edge_filter(flt: DocumentFilter) -> qe.Filter:
    return qe.Filter(must=[_edge_condition(condition) for condition in filter_conditions(flt)])


class EdgeShardIndex:
    """A :class:`~strata_retrieval.vectors.protocol.VectorIndex` over one ``EdgeShard`` directory."""

    def __init__(self, path: Path, dimension: int) -> None:
        self._lock = threading.Lock()  # the shard is one mutable engine; serialise access to it
        if path.exists() and any(path.iterdir()):
            self._shard = qe.EdgeShard.load(str(path))
            return
        path.mkdir(parents=True, exist_ok=True)
        vectors = {
            VECTOR_NAME: qe.EdgeVectorParams(
                size=dimension, distance=qe.Distance.Cosine, quantization_config=INT8_COPIES
            )
        }
        self._shard = qe.EdgeShard.create(str(path), qe.EdgeConfig(vectors=vectors))
        for name in KEYWORD_FIELDS:
            schema = (
                qe.KeywordIndexParams(is_tenant=True) if name == "tenant_id" else qe.PayloadSchemaType.Keyword
            )
            self._shard.update(qe.UpdateOperation.create_field_index(name, schema))
        time_index = qe.IntegerIndexParams(lookup=False, range=True)
        self._shard.update(qe.UpdateOperation.create_field_index(TIME_FIELD, time_index))

    def upsert(self, documents: Sequence[Document], vectors: Vectors) -> None:
        points = [
            qe.Point(id=doc.key, vector={VECTOR_NAME: row.tolist()}, payload=to_payload(doc))
            for doc, row in zip(documents, vectors, strict=True)
        ]
        with self._lock:
            self._shard.update(qe.UpdateOperation.upsert_points(points))

    def delete(self, keys: Sequence[str]) -> None:
        if keys:
            with self._lock:
                self._shard.update(qe.UpdateOperation.delete_points(list(keys)))

    def search(self, vector: Vectors, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(vector.tolist(), using=VECTOR_NAME),
            filter=edge_filter(flt),
            params=qe.SearchParams(
                hnsw_ef=max(HNSW_EF, limit),
                quantization=qe.QuantizationSearchParams(rescore=True, oversampling=OVERSAMPLING),
            ),
            with_payload=False,
        )
        with self._lock:
            points = self._shard.query(request)
        return [ScoredKey(key=str(point.id), score=float(point.score)) for point in points]

    def fetch(self, keys: Sequence[str]) -> dict[str, Document]:
        if not keys:
            return {}
        with self._lock:
            records = self._shard.retrieve(list(keys), with_payload=True, with_vector=False)
        return {str(record.id): from_payload(record.payload or {}) for record in records}

    def keys_matching(self, flt: DocumentFilter) -> list[str]:
        keys: list[str] = []
        offset: qe.PointId | None = None
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=_SCROLL_PAGE, filter=edge_filter(flt), with_payload=False
            )
            with self._lock:
                records, offset = self._shard.scroll(request)
            keys.extend(str(record.id) for record in records)
            if offset is None:
                return keys

    def document_pages(self) -> Iterator[list[Document]]:
        """Every stored document, every tenant, a page at a time (to rebuild another index)."""
        offset: qe.PointId | None = None
        while True:
            with self._lock:
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=_SCROLL_PAGE, with_payload=True)
                )
            yield [from_payload(record.payload or {}) for record in records]
            if offset is None:
                return

    def keys_after(self, flt: DocumentFilter, after_key: str, limit: int) -> list[str]:
        # A scroll starts at its offset key itself, which the page leaves out.
        request = qe.ScrollRequest(
            offset=after_key or None, limit=limit + 1, filter=edge_filter(flt), with_payload=False
        )
        with self._lock:
            records, _ = self._shard.scroll(request)
        return [key for key in (str(record.id) for record in records) if key > after_key][:limit]

    def newest(self, flt: DocumentFilter, limit: int) -> list[Document]:
        order = qe.OrderBy(TIME_FIELD, direction=qe.Direction.Desc)
        request = qe.ScrollRequest(limit=limit, filter=edge_filter(flt), with_payload=True, order_by=order)
        with self._lock:
            records, _ = self._shard.scroll(request)
        return [from_payload(record.payload or {}) for record in records]

    def count(self, flt: DocumentFilter) -> int:
        with self._lock:
            return int(self._shard.count(qe.CountRequest(exact=True, filter=edge_filter(flt))))

    def tags(self, flt: DocumentFilter, limit: int) -> list[str]:
        request = qe.FacetRequest(key="tags", limit=limit, exact=True, filter=edge_filter(flt))
        with self._lock:
            hits = self._shard.facet(request).hits
        return sorted(str(hit.value) for hit in hits)

    def unindexed_count(self) -> int:
        with self._lock:
            info = self._shard.info()
        return max(0, int(info.points_count) - int(info.indexed_vectors_count))

    def optimize(self) -> bool:
        with self._lock:
            return bool(self._shard.optimize())

    def close(self) -> None:
        with self._lock:
            self._shard.flush()
            self._shard.close()
