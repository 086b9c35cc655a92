"""RetrievalEngine's writes, deletes, listings and statistics, and what each search hit reports, over
the real embedder with the embedded engine (Edge + Tantivy): the promises of retrieval.proto for
DeleteDocuments, ListDocumentIds and GetStats, checked on the engine the servicer calls."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from strata_retrieval.disk import DiskGuard, IndexDiskFull
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.limits import Limits
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import (
    Document,
    DocumentFilter,
    DocumentKind,
    LegWeights,
    Scope,
    SearchMode,
    SearchQuery,
    document_key,
)
from strata_retrieval.text_tenants import TenantTextIndexes
from strata_retrieval.vectors.edge_shard import EdgeShardIndex
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex, SparseTextLeg
from strata_serving.errors import FailedPrecondition, InvalidArgument
from tests.system.test_tracing import spans

T0 = datetime(2026, 7, 1, tzinfo=UTC)
__all__ = ["spans"]  # fixture: spans recorded in memory
T, U = "tenant-t", "tenant-u"
PASSAGES = {
    "p1": ("Insulin lowers the level of glucose in the blood", ("health",)),
    "p2": ("The Pacific is the largest ocean on Earth", ("geo",)),
    "p3": ("Mount Everest is the highest mountain above sea level", ("geo", "peaks")),
}
MESSAGES = {
    "m1": "I walked the dog along the beach this morning",
    "m2": "Glucose tablets help when sugar is low",
}


def passage(tenant: str, document_id: str, hours: int = 0) -> Document:
    text, tags = PASSAGES[document_id]
    return Document(
        id=document_id,
        text=text,
        kind=DocumentKind.PASSAGE,
        scope=Scope(tenant_id=tenant, archive_id="archive-1"),
        created_at=T0 + timedelta(hours=hours),
        tags=tags,
    )


def message(tenant: str, document_id: str, hours: int = 0) -> Document:
    return Document(
        id=document_id,
        text=MESSAGES[document_id],
        kind=DocumentKind.MESSAGE,
        scope=Scope(tenant_id=tenant, agent_id="agent-1", conversation_id="c"),
        created_at=T0 + timedelta(hours=hours),
        role="user",
    )


def everything(tenant: str) -> list[Document]:
    passages = [passage(tenant, "p1", 1), passage(tenant, "p2", 2), passage(tenant, "p3", 3)]
    return [*passages, message(tenant, "m1", 4), message(tenant, "m2", 5)]


def build(
    root: Path, embedder: OnnxSentenceEmbedder, config: EngineConfig, disk: DiskGuard | None = None
) -> RetrievalEngine:
    vectors = EdgeShardIndex(root / "vectors", embedder.dimension)
    text = TenantTextIndexes(root / "text")
    return RetrievalEngine(embedder, vectors, text, config, disk=disk)


@pytest.fixture
def engine(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> Iterator[RetrievalEngine]:
    limits = Limits(max_delete_ids=3)
    running = build(tmp_path, embedder, EngineConfig(limits=limits, hnsw_build_threshold=1_000))
    assert running.upsert(everything(T)) == 5
    assert running.upsert(everything(U)[:2]) == 2
    yield running
    running.close()


def ids(engine: RetrievalEngine, text: str, mode: SearchMode, tenant: str = T, top_k: int = 10) -> list[str]:
    query = SearchQuery(text=text, mode=mode, filter=DocumentFilter(tenant_id=tenant), top_k=top_k)
    return [hit.document.id for hit in engine.search(query).hits]


def held(engine: RetrievalEngine, tenant: str) -> set[str]:
    return set(engine.list_ids(DocumentFilter(tenant_id=tenant), after_key="", limit=100)[0])


def field_of(error: pytest.ExceptionInfo[InvalidArgument]) -> str:
    ((field, _),) = error.value.field_violations
    return field


def test_delete_ids_removes_from_both_legs_and_counts_what_existed(engine: RetrievalEngine) -> None:
    assert engine.delete_ids(T, ["p1", "p1", "missing"]) == 1
    assert "p1" not in ids(engine, "glucose insulin blood", SearchMode.FTS)
    assert "p1" not in ids(engine, "glucose insulin blood", SearchMode.VECTOR)
    assert held(engine, T) == {"p2", "p3", "m1", "m2"}
    assert held(engine, U) == {"p1", "p2"}  # the same id in another tenant is another document
    assert engine.delete_ids(T, []) == 0
    assert engine.delete_ids(T, ["p1"]) == 0


def test_delete_ids_refuses_bad_input_and_changes_nothing(engine: RetrievalEngine) -> None:
    with pytest.raises(InvalidArgument) as too_many:
        engine.delete_ids(T, ["p1", "p2", "p3", "m1"])  # the limit is 3
    assert too_many.value.field_violations == (("ids.ids", "holds 4 ids; at most 3"),)
    with pytest.raises(InvalidArgument) as blank:
        engine.delete_ids(T, ["p1", ""])
    assert field_of(blank) == "ids.ids[1]"
    with pytest.raises(InvalidArgument) as no_tenant:
        engine.delete_ids("", ["p1"])
    assert field_of(no_tenant) == "ids.tenant_id"
    assert engine.delete_ids(T, ["p1", "p2", "p3"]) == 3  # exactly the limit is allowed
    assert held(engine, T) == {"m1", "m2"}
    assert held(engine, U) == {"p1", "p2"}


def test_delete_matching_deletes_the_filter_and_counts_it(engine: RetrievalEngine) -> None:
    flt = DocumentFilter(tenant_id=T, kinds=(DocumentKind.MESSAGE,))
    assert engine.delete_matching(flt) == 2
    assert held(engine, T) == {"p1", "p2", "p3"}
    assert "m2" not in ids(engine, "glucose tablets sugar", SearchMode.FTS)
    assert engine.delete_matching(flt) == 0
    with pytest.raises(InvalidArgument):
        engine.delete_matching(DocumentFilter(tenant_id=""))
    assert held(engine, U) == {"p1", "p2"}


def test_list_ids_pages_in_key_order(engine: RetrievalEngine) -> None:
    everyone = DocumentFilter(tenant_id=T)
    by_key = sorted(["p1", "p2", "p3", "m1", "m2"], key=lambda i: document_key(T, i))
    first, after = engine.list_ids(everyone, after_key="", limit=2)
    assert (first, after) == (by_key[:2], document_key(T, by_key[1]))
    second, after = engine.list_ids(everyone, after_key=after, limit=2)
    assert (second, after) == (by_key[2:4], document_key(T, by_key[3]))
    last, after = engine.list_ids(everyone, after_key=after, limit=2)
    assert (last, after) == (by_key[4:], "")
    three, after = engine.list_ids(everyone, after_key="", limit=3)
    assert (three, after) == (by_key[:3], document_key(T, by_key[2]))  # the page's last key
    exact, after = engine.list_ids(everyone, after_key="", limit=5)
    assert (exact, after) == (by_key, "")  # a page that ends the listing says so
    messages = DocumentFilter(tenant_id=T, kinds=(DocumentKind.MESSAGE,))
    assert sorted(engine.list_ids(messages, after_key="", limit=10)[0]) == ["m1", "m2"]
    with pytest.raises(InvalidArgument):
        engine.list_ids(DocumentFilter(tenant_id=""), after_key="", limit=2)


@pytest.mark.parametrize("backend", ["edge", "server_local"])
def test_a_page_of_ids_reads_that_page_not_every_key_of_the_tenant(
    backend: str, tmp_path: Path, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reindex lists a tenant's ids a page at a time; each page listed every key of the tenant and cut
    its page from them, so listing N documents read N keys per page (quadratic: ~0.5 s per page at
    100k documents on the embedded engine, a whole Reindex of 1M spending ~17 min listing)."""
    if backend == "edge":
        running = build(tmp_path, embedder, EngineConfig())
    else:
        vectors = QdrantJointIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
        running = RetrievalEngine(embedder, vectors, SparseTextLeg(vectors), EngineConfig())
    try:
        running.upsert(everything(T))
        index = running._vectors

        def every_key(flt: DocumentFilter) -> list[str]:
            raise AssertionError("a page of ids listed every key")

        monkeypatch.setattr(index, "keys_matching", every_key)
        by_key = sorted(["p1", "p2", "p3", "m1", "m2"], key=lambda i: document_key(T, i))
        pages, after = [], ""
        while True:
            page, after = running.list_ids(DocumentFilter(tenant_id=T), after_key=after, limit=2)
            pages.append(page)
            if not after:
                break
        assert pages == [by_key[:2], by_key[2:4], by_key[4:]]
        running.delete_ids(T, [by_key[2]])  # the key a page ended after may be gone by the next
        page, _ = running.list_ids(DocumentFilter(tenant_id=T), after_key=document_key(T, by_key[2]), limit=2)
        assert page == by_key[3:5]
    finally:
        running.close()


