"""RetrievalEngine with the real embedder over each engine (Edge + Tantivy, qdrant-client + Tantivy, and
the server engine: both legs in one Qdrant collection): fusion, depths, maintenance; a delete racing
another, and the server engine's rebuild with the engine's own model."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from strata_retrieval.documents import Document, DocumentFilter, DocumentKind, Scope, SearchMode, SearchQuery
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.legs import JointSearch, TextIndex
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.text_index import TantivyTextIndex
from strata_retrieval.vectors.edge_shard import EdgeShardIndex
from strata_retrieval.vectors.protocol import VectorIndex
from strata_retrieval.vectors.qdrant_collection import QdrantCollectionIndex
from strata_retrieval.vectors.qdrant_server import QdrantServerIndex, SparseTextLeg

T0 = datetime(2026, 7, 1, tzinfo=UTC)
FACTS = [
    "Photosynthesis turns sunlight, water and carbon dioxide into glucose",
    "The mitochondria is the powerhouse of the cell",
    "Insulin lowers the level of glucose in the blood",
    "Mount Everest is the highest mountain above sea level",
    "The Pacific is the largest ocean on Earth",
    "Vitamin D helps the body absorb calcium for strong bones",
]
SCOPE = DocumentFilter(tenant_id="t")


def documents() -> list[Document]:
    return [
        Document(
            id=f"f{i}",
            text=fact,
            kind=DocumentKind.PASSAGE,
            scope=Scope(tenant_id="t"),
            created_at=T0 + timedelta(hours=i),
        )
        for i, fact in enumerate(FACTS)
    ]


@pytest.fixture(params=["edge", "qdrant_local", "server_local"])
def engine(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> Iterator[RetrievalEngine]:
    vectors: VectorIndex
    text: TextIndex = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000)
    if request.param == "edge":
        vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    elif request.param == "qdrant_local":
        vectors = QdrantCollectionIndex(":memory:", embedder.dimension)
    else:
        text.close()
        server = QdrantServerIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
        vectors, text = server, SparseTextLeg(server)
    retrieval = RetrievalEngine(embedder, vectors, text, EngineConfig(hnsw_build_threshold=1))
    retrieval.upsert(documents())
    yield retrieval
    retrieval.close()


def search(
    engine: RetrievalEngine, text: str, mode: SearchMode, top_k: int = 3, **options: object
) -> list[str]:
    query = SearchQuery(text=text, mode=mode, filter=SCOPE, top_k=top_k, **options)  # type: ignore[arg-type]
    return [hit.document.id for hit in engine.search(query).hits]


def test_hybrid_agrees_with_both_legs_when_they_agree(engine: RetrievalEngine) -> None:
    for mode in SearchMode:
        assert search(engine, "which hormone reduces blood glucose", mode)[0] == "f2"


def test_hybrid_recovers_what_one_leg_misses(engine: RetrievalEngine) -> None:
    assert search(engine, "tallest peak", SearchMode.FTS) == []
    assert search(engine, "tallest peak", SearchMode.HYBRID)[0] == "f3"


def test_depth_limits_each_leg_before_fusion(engine: RetrievalEngine) -> None:
    query = SearchQuery(
        text="glucose", mode=SearchMode.HYBRID, filter=SCOPE, top_k=1, vector_depth=1, fts_depth=1
    )
    (hit,) = engine.search(query).hits
    assert hit.vector_rank in (1, None)
    assert hit.fts_rank in (1, None)


def test_maintenance_builds_indexes_and_search_stays_correct(engine: RetrievalEngine) -> None:
    engine.maintain()  # threshold 1: runs optimize (a no-op for qdrant-client)
    assert search(engine, "largest ocean", SearchMode.VECTOR, top_k=1) == ["f4"]
    assert engine.stats(SCOPE).document_count == len(FACTS)


def test_newest_first_when_the_query_is_blank(engine: RetrievalEngine) -> None:
    assert search(engine, " ", SearchMode.VECTOR, top_k=2) == ["f5", "f4"]


def test_a_failing_text_leg_fails_the_hybrid_search_and_the_next_one_succeeds(
    engine: RetrievalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The text leg runs on its own thread in hybrid mode; its error must reach the caller.
    def broken(*_: object) -> list[object]:
        raise OSError("text index unreadable")

    # The server engine runs both legs in one request: break that request.
    target: object = engine._vectors if isinstance(engine._vectors, JointSearch) else engine._text
    with monkeypatch.context() as patch:
        patch.setattr(target, "search_legs" if target is engine._vectors else "search", broken)
        with pytest.raises(OSError, match="text index unreadable"):
            search(engine, "glucose", SearchMode.HYBRID)
    assert search(engine, "which hormone reduces blood glucose", SearchMode.HYBRID)[0] == "f2"


def test_a_delete_landing_between_listing_and_removal_is_counted_once(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeleteDocuments reports "how many documents existed and were removed": when another call's
    delete lands wherever the engine lets a concurrent writer in (here: whenever its write lock is
    free after the filter was listed), each document is counted by the one call that removed it."""
    vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    text = TantivyTextIndex(tmp_path / "text", writer_heap_bytes=15_000_000)
    engine = RetrievalEngine(embedder, vectors, text, EngineConfig())
    try:
        engine.upsert(documents())
        listing = vectors.keys_matching
        others: list[int] = []

        def listing_then_another_delete(flt: DocumentFilter) -> list[str]:
            keys = listing(flt)
            if not engine._write_lock.locked():  # a concurrent writer could land right now
                others.append(engine.delete_ids("t", ["f1"]))
            return keys

        monkeypatch.setattr(vectors, "keys_matching", listing_then_another_delete)
        removed = engine.delete_matching(SCOPE)
        others.append(engine.delete_ids("t", ["f1"]))  # or it lands after: nothing left to remove
        assert removed + sum(others) == len(FACTS)
        assert search(engine, " ", SearchMode.VECTOR, top_k=10) == []
    finally:
        engine.close()


def test_a_rebuild_embeds_the_documents_again_when_the_index_holds_another_models_vectors(
    embedder: OnnxSentenceEmbedder,
) -> None:
    server = QdrantServerIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
    engine = RetrievalEngine(embedder, server, SparseTextLeg(server), EngineConfig())
    try:
        noise = np.random.default_rng(7).normal(size=(len(FACTS), embedder.dimension)).astype(np.float32)
        server.upsert(documents(), noise)  # vectors no model of ours made
        # the serving generation says so (as one built by a replica running another model would)
        server._client.update_collection(server.generation, metadata={"embedding_model": "bge-small-en"})
        engine.rebuild()
        for fact, document in zip(FACTS, documents(), strict=True):
            assert search(engine, fact, SearchMode.VECTOR, top_k=1) == [document.id]
    finally:
        engine.close()
