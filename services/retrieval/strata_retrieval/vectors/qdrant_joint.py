"""The server engine's joint index: both search legs (dense and BM25) in one Qdrant collection.

Nothing is kept on local disk.

Each point holds the document's payload, its dense embedding (``dense``) and its text as a BM25
sparse vector (``bm25``: the text, then its context when the full-text leg reads one — a message's
previous turn), and the text alone as a second one (``bm25_own``). The sparse vectors are built here
(:mod:`.bm25`) with Qdrant's own BM25 (``qdrant_edge.Bm25``: the server's BM25 inference — same
tokeniser, English stop words and Snowball stemmer — term frequencies saturated with ``k`` and
length-normalised with ``b`` against ``avg_len``), and the collection's sparse vectors carry the IDF
modifier, so Qdrant multiplies each query term by its inverse document frequency at search time:
together, BM25. A query's sparse vector has weight 1 per distinct term. The IDF corpus is the
searching tenant's documents (``SearchParams.idf``, per-tenant IDF statistics, Qdrant 1.19), not the
collection: another tenant's writes change no score, and a tenant cannot probe the words others hold.

The text leg asks both sparse vectors at once (two prefetches, each with the tenant's IDF corpus and
the filter) and ranks their union by ``score(bm25) + own_text_weight * score(bm25_own)``, a
``FormulaQuery`` evaluated by Qdrant (a point one prefetch did not return counts 0 there; each
prefetch fetches twice the limit). This is the embedded engine's ``own_text`` field, with one
difference: the query words Tantivy scores over both fields in one pass are here two top lists whose
union is rescored. A generation built before ``bm25_own`` (no ``sparse_vectors`` pinned) is served
and written as it was built, its text leg ``bm25`` alone, until a rebuild
(``python -m strata_retrieval.rebuild``) builds the next generation with both vectors.

Hybrid search sends both legs, each with the filter inside its query, in one request
(``query_batch_points``) and fuses them with Strata's weighted RRF
(:func:`strata_retrieval.fusion.rrf`) in the engine. Qdrant's own prefetch + fusion would also be
one request, but it returns only the fused list, and every hit must say its rank in each leg.

The embedding model and the BM25 parameters that built the collection are pinned in its metadata
(Qdrant collection metadata), so any number of replicas refuse a collection built differently, the
way the embedded engine refuses a data folder (``EMBEDDING_MODEL_MISMATCH``).

The configured collection name is an alias over generations (:mod:`.generations`). :meth:`rebuild`
builds the next generation from the serving one's own points (every payload holds the document
whole; :mod:`.qdrant_rebuild` copies them), then swaps the alias: at start-up when the model or BM25
parameters changed and a rebuild is allowed, or on demand. It is the whole index, every tenant:
per-tenant rebuilds stay MemoryService's Reindex, which upserts in place and then deletes what the
store no longer holds.

BM25's ``avg_len`` is, unless configured, the collection's mean document length, measured when a
generation is built and pinned in it (Qdrant's default 256 for a new, empty collection), so that
every replica and every stored vector use the same one; a rebuild measures it again. It is the one
statistic measured over every tenant, and it moves only at a rebuild, never with a write; set
``STRATA_RETRIEVAL_BM25_AVG_LEN`` to make it a constant.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import qdrant_edge as qe
from qdrant_client import models

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.errors import EmbeddingModelMismatch, RebuildInProgress
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import DEFAULT_OWN_TEXT_WEIGHT, Document, DocumentFilter, ScoredKey
from strata_retrieval.text_index import query_words
from strata_retrieval.vectors import generations, qdrant_rebuild
from strata_retrieval.vectors.bm25 import (
    DEFAULT_AVG_LEN,
    OWN_SPARSE_NAME,
    SPARSE_NAME,
    Bm25Params,
    bm25_encoder,
    sparse_vectors,
)
from strata_retrieval.vectors.payload import (
    HNSW_EF,
    VECTOR_NAME,
    to_payload,
)
from strata_retrieval.vectors.qdrant_dense import QdrantDenseIndex, client_filter
from strata_retrieval.vectors.qdrant_rebuild import REBUILD_PAGE, Building, Embed

log = logging.getLogger("strata.retrieval.qdrant_server")
SPARSE_VECTORS = [SPARSE_NAME, OWN_SPARSE_NAME]
"""The sparse vectors of a generation, pinned in its metadata (older ones had ``bm25`` only)."""
PREFETCH_FACTOR = 2
"""Each sparse prefetch of the text leg fetches this many times the leg's limit before the rescore."""
REBUILD_WAIT_SECONDS = 1.0
"""At start, how long to wait before looking again at a rebuild another replica is running."""


