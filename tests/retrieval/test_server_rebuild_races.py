"""Two whole-index rebuilds of one collection at once (the rebuild command beside a replica that
rebuilds at start, or two of either): one rebuild at a time per collection, and neither may destroy
the generation the alias serves.

Two processes share the collection through the Qdrant server. qdrant-client's local mode cannot be
opened by two clients, so the second "process" here is a second :class:`QdrantJointIndex` over the
first one's client (the shared server). Each rebuild runs on a thread of its own name, and one is
held at a chosen point by holding its scroll (``QdrantClient.scroll``) until released.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from qdrant_client import QdrantClient

from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.errors import RebuildInProgress
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope
from strata_retrieval.vectors import generations, qdrant_dense, qdrant_joint
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex
from tests.retrieval.service_fixtures import T0, TENANT

ALIAS = "strata_documents"
DEADLINE = 60.0
TEXTS = {
    "tea": "The user loves green tea and drinks it every morning",
    "cat": "The user's cat is called Miso and sleeps on the keyboard",
    "alps": "Planning a hiking trip to the Alps in September",
    "nurse": "The user works as a nurse on night shifts at the city hospital",
    "piano": "Piano lessons on Tuesday evenings with a patient teacher",
    "garden": "Tomatoes and basil grow in the small garden behind the house",
}


@dataclass
class HeldScroll:
    """Holds the first scroll that thread ``thread`` makes with ``with_payload`` of the given kind
    (False: the copy's pages of keys; a list: the mean-length measure) until released."""

    thread: str
    payload_kind: type
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = QdrantClient.scroll

        def scroll(client: QdrantClient, *args: Any, **kwargs: Any) -> Any:
            mine = threading.current_thread().name == self.thread
            if mine and type(kwargs.get("with_payload")) is self.payload_kind and not self.reached.is_set():
                self.reached.set()
                assert self.release.wait(DEADLINE)
            return original(client, *args, **kwargs)

        monkeypatch.setattr(QdrantClient, "scroll", scroll)


def doc(doc_id: str, text: str) -> Document:
    return Document(
        id=doc_id,
        text=text,
        kind=DocumentKind.PASSAGE,
        scope=Scope(tenant_id=TENANT, archive_id="a"),
        created_at=T0,
    )


@pytest.fixture
def first(embedder: OnnxSentenceEmbedder) -> Iterator[QdrantJointIndex]:
    served = QdrantJointIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
    documents = [doc(doc_id, text) for doc_id, text in TEXTS.items()]
    served.upsert(documents, embedder.embed_documents([d.text for d in documents]))
    yield served
    served.close()


@pytest.fixture
def second(
    first: QdrantJointIndex, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> QdrantJointIndex:
    """Another process's index over the same collection (closed with ``first``: one client)."""
    with monkeypatch.context() as patch:
        patch.setattr(qdrant_dense, "_client", lambda url, api_key: first._client)
        return QdrantJointIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))


