"""The server engine: both search legs in one Qdrant collection, nothing on local disk.

Each point holds the document's payload, its dense embedding (``dense``) and its text as a BM25
sparse vector (``bm25``). The sparse vectors are built here with Qdrant's own BM25
(``qdrant_edge.Bm25``: the server's BM25 inference — same tokeniser, English stop words and Snowball
stemmer — term frequencies saturated with ``k`` and length-normalised with ``b`` against
``avg_len``), and the collection's sparse vector carries the IDF modifier, so Qdrant multiplies
each query term by its inverse document frequency over the collection at search time: together,
BM25. A query's sparse vector has weight 1 per distinct term.

Hybrid search sends both legs, each with the filter inside its query, in one request
(``query_batch_points``) and fuses them with Strata's weighted RRF
(:func:`strata_retrieval.fusion.rrf`) in the engine. Qdrant's own prefetch + fusion would also be
one request, but it returns only the fused list, and every hit must say its rank in each leg.

The embedding model and the BM25 parameters that built the collection are pinned in its metadata
(Qdrant collection metadata), so any number of replicas refuse a collection built differently, the
way the embedded engine refuses a data folder (``EMBEDDING_MODEL_MISMATCH``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import qdrant_edge as qe
from qdrant_client import models

from strata_retrieval.documents import Document, DocumentFilter, ScoredKey
from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.errors import EmbeddingModelMismatch
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.text_index import query_words
from strata_retrieval.vectors.payload import HNSW_EF, VECTOR_NAME, to_payload
from strata_retrieval.vectors.qdrant_collection import QdrantCollectionIndex, client_filter

SPARSE_NAME = "bm25"


@dataclass(frozen=True)
class Bm25Params:
    """BM25's document-side parameters (Qdrant's defaults); they shape every stored sparse vector."""

    k: float = 1.2
    b: float = 0.75
    avg_len: float = 256.0  # tokens after stop words; Qdrant's default


class QdrantServerIndex(QdrantCollectionIndex):
    """A :class:`~strata_retrieval.vectors.protocol.VectorIndex` that also holds the text leg
    (:class:`SparseTextLeg`) and runs both legs in one request
    (:class:`~strata_retrieval.legs.JointSearch`)."""

    def __init__(
        self,
        url: str,
        manifest: IndexManifest,
        *,
        collection: str = "strata_documents",
        api_key: str | None = None,
        bm25: Bm25Params | None = None,
        rebuild_on_change: bool = False,
    ) -> None:
        self._bm25_params = bm25 or Bm25Params()
        self._bm25 = qe.Bm25(qe.Bm25Config(**asdict(self._bm25_params), language="english"))
        self._pinned = {**asdict(manifest), "bm25": asdict(self._bm25_params)}
        super().__init__(url, manifest.embedding_dimension, collection=collection, api_key=api_key)
        try:
            self._check_pinned(rebuild_on_change, manifest.embedding_dimension)
        except EmbeddingModelMismatch:
            self.close()  # local mode on disk holds a lock until closed
            raise

    def _create(self, dimension: int) -> None:
        self._client.create_collection(
            self._collection,
            vectors_config={
                VECTOR_NAME: models.VectorParams(size=dimension, distance=models.Distance.COSINE)
            },
            sparse_vectors_config={SPARSE_NAME: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata=self._pinned,
        )
        self._create_payload_indexes()

    def _check_pinned(self, rebuild: bool, dimension: int) -> None:
        found: dict[str, Any] = dict(self._client.get_collection(self._collection).config.metadata or {})
        if found == self._pinned:
            return
        if rebuild:
            self._client.delete_collection(self._collection)
            self._create(dimension)
            return
        raise EmbeddingModelMismatch(
            f"Qdrant collection {self._collection!r} was built with {found or 'no recorded model'} but "
            f"the service is configured with {self._pinned}; rebuild it (start once with "
            "STRATA_RETRIEVAL_REBUILD_ON_MODEL_CHANGE=true, then reindex)",
            metadata={
                "index_model": found.get("embedding_model", ""),
                "configured_model": self._pinned["embedding_model"],
                "collection": self._collection,
            },
        )

    def upsert(self, documents: Sequence[Document], vectors: Vectors) -> None:
        """Each document as one point with both vectors: the dense row and its text's BM25."""
        points = [
            models.PointStruct(
                id=doc.key,
                vector={VECTOR_NAME: row.tolist(), SPARSE_NAME: self._document_sparse(doc.text)},
                payload=to_payload(doc),
            )
            for doc, row in zip(documents, vectors, strict=True)
        ]
        self._client.upsert(self._collection, points=points, wait=True)

    def search_text(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        request = self._text_request(text, flt, limit)
        if request is None:
            return []
        return _scored(self._client.query_batch_points(self._collection, [request])[0])

    def search_legs(
        self, vector: Vectors, text: str, flt: DocumentFilter, vector_limit: int, text_limit: int
    ) -> tuple[list[ScoredKey], list[ScoredKey]]:
        dense = models.QueryRequest(
            query=vector.tolist(),
            using=VECTOR_NAME,
            filter=client_filter(flt),
            params=None if self._local else models.SearchParams(hnsw_ef=max(HNSW_EF, vector_limit)),
            limit=vector_limit,
            with_payload=False,
        )
        sparse = self._text_request(text, flt, text_limit)
        if sparse is None:
            return _scored(self._client.query_batch_points(self._collection, [dense])[0]), []
        dense_hits, text_hits = self._client.query_batch_points(self._collection, [dense, sparse])
        return _scored(dense_hits), _scored(text_hits)

    def _text_request(self, text: str, flt: DocumentFilter, limit: int) -> models.QueryRequest | None:
        """The sparse leg's query, or None when the text holds no term BM25 keeps (only stop words,
        punctuation) or ``limit`` is 0."""
        query = self._bm25.embed_query(" ".join(query_words(text)))
        if not query.indices or limit <= 0:
            return None
        return models.QueryRequest(
            query=models.SparseVector(indices=list(query.indices), values=list(query.values)),
            using=SPARSE_NAME,
            filter=client_filter(flt),
            limit=limit,
            with_payload=False,
        )

    def _document_sparse(self, text: str) -> models.SparseVector:
        sparse = self._bm25.embed_document(text)
        return models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))


class SparseTextLeg:
    """The :class:`~strata_retrieval.legs.TextIndex` of the server engine: a view of the sparse
    vectors that :meth:`QdrantServerIndex.upsert` writes into each point with its dense vector, and
    that deleting the point removes. Writing here therefore has nothing left to do."""

    def __init__(self, index: QdrantServerIndex) -> None:
        self._index = index

    def upsert(self, documents: Sequence[Document]) -> None:
        """Nothing to do: the points already carry their sparse vectors."""

    def delete(self, keys: Sequence[str]) -> None:
        """Nothing to do: deleting a point deleted its sparse vector."""

    def search(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        return self._index.search_text(text, flt, limit)

    def close(self) -> None:
        """The index owns the connection and closes it."""


def _scored(response: models.QueryResponse) -> list[ScoredKey]:
    return [ScoredKey(key=str(point.id), score=float(point.score)) for point in response.points]
