"""RetrievalEngine with the real embedder over each engine (Edge + Tantivy, qdrant-client + Tantivy, and
the server engine: both legs in one Qdrant collection): fusion, each leg's depth and trace, maintenance
at its threshold, a candidate deleted before its document is read, the disk checks of a write, and
the server engine's rebuild with the engine's own model (concurrent calls: test_engine_races.py)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from strata_retrieval.disk import DiskGuard, IndexDiskFull
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.fusion import FusionSetting, dbsf_ranking, rrf_ranking
from strata_retrieval.legs import JointSearch, TextIndex
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import (
    Document,
    DocumentFilter,
    DocumentKind,
    Fusion,
    LegWeights,
    Scope,
    SearchMode,
    SearchQuery,
    document_key,
)
from strata_retrieval.text_tenants import TenantTextIndexes
from strata_retrieval.vectors.edge_shard import EdgeShardIndex
from strata_retrieval.vectors.protocol import VectorIndex
from strata_retrieval.vectors.qdrant_dense import QdrantDenseIndex
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex, SparseTextLeg
from tests.system.test_tracing import spans

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
__all__ = ["spans"]  # fixture: spans recorded in memory


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
    text: TextIndex = TenantTextIndexes(tmp_path / "text")
    if request.param == "edge":
        vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    elif request.param == "qdrant_local":
        vectors = QdrantDenseIndex(":memory:", embedder.dimension)
    else:
        text.close()
        server = QdrantJointIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
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


def test_a_rebuild_embeds_the_documents_again_when_the_index_holds_another_models_vectors(
    embedder: OnnxSentenceEmbedder,
) -> None:
    server = QdrantJointIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
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


def test_each_leg_fetches_its_own_depth(engine: RetrievalEngine) -> None:
    words = "glucose cell ocean bones"  # five facts share a word with it, all six are candidates by meaning
    query = SearchQuery(text=words, mode=SearchMode.HYBRID, filter=SCOPE, top_k=1)
    assert {leg: len(found) for leg, found in engine.candidates(query).items()} == {"vector": 6, "fts": 5}
    deep = SearchQuery(text=words, mode=SearchMode.HYBRID, filter=SCOPE, top_k=1, vector_depth=2, fts_depth=3)
    assert {leg: len(found) for leg, found in engine.candidates(deep).items()} == {"vector": 2, "fts": 3}


def test_hybrid_legs_are_traced_with_the_depth_each_searched(
    engine: RetrievalEngine, spans: InMemorySpanExporter
) -> None:
    query = SearchQuery(
        text="glucose", mode=SearchMode.HYBRID, filter=SCOPE, top_k=2, vector_depth=3, fts_depth=4
    )
    engine.search(query)
    traced = sorted(
        (span.name, sorted(dict(span.attributes or {}).items()))
        for span in spans.get_finished_spans()
        if span.name.startswith("search.") and span.name != "search.fusion"
    )
    # each leg reads one past its depth, to see whether a run of equal scores crosses the cut
    if isinstance(engine._vectors, JointSearch):  # one request to one collection: the deeper depth
        assert traced == [("search.joint_legs", [("depth", 5)])]
    else:
        assert traced == [("search.fts_leg", [("depth", 5)]), ("search.vector_leg", [("depth", 4)])]


def test_a_hit_deleted_before_its_document_is_read_gives_its_place_to_the_next(
    engine: RetrievalEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search returns top_k hits whenever that many documents match, even when a candidate the
    legs returned is deleted before the search reads its document."""
    query = SearchQuery(text="glucose in the blood", mode=SearchMode.HYBRID, filter=SCOPE, top_k=3)
    everyone = [hit.document.id for hit in engine.search(replace(query, top_k=len(FACTS))).hits]
    fetch = engine._vectors.fetch
    deleted: list[str] = []

    def deleted_meanwhile(keys: list[str]) -> dict[str, Document]:
        if not deleted:
            deleted.append(everyone[0])
            engine.delete_ids("t", deleted)
        return fetch(keys)

    monkeypatch.setattr(engine._vectors, "fetch", deleted_meanwhile)
    assert [hit.document.id for hit in engine.search(query).hits] == everyone[1:4]


@dataclass(frozen=True)
class SetFreeSpace(DiskGuard):
    """A filesystem whose free space the test sets: each check reads the next figure, then the last."""

    free: list[int] = field(default_factory=list)

    def free_bytes(self) -> int:
        return self.free.pop(0) if len(self.free) > 1 else self.free[0]