def in_thread(name: str, run: Any) -> tuple[threading.Thread, list[object]]:
    """Start ``run`` on a thread called ``name``; the list receives its result or its exception."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(run())
        except Exception as failure:  # noqa: BLE001  # the outcome the test asserts on
            outcome.append(failure)

    thread = threading.Thread(target=target, name=name)
    thread.start()
    return thread, outcome


def everything_served(index: QdrantJointIndex) -> None:
    """Every document is still in the serving generation, found by both legs."""
    assert generations.current(index._client, ALIAS) in generations.generations(index._client, ALIAS).values()
    assert index.count(DocumentFilter(tenant_id=TENANT)) == len(TEXTS)
    found = index.fetch([hit.key for hit in index.search_text("Miso", DocumentFilter(tenant_id=TENANT), 3)])
    assert [document.id for document in found.values()][:1] == ["cat"]


def test_a_second_rebuild_is_refused_while_the_first_builds(
    first: QdrantJointIndex,
    second: QdrantJointIndex,
    embedder: OnnxSentenceEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = HeldScroll("first", bool)  # the first build made its generation and holds its copy
    held.install(monkeypatch)
    thread, outcome = in_thread("first", lambda: first.rebuild(embedder.embed_documents, page_size=2))
    try:
        assert held.reached.wait(DEADLINE)
        with pytest.raises(RebuildInProgress, match=f"{ALIAS}__g2"):
            second.rebuild(embedder.embed_documents)
    finally:
        held.release.set()
        thread.join(DEADLINE)
    assert outcome == [f"{ALIAS}__g2"]  # the first build was left alone and finished
    assert set(generations.generations(first._client, ALIAS).values()) == {f"{ALIAS}__g2"}
    everything_served(first)


def test_a_rebuild_that_started_before_another_swapped_never_drops_the_serving_generation(
    first: QdrantJointIndex,
    second: QdrantJointIndex,
    embedder: OnnxSentenceEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    held = HeldScroll("second", list)  # the second read the serving generation, then measures lengths
    held.install(monkeypatch)
    thread, outcome = in_thread("second", lambda: second.rebuild(embedder.embed_documents))
    try:
        assert held.reached.wait(DEADLINE)
        assert first.rebuild(embedder.embed_documents) == f"{ALIAS}__g2"  # swaps, drops generation 1
    finally:
        held.release.set()
        thread.join(DEADLINE)
    assert len(outcome) == 1
    if isinstance(outcome[0], Exception):  # refused: it was built from a generation no longer served
        assert isinstance(outcome[0], RebuildInProgress)
    everything_served(first)
    assert len(generations.generations(first._client, ALIAS)) == 1


def test_a_build_that_stopped_making_progress_is_dropped_by_the_next_rebuild(
    first: QdrantJointIndex, embedder: OnnxSentenceEmbedder
) -> None:
    dead = f"{ALIAS}__g2"
    first._create_generation(dead, first.bm25_params)
    long_ago = time.time() - generations.BUILD_STALE_SECONDS - 1
    first._client.update_collection(dead, metadata={generations.BUILDING: {"heartbeat": long_ago}})
    assert first.rebuild(embedder.embed_documents) == f"{ALIAS}__g3"
    assert set(generations.generations(first._client, ALIAS).values()) == {f"{ALIAS}__g3"}
    everything_served(first)


def test_a_replica_starting_while_another_rebuilds_for_its_model_waits_and_serves_that_build(
    embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replicas started with a new model and REBUILD_ON_MODEL_CHANGE at once: one rebuilds, the others
    wait for it (not SERVING meanwhile) and then serve the generation it built, instead of refusing
    every call until restarted."""
    old = QdrantJointIndex(":memory:", IndexManifest("bge-small-en", embedder.dimension))
    documents = [doc(doc_id, text) for doc_id, text in TEXTS.items()]
    old.upsert(documents, embedder.embed_documents([d.text for d in documents]))
    monkeypatch.setattr(qdrant_dense, "_client", lambda url, api_key: old._client)
    monkeypatch.setattr(qdrant_joint, "REBUILD_WAIT_SECONDS", 0.05)
    held = HeldScroll("first", bool)
    held.install(monkeypatch)
    manifest = IndexManifest(embedder.name, embedder.dimension)

    def replica() -> QdrantJointIndex:
        return QdrantJointIndex(":memory:", manifest, rebuild_with=embedder.embed_documents)

    first, first_outcome = in_thread("first", replica)
    try:
        assert held.reached.wait(DEADLINE)  # the first replica builds generation 2
        second, second_outcome = in_thread("second", replica)
        second.join(0.5)
        assert second.is_alive()  # waiting for the build, not refusing
    finally:
        held.release.set()
        first.join(DEADLINE)
        second.join(DEADLINE)
    [built], [waited] = first_outcome, second_outcome
    assert isinstance(built, QdrantJointIndex), built
    assert isinstance(waited, QdrantJointIndex), waited
    assert built.generation == waited.generation == f"{ALIAS}__g2"
    assert set(generations.generations(old._client, ALIAS).values()) == {f"{ALIAS}__g2"}
    everything_served(waited)
    old.close()
