"""An upsert writes the text index while its batch is embedded (the text index needs no vectors), and
still leaves both indexes with the same documents, in the same order of writes, or says it did not."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope, SearchMode, SearchQuery
from strata_retrieval.text_tenants import TenantTextIndexes
from strata_retrieval.vectors.edge_shard import EdgeShardIndex

DIMENSION = 8
DEADLINE_SECONDS = 30.0
T0 = datetime(2026, 7, 1, tzinfo=UTC)
SCOPE = DocumentFilter(tenant_id="t")


def document(i: int, text: str) -> Document:
    return Document(
        id=f"d{i}",
        text=text,
        kind=DocumentKind.PASSAGE,
        scope=Scope(tenant_id="t"),
        created_at=T0 + timedelta(i),
    )


class WatchingEmbedder:
    """A deterministic embedder that, while it embeds a batch, waits (up to a deadline) for the text
    index to hold ``expected`` documents, and records whether it saw them; ``fail`` makes it raise."""

    name = "watching"
    dimension = DIMENSION

    def __init__(self) -> None:
        self.text: TenantTextIndexes | None = None
        self.expected = 0
        self.saw_text_committed: list[bool] = []
        self.fail = False
        self.started = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        assert self.text is not None
        self.started.set()
        deadline = time.monotonic() + DEADLINE_SECONDS
        while self.text.document_count() < self.expected and time.monotonic() < deadline:
            time.sleep(0.01)
        self.saw_text_committed.append(self.text.document_count() >= self.expected)
        if self.fail:
            raise RuntimeError("the embedder failed")
        return np.stack([self.embed_query(text) for text in texts])

    def embed_query(self, text: str) -> Vectors:
        vector = np.random.default_rng(abs(hash(text)) % 2**32).normal(size=DIMENSION).astype(np.float32)
        result: Vectors = vector / np.linalg.norm(vector)
        return result


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[RetrievalEngine, WatchingEmbedder]]:
    embedder = WatchingEmbedder()
    text = TenantTextIndexes(tmp_path / "text")
    embedder.text = text
    engine = RetrievalEngine(embedder, EdgeShardIndex(tmp_path / "vectors", DIMENSION), text, EngineConfig())
    yield engine, embedder
    engine.close()


def ids(engine: RetrievalEngine, text: str, mode: SearchMode) -> list[str]:
    query = SearchQuery(text=text, mode=mode, filter=SCOPE, top_k=10)
    return sorted(hit.document.id for hit in engine.search(query).hits)


def test_the_text_index_commits_the_batch_while_it_is_embedded(
    watched: tuple[RetrievalEngine, WatchingEmbedder],
) -> None:
    engine, embedder = watched
    embedder.expected = 3
    engine.upsert([document(i, f"apple number {i}") for i in range(3)])
    assert embedder.saw_text_committed == [True]
    assert ids(engine, "apple", SearchMode.FTS) == ["d0", "d1", "d2"]
    assert ids(engine, "apple", SearchMode.VECTOR) == ["d0", "d1", "d2"]


def test_a_failed_embedding_raises_after_the_text_write_finished_and_writes_no_vectors(
    watched: tuple[RetrievalEngine, WatchingEmbedder],
) -> None:
    engine, embedder = watched
    embedder.expected, embedder.fail = 2, True
    with pytest.raises(RuntimeError, match="the embedder failed"):
        engine.upsert([document(i, f"pear number {i}") for i in range(2)])
    assert engine.stats(SCOPE).document_count == 0  # no vectors: the documents are not found
    embedder.fail = False
    engine.upsert([document(i, f"pear number {i}") for i in range(2)])  # the retry completes it
    assert ids(engine, "pear", SearchMode.HYBRID) == ["d0", "d1"]


def test_concurrent_replacements_and_deletes_leave_both_indexes_alike(
    watched: tuple[RetrievalEngine, WatchingEmbedder],
) -> None:
    engine, _ = watched
    words = ["plum", "fig", "kiwi", "lime"]

    def write(round_number: int) -> None:
        engine.upsert(
            [document(i, f"{words[(round_number + i) % len(words)]} {round_number}") for i in range(4)]
        )
        if round_number % 3 == 0:
            engine.delete_ids("t", ["d1"])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(24)))
    newest = engine.search(SearchQuery(text="", mode=SearchMode.HYBRID, filter=SCOPE, top_k=10)).hits
    stored = {hit.document.id: hit.document.text for hit in newest}  # what the vector index holds
    for word in words:
        assert ids(engine, word, SearchMode.FTS) == sorted(
            i for i, text in stored.items() if text.startswith(word)
        )


def test_metrics_read_the_tenants_while_an_upsert_embeds(
    watched: tuple[RetrievalEngine, WatchingEmbedder],
) -> None:
    engine, embedder = watched
    engine.upsert([document(0, "cherry")])
    embedder.started.clear()
    embedder.expected = 10**6  # the next embedding waits (up to its deadline) until released below
    writer = threading.Thread(target=engine.upsert, args=([document(1, "grape")],))
    writer.start()
    try:
        assert embedder.started.wait(DEADLINE_SECONDS)
        assert engine.documents_per_tenant() == {"t": 1}
    finally:
        embedder.expected = 0
        writer.join()
    assert engine.documents_per_tenant() == {"t": 2}