def test_a_write_needs_room_for_its_text_and_vectors_when_it_starts_and_when_it_writes(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    """disk.py's estimate: reserve + 4 x the batch's text bytes + 4 KiB per document, checked before
    embedding and again under the write lock (the disk may fill while the batch is embedded)."""
    reserve = 10_000
    guard = SetFreeSpace(tmp_path, reserve_bytes=reserve)
    engine = RetrievalEngine(
        embedder,
        EdgeShardIndex(tmp_path / "vectors", embedder.dimension),
        TenantTextIndexes(tmp_path / "text"),
        EngineConfig(),
        disk=guard,
    )
    try:
        batch = [replace(document, text=f"{document.text}, crème brûlée") for document in documents()[:2]]
        needed = reserve + 4 * sum(len(d.embedded_text.encode()) for d in batch) + 4096 * len(batch)
        for free in ([needed - 1], [needed, needed - 1]):
            guard.free[:] = free
            with pytest.raises(IndexDiskFull):
                engine.upsert(batch)
            assert engine.stats(SCOPE).document_count == 0
        guard.free[:] = [needed]
        assert engine.upsert(batch) == 2
        guard.free[:] = [reserve - 1]  # a delete needs the reserve only
        with pytest.raises(IndexDiskFull):
            engine.delete_ids("t", ["f0"])
        with pytest.raises(IndexDiskFull):
            engine.delete_matching(SCOPE)
        guard.free[:] = [reserve]
        assert engine.delete_matching(SCOPE) == 2
    finally:
        engine.close()


def test_maintenance_builds_once_exactly_the_threshold_is_unindexed(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, caplog: pytest.LogCaptureFixture
) -> None:
    vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    text = TenantTextIndexes(tmp_path / "text")
    engine = RetrievalEngine(embedder, vectors, text, EngineConfig(hnsw_build_threshold=len(FACTS)))
    caplog.set_level(logging.INFO, logger="strata.retrieval.engine")
    try:
        engine.upsert(documents()[:-1])
        assert engine.maintain() is False
        assert caplog.records == []  # one short of the threshold: no build
        engine.upsert(documents()[-1:])
        engine.maintain()  # the index's own verdict (Edge searches 6 vectors exactly, graph or not)
        assert [r.getMessage() for r in caplog.records] == [
            f"building HNSW for {len(FACTS)} unindexed vectors"
        ]
        assert search(engine, "largest ocean", SearchMode.VECTOR, top_k=1) == ["f4"]
    finally:
        engine.close()


def test_the_last_place_goes_to_the_smallest_id_among_equal_scores(engine: RetrievalEngine) -> None:
    """Only the text leg counts (vector weight 0): f1 alone says "mitochondria" and the five others,
    candidates of the vector leg, score exactly 0. The second place goes to the smallest id among
    them, f0, not to f2, which comes first in storage-key order."""
    tied = ["f0", "f2", "f3", "f4", "f5"]
    assert min(tied, key=lambda document_id: document_key("t", document_id)) == "f2"
    query = SearchQuery(
        text="mitochondria",
        mode=SearchMode.HYBRID,
        filter=SCOPE,
        top_k=2,
        weights=LegWeights(vector=0.0, fts=1.0),
    )
    hits = engine.search(query).hits
    assert [(hit.document.id, hit.rrf_score) for hit in hits] == [("f1", pytest.approx(1 / 61)), ("f0", 0.0)]


def test_an_engine_configured_for_dbsf_fuses_hybrid_searches_by_the_legs_scores(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    text = TenantTextIndexes(tmp_path / "text")
    engine = RetrievalEngine(embedder, vectors, text, EngineConfig(fusion=FusionSetting(Fusion.DBSF)))
    try:
        engine.upsert(documents())
        weights = LegWeights(vector=0.5, fts=1.0)
        query = SearchQuery(
            text="glucose in the blood", mode=SearchMode.HYBRID, filter=SCOPE, top_k=4, weights=weights
        )
        legs = engine.candidates(query)
        weights_ = {"vector": 0.5, "fts": 1.0}
        fused = dbsf_ranking(
            {leg: [(c.key, c.score) for c in found] for leg, found in legs.items()}, weights=weights_
        )
        hits = engine.search(query).hits
        assert [hit.document.key for hit in hits] == fused.keys[:4]
        assert [hit.score for hit in hits] == pytest.approx([fused.scores[key] for key in fused.keys[:4]])
        by_rank = rrf_ranking({leg: [c.key for c in found] for leg, found in legs.items()}, weights=weights_)
        assert [hit.rrf_score for hit in hits] == pytest.approx(
            [by_rank.scores[key] for key in fused.keys[:4]]
        )
        assert {hit.fts_rank for hit in hits} - {None} == {1, 2}  # "glucose": f0 and f2
        # a single leg keeps its order and its RRF score (the request's k)
        fts = SearchQuery(text="glucose", mode=SearchMode.FTS, filter=SCOPE, top_k=2, rrf_k=10.0)
        assert [hit.rrf_score for hit in engine.search(fts).hits] == [1 / 11, 1 / 12]
    finally:
        engine.close()