class QdrantJointIndex(QdrantDenseIndex):
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
        rebuild_with: Embed | None = None,
        own_text_weight: float = DEFAULT_OWN_TEXT_WEIGHT,
    ) -> None:
        """``rebuild_with``: when the serving generation was built with another model or other BM25
        parameters, rebuild it with this embedder (:meth:`rebuild`) instead of refusing it."""
        self._manifest = manifest
        self._own_text_weight = own_text_weight
        self._sparse_names = SPARSE_VECTORS  # the serving generation's (older ones: bm25 only)
        self._wanted = bm25 or Bm25Params()
        self._params = replace(self._wanted, avg_len=self._wanted.avg_len or DEFAULT_AVG_LEN)
        self._bm25 = bm25_encoder(self._params)
        self._writes = threading.Lock()  # a write and a rebuild's copy of a page, one at a time
        self._building: Building | None = None
        self._rebuild_with = rebuild_with
        super().__init__(url, manifest.embedding_dimension, collection=collection, api_key=api_key)

    def _open(self, dimension: int) -> None:
        waited = False
        while True:
            serving = generations.current(self._client, self._collection)
            if serving is None:
                first = generations.generation_name(self._collection, 1)
                self._create_generation(first, self._params)
                generations.point_alias(self._client, self._collection, first)
                return
            found = self._metadata(serving)
            if self._matches(found):
                self._sparse_names = list(found.get("sparse_vectors") or [SPARSE_NAME])
                self._params = Bm25Params(**found["bm25"])
                self._bm25 = bm25_encoder(self._params)
                return
            if self._rebuild_with is None:
                break
            if not waited:
                log.warning("collection %r was built with %s: rebuilding it", self._collection, found)
            try:
                self.rebuild(self._rebuild_with)
            except RebuildInProgress as other:  # replicas started together: one rebuilds, the others
                if not waited:  # wait, then serve what it built (or rebuild, if it built another)
                    log.warning("%s; waiting for it", other.message)
                waited = True
                time.sleep(REBUILD_WAIT_SECONDS)
            else:
                return
        self.close()  # local mode on disk holds a lock until closed
        raise EmbeddingModelMismatch(
            f"Qdrant collection {self._collection!r} was built with {found or 'no recorded model'} but "
            f"the service is configured with {self._pins(self._wanted)}; rebuild it (start once with "
            "STRATA_RETRIEVAL_REBUILD_ON_MODEL_CHANGE=true)",
            metadata={
                "index_model": str(found.get("embedding_model", "")),
                "configured_model": self._manifest.embedding_model,
                "collection": self._collection,
            },
        )

    def _pins(self, params: Bm25Params) -> dict[str, Any]:
        return {**asdict(self._manifest), "bm25": asdict(params), "sparse_vectors": SPARSE_VECTORS}

    def _metadata(self, collection: str) -> dict[str, Any]:
        return dict(self._client.get_collection(collection).config.metadata or {})

    def _matches(self, found: dict[str, Any]) -> bool:
        """Whether a generation with metadata ``found`` can serve as configured: same model, same
        BM25 ``k`` and ``b``, and the configured ``avg_len`` if one is configured."""
        built = found.get("bm25") or {}
        return (
            {key: found.get(key) for key in asdict(self._manifest)} == asdict(self._manifest)
            and (built.get("k"), built.get("b")) == (self._wanted.k, self._wanted.b)
            and isinstance(built.get("avg_len"), float | int)
            and self._wanted.avg_len in (None, built["avg_len"])
        )

    def _create_generation(self, name: str, params: Bm25Params, *, building: bool = False) -> None:
        """Create generation ``name`` (marked as being built if ``building``). Raises
        :class:`RebuildInProgress` when a collection of that name exists: another build claimed it."""
        metadata = {**self._pins(params), **(generations.building_mark() if building else {})}
        try:
            self._client.create_collection(
                name,
                vectors_config={
                    VECTOR_NAME: models.VectorParams(
                        size=self._manifest.embedding_dimension, distance=models.Distance.COSINE
                    )
                },
                sparse_vectors_config={
                    name: models.SparseVectorParams(modifier=models.Modifier.IDF) for name in SPARSE_VECTORS
                },
                metadata=metadata,
            )
        except Exception as failure:
            if building and self._client.collection_exists(name):
                raise RebuildInProgress(
                    f"another rebuild of {self._collection!r} claimed {name} first: let it finish",
                    metadata={"collection": self._collection, "building": name},
                ) from failure
            raise
        self._create_payload_indexes(name)

    @property
    def bm25_params(self) -> Bm25Params:
        """The parameters of the serving generation (``avg_len`` as measured or configured)."""
        return self._params

    @property
    def generation(self) -> str:
        """The physical collection the alias points at now."""
        serving = generations.current(self._client, self._collection)
        assert serving is not None, "the alias exists from the moment the index is open"
        return serving

    def rebuild(self, embed: Embed, *, page_size: int = REBUILD_PAGE) -> str:
        """Build the next generation from the serving one's points, swap the alias onto it and drop
        the serving one; returns the new generation's name.

        Searches keep reading the serving generation through the alias until the swap. Writes made
        through this index meanwhile go to both, and each page is copied under the write lock from
        the serving generation as it is then, so no write is lost or undone by the copy. Writes other
        processes make meanwhile reach only the old generation: run MemoryService's every-tenant
        Reindex after a rebuild beside other replicas. Dense vectors are copied when the model is
        unchanged and embedded again with ``embed`` otherwise. On any failure the new generation is
        dropped and the alias stays where it was. One rebuild at a time (:mod:`.generations`): while
        another is building, or once it moved the alias meanwhile, this one raises
        :class:`RebuildInProgress` having changed nothing.
        """
        serving = self.generation
        reuse_vectors = self._matches_model(self._metadata(serving))
        avg_len = (
            self._wanted.avg_len
            or qdrant_rebuild.mean_length(self._client, self._collection)
            or DEFAULT_AVG_LEN
        )
        params = replace(self._wanted, avg_len=float(avg_len))
        numbers = generations.generations(self._client, self._collection)  # a dead build's number too:
        generations.drop_dead_builds(self._client, self._collection)  # never reused, if it wakes up
        building = Building(
            generations.generation_name(self._collection, max(numbers, default=0) + 1), bm25_encoder(params)
        )
        self._create_generation(building.collection, params, building=True)
        try:
            with self._writes:
                self._building = building
            beaten = time.time()  # the mark it was created with
            for keys in qdrant_rebuild.key_pages(self._client, self._collection, page_size):
                with self._writes:
                    qdrant_rebuild.copy_points(
                        self._client,
                        self._collection,
                        keys,
                        building,
                        embed=embed,
                        reuse_vectors=reuse_vectors,
                    )
                beaten = generations.beat(self._client, building.collection, beaten)
            with self._writes:
                self._check_still_serving(serving, building.collection)
                generations.swap(self._client, self._collection, serving, building.collection)
                self._building = None
                self._params, self._bm25 = params, building.bm25
                self._sparse_names = SPARSE_VECTORS
        except BaseException:
            with self._writes:
                self._building = None
            self._client.delete_collection(building.collection)
            raise
        if serving != self._collection:
            self._client.delete_collection(serving)
        log.info("collection %r now served by %s (%s)", self._collection, building.collection, params)
        return building.collection

    def _check_still_serving(self, serving: str, built: str) -> None:
        """Refuse to swap when another rebuild moved the alias off ``serving`` meanwhile: ``built``
        was copied (in part) from a generation no longer served, and is dropped."""
        now = generations.current(self._client, self._collection)
        if now != serving:
            raise RebuildInProgress(
                f"another rebuild moved {self._collection!r} from {serving} to {now} while {built} was "
                f"built from {serving}: {built} is dropped and {now} keeps serving; run the rebuild "
                "again if it is still needed",
                metadata={"collection": self._collection, "building": built},
            )

    def _matches_model(self, found: dict[str, Any]) -> bool:
        return {key: found.get(key) for key in asdict(self._manifest)} == asdict(self._manifest)

    def upsert(self, documents: Sequence[Document], vectors: Vectors) -> None:
        """Each document as one point with both vectors: the dense row and its text's BM25 (into
        the generation being built too, if any)."""
        with self._writes:
            self._client.upsert(
                self._collection,
                points=self._points(self._bm25, documents, vectors, self._sparse_names),
                wait=True,
            )
            if self._building is not None:
                points = self._points(self._building.bm25, documents, vectors, SPARSE_VECTORS)
                self._client.upsert(self._building.collection, points=points, wait=True)

    def _points(
        self, bm25: qe.Bm25, documents: Sequence[Document], vectors: Vectors, sparse_names: Sequence[str]
    ) -> list[models.PointStruct]:
        return [
            models.PointStruct(
                id=doc.key,
                vector={VECTOR_NAME: row.tolist(), **sparse_vectors(bm25, doc, sparse_names)},
                payload=to_payload(doc),
            )
            for doc, row in zip(documents, vectors, strict=True)
        ]

    def delete(self, keys: Sequence[str]) -> None:
        with self._writes:
            super().delete(keys)
            if self._building is not None and keys:
                selector = models.PointIdsList(points=list(keys))
                self._client.delete(self._building.collection, points_selector=selector, wait=True)

    def search_text(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        request = self._text_request(text, flt, limit)
        if request is None:
            return []
        return _scored(self._client.query_batch_points(self._collection, [request])[0])

    def sparse_held(self, keys: Sequence[str]) -> set[str]:
        """Those of ``keys`` whose point carries a sparse vector, in the serving generation or the
        one being built."""
        collections = [self._collection]
        if self._building is not None:
            collections.append(self._building.collection)
        held: set[str] = set()
        for collection in collections:
            records = self._client.retrieve(collection, ids=list(keys), with_vectors=[SPARSE_NAME])
            held.update(str(r.id) for r in records if isinstance(r.vector, dict) and SPARSE_NAME in r.vector)
        return held

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
        punctuation) or ``limit`` is 0: the text's sparse vector alone, or with the context's, the
        union rescored by ``bm25 + own_text_weight * bm25_own``."""
        query = self._bm25.embed_query(" ".join(query_words(text)))
        if not query.indices or limit <= 0:
            return None
        sparse = models.SparseVector(indices=list(query.indices), values=list(query.values))
        params = models.SearchParams(idf=models.IdfCorpusParams(corpus=tenant_corpus(flt.tenant_id)))
        if self._own_text_weight <= 0 or OWN_SPARSE_NAME not in self._sparse_names:
            return models.QueryRequest(
                query=sparse,
                using=SPARSE_NAME,
                filter=client_filter(flt),
                params=params,
                limit=limit,
                with_payload=False,
            )
        prefetch = [
            models.Prefetch(
                query=sparse,
                using=name,
                filter=client_filter(flt),
                params=params,
                limit=limit * PREFETCH_FACTOR,
            )
            for name in SPARSE_VECTORS
        ]
        formula = models.SumExpression(
            sum=["$score[0]", models.MultExpression(mult=[self._own_text_weight, "$score[1]"])]
        )
        return models.QueryRequest(
            prefetch=prefetch,
            query=models.FormulaQuery(formula=formula, defaults={"$score[0]": 0.0, "$score[1]": 0.0}),
            limit=limit,
            with_payload=False,
        )


class SparseTextLeg:
    """The :class:`~strata_retrieval.legs.TextIndex` of the server engine: a view of the sparse
    vectors that :meth:`QdrantJointIndex.upsert` writes into each point with its dense vector, and
    that deleting the point removes. Writing here therefore has nothing left to do."""

    def __init__(self, index: QdrantJointIndex) -> None:
        self._index = index

    def upsert(self, documents: Sequence[Document]) -> None:
        """Nothing to do: the points already carry their sparse vectors."""

    def delete(self, tenant_id: str, keys: Sequence[str]) -> None:
        """Nothing to do: deleting a point deleted its sparse vector."""

    def search(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        return self._index.search_text(text, flt, limit)

    def held(self, tenant_id: str, keys: Sequence[str]) -> set[str]:
        return self._index.sparse_held(keys) if keys else set()

    def close(self) -> None:
        """The index owns the connection and closes it."""


def tenant_corpus(tenant_id: str) -> models.Filter:
    """The points a tenant's BM25 statistics (the IDF of each query term) are computed over."""
    return models.Filter(
        must=[models.FieldCondition(key="tenant_id", match=models.MatchValue(value=tenant_id))]
    )


def _scored(response: models.QueryResponse) -> list[ScoredKey]:
    return [ScoredKey(key=str(point.id), score=float(point.score)) for point in response.points]
