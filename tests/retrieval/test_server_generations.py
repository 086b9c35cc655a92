"""The server engine's whole-index rebuild: a new generation built behind the collection alias.

Searches answer from the serving generation while the next one is built, writes made meanwhile reach
both, the alias moves in one request, the old generation is dropped, and a failed build leaves the
alias where it was. qdrant-client's local mode stands in for the server (its aliases apply a list of
operations all or nothing, as the server does); it cannot show two processes sharing the collection.
The copy is paused by holding the rebuild's own scroll over the alias (``QdrantClient.scroll``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient, models

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval import rebuild
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.manifest import IndexManifest
from strata_retrieval.model import Document, DocumentFilter, DocumentKind, Scope, document_key
from strata_retrieval.vectors import generations
from strata_retrieval.vectors.bm25 import DEFAULT_AVG_LEN, Bm25Params
from strata_retrieval.vectors.qdrant_joint import QdrantJointIndex
from tests.retrieval.service_fixtures import MEMORIES, T0, TENANT, ids, passage, running_service, search

SERVER: dict[str, Any] = {"vector_backend": "server", "qdrant_url": ":memory:"}
ALIAS = "strata_documents"
DEADLINE = 60.0


@dataclass
class PausedScroll:
    """Holds the rebuild's ``page``-th scroll over the collection's keys (no payload, no filter)
    until released; every other scroll runs as usual."""

    page: int
    reached: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    seen: int = 0

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        original = QdrantClient.scroll

        def scroll(client: QdrantClient, *args: Any, **kwargs: Any) -> Any:
            if kwargs.get("with_payload") is False and kwargs.get("scroll_filter") is None:
                self.seen += 1
                if self.seen == self.page:
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


TEXTS = {
    "tea": "The user loves green tea and drinks it every morning",
    "cat": "The user's cat is called Miso and sleeps on the keyboard",
    "alps": "Planning a hiking trip to the Alps in September",
    "nurse": "The user works as a nurse on night shifts at the city hospital",
    "piano": "Piano lessons on Tuesday evenings with a patient teacher",
    "garden": "Tomatoes and basil grow in the small garden behind the house",
}


@pytest.fixture
def index(embedder: OnnxSentenceEmbedder) -> Iterator[QdrantJointIndex]:
    served = QdrantJointIndex(":memory:", IndexManifest(embedder.name, embedder.dimension))
    documents = [doc(doc_id, text) for doc_id, text in TEXTS.items()]
    served.upsert(documents, embedder.embed_documents([d.text for d in documents]))
    yield served
    served.close()


def text_ids(index: QdrantJointIndex, text: str) -> list[str]:
    found = index.fetch([hit.key for hit in index.search_text(text, DocumentFilter(tenant_id=TENANT), 10)])
    return [document.id for document in found.values()]


def collections(index: QdrantJointIndex) -> set[str]:
    return set(generations.generations(index._client, ALIAS).values())


def test_a_new_collection_is_generation_one_behind_the_alias(index: QdrantJointIndex) -> None:
    assert index.generation == f"{ALIAS}__g1"
    assert collections(index) == {f"{ALIAS}__g1"}
    assert index.bm25_params.avg_len == DEFAULT_AVG_LEN  # nothing to measure when it was made


def test_writes_during_a_rebuild_reach_the_new_generation_and_searches_the_old_one(
    index: QdrantJointIndex, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = PausedScroll(page=2)  # the first page of two keys is copied; the rest is not yet
    paused.install(monkeypatch)
    keys = sorted(document_key(TENANT, doc_id) for doc_id in TEXTS)
    by_key = {document_key(TENANT, doc_id): doc_id for doc_id in TEXTS}
    copied, later = by_key[keys[0]], by_key[keys[-1]]
    outcome: list[str] = []
    builder = threading.Thread(
        target=lambda: outcome.append(index.rebuild(embedder.embed_documents, page_size=2))
    )
    builder.start()
    try:
        assert paused.reached.wait(DEADLINE)
        assert index.generation == f"{ALIAS}__g1"
        assert collections(index) == {f"{ALIAS}__g1", f"{ALIAS}__g2"}
        assert text_ids(index, TEXTS[later])[:1] == [later]  # not copied yet: served by generation 1
        rewritten = doc(copied, "Violin practice replaced everything else")
        index.upsert([rewritten], embedder.embed_documents([rewritten.text]))  # copied already
        index.delete([keys[1]])  # copied already too
    finally:
        paused.release.set()
        builder.join(DEADLINE)
    assert outcome == [f"{ALIAS}__g2"]
    assert index.generation == f"{ALIAS}__g2"
    assert collections(index) == {f"{ALIAS}__g2"}  # generation 1 dropped
    assert text_ids(index, "violin")[:1] == [copied]
    assert index.count(DocumentFilter(tenant_id=TENANT)) == len(TEXTS) - 1
    assert by_key[keys[1]] not in text_ids(index, TEXTS[by_key[keys[1]]])
    vector = embedder.embed_query("hiking in the mountains")
    assert index.fetch([index.search(vector, DocumentFilter(tenant_id=TENANT), 1)[0].key])


def test_a_rebuild_pins_the_measured_mean_document_length(
    index: QdrantJointIndex, embedder: OnnxSentenceEmbedder
) -> None:
    assert generations.document_length("The cats are running quickly to the house") == 4
    index.rebuild(embedder.embed_documents)
    measured = fmean(generations.document_length(text) for text in TEXTS.values())
    assert index.bm25_params == Bm25Params(avg_len=measured)
    metadata = index._client.get_collection(index.generation).config.metadata
    assert metadata is not None
    assert metadata["bm25"]["avg_len"] == pytest.approx(measured)


def test_a_failed_build_leaves_the_alias_on_the_old_generation(
    index: QdrantJointIndex, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = QdrantClient.upsert

    def upsert(client: QdrantClient, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        if collection_name.endswith("__g2"):
            raise ConnectionError("the Qdrant server went away")
        return original(client, collection_name, *args, **kwargs)

    monkeypatch.setattr(QdrantClient, "upsert", upsert)
    with pytest.raises(ConnectionError):
        index.rebuild(embedder.embed_documents)
    assert index.generation == f"{ALIAS}__g1"
    assert collections(index) == {f"{ALIAS}__g1"}  # the half-built generation is dropped
    assert text_ids(index, "Miso")[:1] == ["cat"]
    monkeypatch.setattr(QdrantClient, "upsert", original)
    index.upsert([doc("new", "A new passage about kayaks")], embedder.embed_documents(["kayaks"]))
    assert text_ids(index, "kayaks") == ["new"]  # writes no longer mirrored into a dropped collection
    assert index.rebuild(embedder.embed_documents) == f"{ALIAS}__g2"


def test_a_collection_made_before_generations_becomes_an_alias_on_its_first_rebuild(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    url = str(tmp_path / "qdrant")
    client = QdrantClient(path=url)
    client.create_collection(
        ALIAS,
        vectors_config={
            "dense": models.VectorParams(size=embedder.dimension, distance=models.Distance.COSINE)
        },
        sparse_vectors_config={"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)},
        metadata={
            "embedding_model": embedder.name,
            "embedding_dimension": embedder.dimension,
            "bm25": {"k": 1.2, "b": 0.75, "avg_len": 256.0},
        },
    )
    client.close()
    legacy = QdrantJointIndex(url, IndexManifest(embedder.name, embedder.dimension))
    try:
        assert legacy.generation == ALIAS  # served as it is
        legacy.upsert([doc("tea", TEXTS["tea"])], embedder.embed_documents([TEXTS["tea"]]))
        assert legacy.rebuild(embedder.embed_documents) == f"{ALIAS}__g1"
        assert legacy.generation == f"{ALIAS}__g1"
        assert collections(legacy) == {f"{ALIAS}__g1"}
        assert ALIAS not in {c.name for c in legacy._client.get_collections().collections}
        assert text_ids(legacy, "green tea") == ["tea"]
    finally:
        legacy.close()


async def test_the_service_answers_searches_from_the_old_generation_during_a_rebuild(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    paused = PausedScroll(page=1)
    paused.install(monkeypatch)
    async with running_service(tmp_path / "data", embedder, **SERVER) as service:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=MEMORIES))
        engine = service.app.engine
        assert engine is not None
        rebuild = asyncio.ensure_future(asyncio.to_thread(engine.rebuild))
        try:
            assert await asyncio.to_thread(paused.reached.wait, DEADLINE)
            assert (
                await ids(
                    service, search("what is the name of my cat", top_k=1, kinds=[pb.DOCUMENT_KIND_PASSAGE])
                )
            ) == ["p-cat"]
            assert (await ids(service, search("Miso", pb.SEARCH_MODE_FTS, top_k=1))) == ["p-cat"]
            await service.stub.UpsertDocuments(
                pb.UpsertDocumentsRequest(documents=[passage("p-kayak", "Kayaking on the lake at dawn")])
            )
        finally:
            paused.release.set()
        assert await asyncio.wait_for(rebuild, DEADLINE) == f"{ALIAS}__g2"
        assert (await ids(service, search("kayak lake", pb.SEARCH_MODE_FTS, top_k=1))) == ["p-kayak"]
        assert (
            await ids(
                service, search("what is the name of my cat", top_k=1, kinds=[pb.DOCUMENT_KIND_PASSAGE])
            )
        ) == ["p-cat"]
        stats = await service.stub.Stats(pb.StatsRequest(filter=pb.DocumentFilter(tenant_id=TENANT)))
        assert stats.document_count == len(MEMORIES) + 1


async def test_a_new_model_rebuilds_the_documents_behind_the_alias_at_start(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    url = str(tmp_path / "qdrant")  # local mode on disk stands in for the shared server
    old = QdrantJointIndex(url, IndexManifest("bge-small-en", embedder.dimension))
    documents = [doc(doc_id, text) for doc_id, text in TEXTS.items()]
    noise = np.random.default_rng(7).normal(size=(len(documents), embedder.dimension)).astype(np.float32)
    old.upsert(documents, noise)  # another model's vectors: useless to this one
    old.close()
    settings = {**SERVER, "qdrant_url": url, "rebuild_on_model_change": True}
    async with running_service(tmp_path / "data", embedder, **settings) as rebuilt:
        assert await ids(
            rebuilt, search("who looks after patients at night", pb.SEARCH_MODE_VECTOR, top_k=1)
        ) == ["nurse"]
        assert await ids(rebuilt, search("Miso", pb.SEARCH_MODE_FTS, top_k=1)) == ["cat"]
    client = QdrantClient(path=url)
    try:
        assert {c.name for c in client.get_collections().collections} == {f"{ALIAS}__g2"}
        metadata = client.get_collection(f"{ALIAS}__g2").config.metadata or {}
        assert metadata["embedding_model"] == embedder.name
    finally:
        client.close()


def test_the_rebuild_command_moves_the_alias_to_a_new_generation(
    tmp_path: Path,
    embedder: OnnxSentenceEmbedder,
    model_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = str(tmp_path / "qdrant")
    index = QdrantJointIndex(url, IndexManifest(embedder.name, embedder.dimension))
    documents = [doc(doc_id, text) for doc_id, text in TEXTS.items()]
    index.upsert(documents, embedder.embed_documents([d.text for d in documents]))
    index.close()
    for name, value in {
        "VECTOR_BACKEND": "server",
        "QDRANT_URL": url,
        "MODEL_CACHE_DIR": str(model_cache),
        "DATA_DIR": str(tmp_path / "data"),
    }.items():
        monkeypatch.setenv(f"STRATA_RETRIEVAL_{name}", value)
    rebuild.main()
    assert capsys.readouterr().out == f"{ALIAS} now served by {ALIAS}__g2\n"
    reopened = QdrantJointIndex(url, IndexManifest(embedder.name, embedder.dimension))
    try:
        assert collections(reopened) == {f"{ALIAS}__g2"}
        assert reopened.bm25_params.avg_len == pytest.approx(
            fmean(generations.document_length(text) for text in TEXTS.values())
        )
        assert text_ids(reopened, "Miso")[:1] == ["cat"]
    finally:
        reopened.close()


def test_the_rebuild_command_refuses_the_embedded_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STRATA_RETRIEVAL_VECTOR_BACKEND", "edge")
    with pytest.raises(SystemExit, match="must be 'server'"):
        rebuild.main()