def test_stats_count_each_kind_within_the_filter(
    engine: RetrievalEngine, embedder: OnnxSentenceEmbedder
) -> None:
    stats = engine.stats(DocumentFilter(tenant_id=T))
    assert (stats.document_count, stats.passage_count, stats.message_count) == (5, 3, 2)
    assert sorted(stats.tags) == ["geo", "health", "peaks"]
    assert (stats.embedding_model, stats.embedding_dimension) == (embedder.name, embedder.dimension)
    messages = engine.stats(DocumentFilter(tenant_id=T, kinds=(DocumentKind.MESSAGE,)))
    assert (messages.document_count, messages.passage_count, messages.message_count) == (2, 0, 2)
    passages = engine.stats(DocumentFilter(tenant_id=T, kinds=(DocumentKind.PASSAGE,)))
    assert (passages.document_count, passages.passage_count, passages.message_count) == (3, 3, 0)
    other = engine.stats(DocumentFilter(tenant_id=U))
    assert (other.document_count, other.passage_count, other.message_count) == (2, 2, 0)
    with pytest.raises(InvalidArgument):
        engine.stats(DocumentFilter(tenant_id=""))


def test_documents_per_tenant_follow_writes_and_deletes(engine: RetrievalEngine) -> None:
    assert engine.documents_per_tenant() == {T: 5, U: 2}
    engine.delete_ids(U, ["p1"])
    assert engine.documents_per_tenant() == {T: 5, U: 1}


