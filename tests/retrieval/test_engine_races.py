"""RetrievalEngine under concurrent calls, over the real embedder with the embedded engine (Edge +
Tantivy): a delete racing another, the bound on hybrid text legs running at once, and close while a
search's text leg still runs. Each race is staged with events (a leg or a listing held until the
other side has had its chance); the order of events is asserted, never a duration."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.engine import EngineConfig, RetrievalEngine
from strata_retrieval.model import DocumentFilter, ScoredKey, SearchMode, SearchQuery
from strata_retrieval.text_tenants import TenantTextIndexes
from strata_retrieval.vectors.edge_shard import EdgeShardIndex
from tests.retrieval.test_engine import FACTS, SCOPE, documents, search


def test_a_delete_landing_between_listing_and_removal_is_counted_once(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DeleteDocuments reports "how many documents existed and were removed": when another call's
    delete lands wherever the engine lets a concurrent writer in (here: whenever its write lock is
    free after the filter was listed), each document is counted by the one call that removed it."""
    vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    text = TenantTextIndexes(tmp_path / "text")
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


def test_search_threads_bounds_the_text_legs_running_at_once(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``search_threads=1`` a second hybrid search's text leg starts only once the first's has
    finished. The first is held until the second starts or a second has passed (the pool must not let
    it start); the order is asserted, never a duration."""
    text = TenantTextIndexes(tmp_path / "text")
    vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    engine = RetrievalEngine(embedder, vectors, text, EngineConfig(search_threads=1))
    search_text, release, started = text.search, threading.Event(), [threading.Event(), threading.Event()]
    released_at_start: list[bool] = []

    def held(*args: Any) -> list[ScoredKey]:
        released_at_start.append(release.is_set())
        started[len(released_at_start) - 1].set()
        assert release.wait(60)
        return search_text(*args)

    try:
        engine.upsert(documents())
        monkeypatch.setattr(text, "search", held)
        query = SearchQuery(text="glucose", mode=SearchMode.HYBRID, filter=SCOPE, top_k=2)
        with ThreadPoolExecutor(2) as callers:
            first = callers.submit(engine.search, query)
            assert started[0].wait(60)
            second = callers.submit(engine.search, query)
            started[1].wait(1.0)  # returns at once if the pool let the second leg start
            release.set()
            assert {hit.document.id for hit in first.result(60).hits} == {
                "f0",
                "f2",
            }  # the two saying "glucose"
            assert {hit.document.id for hit in second.result(60).hits} == {"f0", "f2"}
        assert released_at_start == [False, True]
    finally:
        engine.close()


def test_close_waits_for_a_running_text_leg_before_closing_the_indexes(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search still running when the service closes the engine (past the stop's grace) finishes
    on open indexes. Its text leg is held until the indexes start closing or a second passes."""
    text = TenantTextIndexes(tmp_path / "text")
    vectors = EdgeShardIndex(tmp_path / "vectors", embedder.dimension)
    engine = RetrievalEngine(embedder, vectors, text, EngineConfig())
    engine.upsert(documents())
    search_text, close_vectors = text.search, vectors.close
    started, release, leg_done, search_done = (threading.Event() for _ in range(4))
    leg_done_at_close: list[bool] = []

    def held(*args: Any) -> list[ScoredKey]:
        started.set()
        assert release.wait(60)
        try:
            return search_text(*args)
        finally:
            leg_done.set()

    def closing() -> None:
        leg_done_at_close.append(leg_done.is_set())
        release.set()  # if close did not wait, the leg can go on now
        assert search_done.wait(60)  # the search reads documents: close them after it
        close_vectors()

    monkeypatch.setattr(text, "search", held)
    monkeypatch.setattr(vectors, "close", closing)
    query = SearchQuery(text="glucose", mode=SearchMode.HYBRID, filter=SCOPE, top_k=2)
    with ThreadPoolExecutor(2) as callers:
        searching = callers.submit(engine.search, query)
        assert started.wait(60)
        closed = callers.submit(engine.close)
        release.wait(1.0)  # set at once by the indexes' close if close did not wait for the leg
        release.set()
        assert {hit.document.id for hit in searching.result(60).hits} == {"f0", "f2"}
        search_done.set()
        closed.result(60)
    assert leg_done_at_close == [True]
