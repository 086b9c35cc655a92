"""One behaviour suite for every VectorIndex implementation: Qdrant Edge, qdrant-client (local mode),
and the server engine's collection (dense and BM25 sparse vectors; local mode)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope, TagMatch
from strata_retrieval.vectors.edge_shard import EdgeShardIndex
from strata_retrieval.vectors.payload import VECTOR_NAME
from strata_retrieval.vectors.protocol import VectorIndex
from strata_retrieval.vectors.qdrant_dense import QdrantDenseIndex
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex

DIM = 16
T0 = datetime(2026, 5, 1, tzinfo=UTC)
T1 = DocumentFilter(tenant_id="t1")


def unit(seed: int) -> Vectors:
    vector = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    normalised: Vectors = vector / np.linalg.norm(vector)
    return normalised


def corpus() -> list[Document]:
    """30 documents of tenant t1 (agents a0/a1/a2, alternating kinds, tags by residue) and 5 of t2."""
    documents = [
        Document(
            id=f"d{i}",
            text=f"document {i}",
            kind=DocumentKind.MESSAGE if i % 2 else DocumentKind.PASSAGE,
            scope=Scope(
                tenant_id="t1",
                agent_id=f"a{i % 3}",
                archive_id="arc" if i < 10 else "",
                conversation_id=f"c{i % 2}",
            ),
            role="user" if i % 2 else "",
            tags=tuple(tag for tag, every in (("red", 2), ("blue", 3)) if i % every == 0),
            created_at=T0 + timedelta(minutes=i),
            metadata={"n": str(i)},
        )
        for i in range(30)
    ]
    documents += [
        Document(
            id=f"x{i}",
            text="other tenant",
            kind=DocumentKind.PASSAGE,
            scope=Scope(tenant_id="t2"),
            created_at=T0,
        )
        for i in range(5)
    ]
    return documents


Factory = Callable[[Path], VectorIndex]
BACKENDS: dict[str, Factory] = {
    "edge": lambda path: EdgeShardIndex(path / "shard", DIM),
    "qdrant_local": lambda path: QdrantDenseIndex(":memory:", DIM),
    "server_local": lambda path: QdrantJointIndex(":memory:", IndexManifest("test-model", DIM)),
}


@pytest.fixture(params=sorted(BACKENDS))
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    vector_index = BACKENDS[request.param](tmp_path)
    documents = corpus()
    vector_index.upsert(documents, np.stack([unit(i) for i in range(len(documents))]))
    yield vector_index
    vector_index.close()


def ids_of(index: VectorIndex, keys: list[str]) -> list[str]:
    found = index.fetch(keys)
    return [found[key].id for key in keys]


def test_nearest_first_with_cosine_scores(index: VectorIndex) -> None:
    hits = index.search(unit(7), T1, 5)
    assert ids_of(index, [hit.key for hit in hits])[0] == "d7"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_filter_inside_the_query_returns_a_full_page(index: VectorIndex) -> None:
    flt = DocumentFilter(tenant_id="t1", tags=("blue",))  # d0, d3, ..., d27: 10 matches
    hits = index.search(unit(1), flt, 10)
    assert len(hits) == 10
    assert set(ids_of(index, [hit.key for hit in hits])) == {f"d{i}" for i in range(0, 30, 3)}


def _matching(index: VectorIndex, flt: DocumentFilter) -> set[str]:
    return set(ids_of(index, index.keys_matching(flt)))


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (DocumentFilter(tenant_id="t2"), {f"x{i}" for i in range(5)}),
        (DocumentFilter(tenant_id="t1", agent_ids=("a1", "a2")), {f"d{i}" for i in range(30) if i % 3}),
        (DocumentFilter(tenant_id="t1", archive_ids=("arc",)), {f"d{i}" for i in range(10)}),
        (DocumentFilter(tenant_id="t1", conversation_ids=("c1",)), {f"d{i}" for i in range(1, 30, 2)}),
        (DocumentFilter(tenant_id="t1", kinds=(DocumentKind.PASSAGE,)), {f"d{i}" for i in range(0, 30, 2)}),
        (DocumentFilter(tenant_id="t1", roles=("user",)), {f"d{i}" for i in range(1, 30, 2)}),
        (
            DocumentFilter(tenant_id="t1", tags=("red", "blue")),
            {f"d{i}" for i in range(30) if i % 2 == 0 or i % 3 == 0},
        ),
        (
            DocumentFilter(tenant_id="t1", tags=("red", "blue"), tag_match=TagMatch.ALL),
            {f"d{i}" for i in range(0, 30, 6)},
        ),
        (
            DocumentFilter(
                tenant_id="t1", created_from=T0 + timedelta(minutes=5), created_to=T0 + timedelta(minutes=7)
            ),
            {"d5", "d6", "d7"},
        ),
        (DocumentFilter(tenant_id="t1", created_from=T0 + timedelta(minutes=28)), {"d28", "d29"}),
        (DocumentFilter(tenant_id="nobody"), set()),
    ],
)
def test_each_filter_field(index: VectorIndex, flt: DocumentFilter, expected: set[str]) -> None:
    assert _matching(index, flt) == expected
    assert index.count(flt) == len(expected)
    assert set(ids_of(index, [hit.key for hit in index.search(unit(0), flt, 50)])) == expected


def test_fetch_round_trips_the_document(index: VectorIndex) -> None:
    original = corpus()[4]
    assert index.fetch([original.key, "00000000-0000-0000-0000-000000000000"]) == {original.key: original}


def test_newest_first(index: VectorIndex) -> None:
    assert [d.id for d in index.newest(T1, 3)] == ["d29", "d28", "d27"]
    assert [d.id for d in index.newest(DocumentFilter(tenant_id="t1", tags=("blue",)), 2)] == ["d27", "d24"]


def test_distinct_tags_sorted(index: VectorIndex) -> None:
    assert index.tags(T1, 100) == ["blue", "red"]
    assert index.tags(DocumentFilter(tenant_id="t1", agent_ids=("a1",)), 100) == ["red"]
    assert index.tags(DocumentFilter(tenant_id="t1", agent_ids=("a0",), tags=("red",)), 100) == [
        "blue",
        "red",
    ]
    assert index.tags(DocumentFilter(tenant_id="t2"), 100) == []


def test_upsert_by_the_same_key_replaces(index: VectorIndex) -> None:
    changed = Document(
        id="d3", text="changed", kind=DocumentKind.PASSAGE, scope=Scope(tenant_id="t1"), created_at=T0
    )
    index.upsert([changed], np.stack([unit(999)]))
    assert index.count(T1) == 30
    assert index.fetch([changed.key])[changed.key].text == "changed"
    assert ids_of(index, [index.search(unit(999), T1, 1)[0].key]) == ["d3"]


def test_delete_removes_only_those_keys(index: VectorIndex) -> None:
    documents = corpus()
    index.delete([documents[0].key, documents[1].key, "00000000-0000-0000-0000-000000000000"])
    assert index.count(T1) == 28
    assert index.fetch([documents[0].key]) == {}
    assert index.count(DocumentFilter(tenant_id="t2")) == 5


def test_maintenance_hooks_are_safe_on_small_indexes(index: VectorIndex) -> None:
    assert index.unindexed_count() >= 0
    index.optimize()
    assert index.count(T1) == 30
    assert ids_of(index, [index.search(unit(7), T1, 1)[0].key]) == ["d7"]


def test_edge_shard_persists_across_reopen(tmp_path: Path) -> None:
    first = EdgeShardIndex(tmp_path / "shard", DIM)
    documents = corpus()[:3]
    first.upsert(documents, np.stack([unit(i) for i in range(3)]))
    first.close()
    reopened = EdgeShardIndex(tmp_path / "shard", DIM)
    assert reopened.count(T1) == 3
    assert reopened.fetch([documents[2].key]) == {documents[2].key: documents[2]}
    reopened.close()


@pytest.mark.slow
def test_edge_shard_walks_int8_copies_and_scores_with_the_float_vectors(tmp_path: Path) -> None:
    count, dimension = 8000, 384  # enough float bytes for optimize() to build HNSW and int8 copies
    vectors = np.random.default_rng(3).normal(size=(count, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    documents = [
        Document(id=f"v{i}", text="", kind=DocumentKind.PASSAGE, scope=Scope(tenant_id="t1"), created_at=T0)
        for i in range(count)
    ]
    index = EdgeShardIndex(tmp_path / "shard", dimension)
    index.upsert(documents, vectors)
    assert index.optimize()
    query = vectors[5]
    # the int8 copies exist: scored on them alone, a hit's score is off its exact cosine
    unrescored = qe.SearchParams(hnsw_ef=128, quantization=qe.QuantizationSearchParams(rescore=False))
    request = qe.QueryRequest(
        limit=10, query=qe.Query.Nearest(query.tolist(), using=VECTOR_NAME), params=unrescored
    )
    by_key = {document.key: i for i, document in enumerate(documents)}
    approximate = index._shard.query(request)
    assert max(abs(p.score - float(vectors[by_key[str(p.id)]] @ query)) for p in approximate) > 1e-4
    # the index's search rescores with the float vectors: every score is the exact cosine, in order
    # (which ten come back is HNSW's recall, measured by the benchmark, not asserted here)
    hits = index.search(query, T1, 10)
    exact = [float(vectors[by_key[hit.key]] @ query) for hit in hits]
    assert len(hits) == 10
    assert [hit.score for hit in hits] == pytest.approx(exact, abs=1e-5)
    assert exact == sorted(exact, reverse=True)
    index.close()
