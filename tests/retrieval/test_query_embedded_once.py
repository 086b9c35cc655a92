"""A search embeds its query once, however many times a leg is read again (issue 31 item 2).

A leg is read one past its depth, and deeper while a run of equal scores crosses the cut; the
documents here all share the query's word and have the same length, so the text leg's BM25 scores
tie past any depth while the vector leg's do not. Only the text leg may be read again, and the
query is embedded once per call, on every engine (edge, Qdrant dense, Qdrant joint)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.legs import TextIndex
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope, SearchMode, SearchQuery
from strata_retrieval.text_tenants import TenantTextIndexes
from strata_retrieval.vectors.edge_shard import EdgeShardIndex
from strata_retrieval.vectors.protocol import VectorIndex
from strata_retrieval.vectors.qdrant_dense import QdrantDenseIndex
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex, SparseTextLeg
from tests.system.test_tracing import spans

__all__ = ["spans"]

T0 = datetime(2026, 7, 1, tzinfo=UTC)
SCOPE = DocumentFilter(tenant_id="t")
WORDS = ["apple", "river", "violin", "candle", "meadow", "bishop", "cotton", "falcon", "harbor", "lantern"]
TIED = [f"milk {a}{b}" for a in WORDS for b in WORDS][:80]  # 80 two-word texts: "milk" scores alike


class CountingEmbedder:
    """The real embedder, counting the queries it embeds (the engine's only use of it we measure)."""

    def __init__(self, real: OnnxSentenceEmbedder) -> None:
        self.real = real
        self.queries = 0

    @property
    def name(self) -> str:
        return self.real.name

    @property
    def dimension(self) -> int:
        return self.real.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.real.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        self.queries += 1
        return self.real.embed_query(text)


@pytest.fixture(params=["edge", "qdrant_local", "server_local"])
def engine(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> Iterator[tuple[RetrievalEngine, CountingEmbedder]]:
    counting = CountingEmbedder(embedder)
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
    retrieval = RetrievalEngine(counting, vectors, text, EngineConfig())
    retrieval.upsert(
        [
            Document(
                id=f"d{i:03d}",
                text=text_,
                kind=DocumentKind.PASSAGE,
                scope=Scope(tenant_id="t"),
                created_at=T0 + timedelta(minutes=i),
            )
            for i, text_ in enumerate(TIED)
        ]
    )
    yield retrieval, counting
    retrieval.close()


def _leg_reads(exporter: InMemorySpanExporter) -> list[tuple[str, int]]:
    reads = []
    for span in exporter.get_finished_spans():
        depth = dict(span.attributes or {}).get("depth")
        if span.name in {"search.vector_leg", "search.fts_leg", "search.joint_legs"}:
            assert isinstance(depth, int)
            reads.append((span.name, depth))
    return reads


@pytest.mark.parametrize("mode", [SearchMode.HYBRID, SearchMode.VECTOR])
def test_a_search_embeds_its_query_once_when_a_tie_runs_past_the_depth(
    engine: tuple[RetrievalEngine, CountingEmbedder], mode: SearchMode
) -> None:
    retrieval, counting = engine
    query = SearchQuery(text="milk", mode=mode, filter=SCOPE, top_k=5, vector_depth=10, fts_depth=10)
    for _ in range(3):
        before = counting.queries
        assert len(retrieval.search(query).hits) == 5
        assert counting.queries - before == 1


def test_only_the_leg_cut_short_is_read_again(
    engine: tuple[RetrievalEngine, CountingEmbedder], spans: InMemorySpanExporter
) -> None:
    retrieval, _ = engine
    query = SearchQuery(
        text="milk", mode=SearchMode.HYBRID, filter=SCOPE, top_k=5, vector_depth=10, fts_depth=10
    )
    candidates = retrieval.candidates(query)
    assert {leg: len(found) for leg, found in candidates.items()} == {"vector": 10, "fts": 10}
    reads = _leg_reads(spans)
    vector_reads = [name for name, _ in reads if name in {"search.vector_leg", "search.joint_legs"}]
    assert len(vector_reads) == 1  # the vector leg's scores do not tie: read once (with the text leg)
    text_rereads = sorted(depth for name, depth in reads if name == "search.fts_leg" and depth != 11)
    assert text_rereads == [22, 44, 88]  # read one past the depth, then doubled until the run ends
