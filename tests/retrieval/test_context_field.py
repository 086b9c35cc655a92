"""A message's own words count more than its context's (the previous turn) in the full-text leg,
through a real RetrievalService on each engine (Tantivy's ``own_text`` field; the server engine's
second sparse vector, ``bm25_own``).

The defect it fixes: with the previous turn appended to a message's text and scored as one text, a
reply that has the question's words only through its context outranked the turn that says them
(issue 32 item 2; this file fails on 6c65d0c). With the message's own text in a second
field that adds a share of its score, the answering turn comes first and the reply is still found.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import tantivy
from qdrant_client import QdrantClient, models

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.text_tenants import LEGACY_TEXT_FOLDERS, TEXT_FOLDER, tenant_folder
from tests.retrieval.service_fixtures import ENGINES, TENANT, Service, at, running_service, search

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "When did Caroline go to the LGBTQ support group?"
TURNS = [  # (id, text): one conversation in order; each message's context is the turn before it
    ("t-0", "Melanie: Hey Caroline, good to see you! How have you been lately?"),
    ("t-evidence", "Caroline: I went to a LGBTQ support group yesterday and it was so powerful."),
    ("t-reply", "Melanie: Wow Caroline, that is amazing! What happened at the group?"),
    ("t-3", "Caroline: The transgender stories were so inspiring, I felt accepted."),
    ("t-4", "Melanie: I painted a lake sunrise last year with my kids, a special one."),
    ("t-5", "Caroline: I am thinking about a career in counseling and mental health."),
    ("t-6", "Melanie: Pottery class was fun, we made our own plates and bowls."),
    ("t-7", "Caroline: My friends gave me a necklace from my grandma in Sweden."),
]


def turn(index: int, legs: pb.ContextLegs.ValueType = pb.CONTEXT_LEGS_TEXT) -> pb.Document:
    doc_id, text = TURNS[index]
    return pb.Document(
        id=doc_id,
        text=text,
        context=TURNS[index - 1][1] if index else "",
        context_legs=legs,
        kind=pb.DOCUMENT_KIND_MESSAGE,
        scope=pb.Scope(tenant_id=TENANT, agent_id="agent-1", conversation_id="conv-1"),
        role="user",
        created_at=at(index),
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(ENGINES))
async def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> AsyncIterator[Service]:
    data_dir = tmp_path_factory.mktemp("context-field") / "data"
    async with running_service(data_dir, embedder, **ENGINES[request.param]) as running:
        documents = [turn(i) for i in range(len(TURNS))]
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=documents))
        yield running


async def _ids(service: Service, query: str, mode: pb.SearchMode.ValueType) -> list[str]:
    response = await service.stub.Search(search(query, mode, top_k=len(TURNS)))
    return [hit.document.id for hit in response.hits]


async def test_the_answering_turn_outranks_a_reply_that_has_its_words_only_as_context(
    service: Service,
) -> None:
    ranked = await _ids(service, "LGBTQ powerful", pb.SEARCH_MODE_FTS)
    assert ranked == ["t-evidence", "t-reply"]  # the reply still found, through its context, below


@pytest.mark.parametrize("engine", sorted(ENGINES))
async def test_a_heavier_own_text_weight_also_outranks_a_reply_that_repeats_question_words(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, engine: str
) -> None:
    """The reply here says two of the question's words itself and has all of them as context. At the
    served weight (0.1, chosen by leave-one-conversation-out on LoCoMo:
    bench/results/locomo_context_field.json) Tantivy still ranks it first; 0.3 (LoCoMo held-out
    any@10 0.803 against 0.815) puts the answering turn first on both engines."""
    async with running_service(
        tmp_path / "data", embedder, text_own_weight=0.3, **ENGINES[engine]
    ) as running:
        await running.stub.UpsertDocuments(
            pb.UpsertDocumentsRequest(documents=[turn(i) for i in range(len(TURNS))])
        )
        assert (await _ids(running, QUESTION, pb.SEARCH_MODE_FTS))[:2] == ["t-evidence", "t-reply"]


async def test_hybrid_puts_the_answering_turn_first(service: Service) -> None:
    assert (await _ids(service, QUESTION, pb.SEARCH_MODE_HYBRID))[0] == "t-evidence"


async def test_a_context_read_by_the_vector_leg_only_is_not_searched_as_text(service: Service) -> None:
    await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[turn(2, pb.CONTEXT_LEGS_VECTOR)]))
    try:
        assert await _ids(service, "LGBTQ powerful", pb.SEARCH_MODE_FTS) == ["t-evidence"]
    finally:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[turn(2)]))


def _old_layout_index(folder: Path) -> None:
    """A per-tenant index as versions before the own_text field built it: key, text, filters."""
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("key", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    builder.add_text_field("tenant_id", stored=False, tokenizer_name="raw")
    folder.mkdir(parents=True)
    writer = tantivy.Index(builder.build(), path=str(folder)).writer(15_000_000, 1)
    writer.add_document(tantivy.Document(key="stale", text="LGBTQ powerful", tenant_id=TENANT))
    writer.commit()
    writer.wait_merging_threads()


async def test_indexes_of_the_older_layout_are_rebuilt_from_the_vector_index(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    """Tantivy opens no index whose schema changed: a data folder holding ``text_by_tenant`` (no
    ``own_text`` field) gets its full-text indexes built anew from the vector index's documents
    at start, and the old folder removed."""
    data = tmp_path / "data"
    async with running_service(data, embedder) as running:
        await running.stub.UpsertDocuments(
            pb.UpsertDocumentsRequest(documents=[turn(i) for i in range(len(TURNS))])
        )
    shutil.rmtree(data / TEXT_FOLDER)
    old = data / LEGACY_TEXT_FOLDERS[-1]
    _old_layout_index(old / tenant_folder(TENANT))

    async with running_service(data, embedder) as running:
        assert not old.exists()
        assert await _ids(running, "LGBTQ powerful", pb.SEARCH_MODE_FTS) == ["t-evidence", "t-reply"]


async def test_a_server_generation_of_one_sparse_vector_serves_as_built_until_its_rebuild(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    """A collection built before the text alone had a sparse vector of its own (``bm25`` only, no
    ``sparse_vectors`` pinned) is served and written as it was built, and a rebuild gives the next
    generation both vectors."""
    url = str(tmp_path / "qdrant")
    client = QdrantClient(path=url)
    client.create_collection(
        "strata_documents",
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
    async with running_service(
        tmp_path / "data", embedder, vector_backend="server", qdrant_url=url
    ) as running:
        await running.stub.UpsertDocuments(
            pb.UpsertDocumentsRequest(documents=[turn(i) for i in range(len(TURNS))])
        )
        as_built = await _reply_share(running)  # the text with its context: bm25 alone
        assert running.app.engine is not None
        await asyncio.to_thread(running.app.engine.rebuild)
        assert await _ids(running, "LGBTQ powerful", pb.SEARCH_MODE_FTS) == ["t-evidence", "t-reply"]
        assert await _reply_share(running) < as_built * 0.95  # the answering turn's own words count more


async def _reply_share(service: Service) -> float:
    """The reply's text-leg score for words it holds only in its context, over the answering turn's."""
    response = await service.stub.Search(search("LGBTQ powerful", pb.SEARCH_MODE_FTS, top_k=len(TURNS)))
    score = {hit.document.id: hit.fts_score for hit in response.hits}
    return score["t-reply"] / score["t-evidence"]