def test_candidates_are_the_legs_a_search_fuses(engine: RetrievalEngine) -> None:
    query = SearchQuery(text="glucose", mode=SearchMode.HYBRID, filter=DocumentFilter(tenant_id=T), top_k=2)
    legs = engine.candidates(query)
    assert set(legs) == {"vector", "fts"}
    assert {c.key for c in legs["fts"]} == {document_key(T, "p1"), document_key(T, "m2")}
    assert len(legs["vector"]) == 5  # over-fetched: every document of the tenant (depth 50)
    fts_only = engine.candidates(
        SearchQuery(text="glucose", mode=SearchMode.FTS, filter=query.filter, top_k=1)
    )
    assert list(fts_only) == ["fts"]
    assert len(fts_only["fts"]) == 1
    with pytest.raises(InvalidArgument):
        engine.candidates(SearchQuery(text="glucose", mode=SearchMode.FTS, filter=query.filter, top_k=0))


def test_hits_report_the_fused_score_and_each_legs_rank_and_raw_score(engine: RetrievalEngine) -> None:
    query = SearchQuery(
        text="glucose",
        mode=SearchMode.HYBRID,
        filter=DocumentFilter(tenant_id=T),
        top_k=5,
        rrf_k=10.0,
        weights=LegWeights(vector=1.0, fts=0.5),
    )
    legs = engine.candidates(query)
    result = engine.search(query)
    assert result.mode is SearchMode.HYBRID
    assert len(result.hits) == 5
    vector = {c.key: (rank, c.score) for rank, c in enumerate(legs["vector"], start=1)}
    fts = {c.key: (rank, c.score) for rank, c in enumerate(legs["fts"], start=1)}
    for hit in result.hits:
        key = hit.document.key
        v_rank, v_score = vector[key]
        assert (hit.vector_rank, hit.vector_score) == (v_rank, v_score)
        if key in fts:
            assert (hit.fts_rank, hit.fts_score) == fts[key]
            expected = 1.0 / (10 + v_rank) + 0.5 / (10 + fts[key][0])
        else:
            assert (hit.fts_rank, hit.fts_score) == (None, None)
            expected = 1.0 / (10 + v_rank)
        assert hit.rrf_score == pytest.approx(expected)
    scores = [hit.rrf_score for hit in result.hits]
    assert scores == sorted(scores, reverse=True)


def test_the_engines_default_weights_apply_when_the_query_names_none(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    text_only = build(tmp_path, embedder, EngineConfig(default_weights=LegWeights(vector=0.0, fts=2.0)))
    try:
        text_only.upsert(everything(T))
        assert text_only.default_weights == LegWeights(vector=0.0, fts=2.0)
        query = SearchQuery(
            text="glucose", mode=SearchMode.HYBRID, filter=DocumentFilter(tenant_id=T), top_k=5
        )
        hits = text_only.search(query).hits
        assert {hit.document.id for hit in hits[:2]} == {"p1", "m2"}  # the two that say "glucose"
        assert [hit.fts_rank for hit in hits[:2]] == [1, 2]
        for hit in hits:
            expected = 2.0 / (60 + hit.fts_rank) if hit.fts_rank else 0.0
            assert hit.rrf_score == pytest.approx(expected)
    finally:
        text_only.close()


def test_a_blank_query_lists_the_newest_documents_unscored(engine: RetrievalEngine) -> None:
    for mode in SearchMode:
        query = SearchQuery(text="  ", mode=mode, filter=DocumentFilter(tenant_id=T), top_k=2)
        result = engine.search(query)
        assert [h.document.id for h in result.hits] == ["m2", "m1"]
        assert {h.rrf_score for h in result.hits} == {0.0}
        assert result.mode is mode
    # text with no searchable word is blank to the text leg only
    words_none = SearchQuery(text="?!", mode=SearchMode.FTS, filter=DocumentFilter(tenant_id=T), top_k=2)
    assert [h.document.id for h in engine.search(words_none).hits] == ["m2", "m1"]
    hybrid = SearchQuery(text="?!", mode=SearchMode.HYBRID, filter=DocumentFilter(tenant_id=T), top_k=2)
    assert all(h.vector_rank is not None for h in engine.search(hybrid).hits)


def test_top_k_cuts_the_fused_list(engine: RetrievalEngine) -> None:
    for top_k in (1, 2, 5):
        assert len(ids(engine, "ocean mountain glucose", SearchMode.HYBRID, top_k=top_k)) == top_k
    assert ids(engine, "ocean", SearchMode.HYBRID, tenant=U, top_k=5) == ["p2", "p1"]


def test_maintain_builds_only_past_the_threshold(engine: RetrievalEngine) -> None:
    assert engine.unindexed_vectors() == 7
    assert engine.maintain() is False  # 7 unindexed, threshold 1000


def test_a_full_disk_refuses_writes_and_changes_nothing(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    (tmp_path / "data").mkdir()
    full = DiskGuard(tmp_path / "data", reserve_bytes=2**62)
    engine = build(tmp_path / "data", embedder, EngineConfig(), disk=full)
    try:
        with pytest.raises(IndexDiskFull):
            engine.upsert(everything(T))
        with pytest.raises(IndexDiskFull):
            engine.delete_ids(T, ["p1"])
        assert engine.stats(DocumentFilter(tenant_id=T)).document_count == 0
    finally:
        engine.close()


@pytest.mark.parametrize("leg", ["_vectors", "_text"])
def test_an_index_out_of_space_is_reported_as_disk_full_naming_it(
    engine: RetrievalEngine, monkeypatch: pytest.MonkeyPatch, leg: str
) -> None:
    def no_space(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(getattr(engine, leg), "upsert", no_space)
    with pytest.raises(IndexDiskFull) as full:
        engine.upsert([passage(T, "p1")])
    assert full.value.metadata["engine"] == ("the vector index" if leg == "_vectors" else "the text index")
    assert "([Errno 28] No space left on device)" in full.value.message  # the cause, for the operator

    def broken(*_: object) -> None:
        raise RuntimeError("index corrupted")

    monkeypatch.setattr(getattr(engine, leg), "upsert", broken)
    with pytest.raises(RuntimeError, match="index corrupted"):  # other failures pass through as they are
        engine.upsert([passage(T, "p1")])


@pytest.mark.parametrize("leg", ["_vectors", "_text"])
def test_an_index_out_of_space_while_deleting_is_reported_as_disk_full_naming_it(
    engine: RetrievalEngine, monkeypatch: pytest.MonkeyPatch, leg: str
) -> None:
    def no_space(*_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(getattr(engine, leg), "delete", no_space)
    with pytest.raises(IndexDiskFull) as full:
        engine.delete_ids(T, ["p1"])
    assert full.value.metadata["engine"] == ("the vector index" if leg == "_vectors" else "the text index")


def test_only_the_server_engine_rebuilds_behind_an_alias(
    engine: RetrievalEngine, embedder: OnnxSentenceEmbedder
) -> None:
    with pytest.raises(FailedPrecondition) as refused:
        engine.rebuild()
    assert str(refused.value) == "only the server engine (VECTOR_BACKEND=server) rebuilds behind an alias"
    server = QdrantJointIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
    rebuilt = RetrievalEngine(embedder, server, SparseTextLeg(server), EngineConfig())
    try:
        rebuilt.upsert(everything(T))
        first = server.generation
        generation = rebuilt.rebuild()
        assert generation != first
        assert server.generation == generation
        assert ids(rebuilt, "glucose insulin", SearchMode.FTS)[0] == "p1"  # the documents came along
    finally:
        rebuilt.close()


def test_each_leg_is_traced_with_the_depth_it_searched(
    engine: RetrievalEngine, spans: InMemorySpanExporter
) -> None:
    flt = DocumentFilter(tenant_id=T)
    hybrid = SearchQuery(
        text="glucose", mode=SearchMode.HYBRID, filter=flt, top_k=2, vector_depth=3, fts_depth=4
    )
    legs = engine.candidates(hybrid)
    engine.search(hybrid)
    engine.search(SearchQuery(text="glucose", mode=SearchMode.FTS, filter=flt, top_k=2))
    engine.search(SearchQuery(text="glucose", mode=SearchMode.VECTOR, filter=flt, top_k=1))
    traced = [(span.name, dict(span.attributes or {})) for span in spans.get_finished_spans()]
    fused = sum(len(candidates) for candidates in legs.values())
    found = sorted(
        (name, sorted(attributes.items())) for name, attributes in traced if name.startswith("search.")
    )
    # the text leg runs on a thread beside the vector leg: compared without their order; each leg
    # reads one past its depth, to see whether a run of equal scores crosses the cut
    assert found == sorted(
        [
            ("search.vector_leg", [("depth", 4)]),  # candidates(): the legs only
            ("search.fts_leg", [("depth", 5)]),
            ("search.vector_leg", [("depth", 4)]),
            ("search.fts_leg", [("depth", 5)]),
            ("search.fusion", [("candidates", fused)]),
            ("search.fts_leg", [("depth", 3)]),  # one leg: top_k candidates
            ("search.fusion", [("candidates", 2)]),
            ("search.vector_leg", [("depth", 2)]),
            ("search.fusion", [("candidates", 1)]),
        ]
    )
