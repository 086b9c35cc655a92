"""A document's context (for a message, the turns before it) is read only by the legs it names, and
is stored and returned apart from the text. Both engines, through a real gRPC server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
import pytest_asyncio

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.retrieval.service_fixtures import ENGINES, TENANT, Service, at, running_service, search

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPLY = "Mel: Yes, last Saturday!"
BEFORE = "Caroline: Did you go hiking in the Alps with your kids?"
LEGS = {
    "m-text": pb.CONTEXT_LEGS_TEXT,
    "m-vector": pb.CONTEXT_LEGS_VECTOR,
    "m-both": pb.CONTEXT_LEGS_BOTH,
    "m-unspecified": pb.CONTEXT_LEGS_UNSPECIFIED,
}


def reply(doc_id: str, legs: pb.ContextLegs.ValueType, context: str = BEFORE) -> pb.Document:
    return pb.Document(
        id=doc_id,
        text=REPLY,
        context=context,
        context_legs=legs,
        kind=pb.DOCUMENT_KIND_MESSAGE,
        scope=pb.Scope(tenant_id=TENANT, agent_id="agent-1", conversation_id="conv-1"),
        role="user",
        created_at=at(1),
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=sorted(ENGINES))
async def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> AsyncIterator[Service]:
    data_dir = tmp_path_factory.mktemp("context") / "data"
    async with running_service(data_dir, embedder, **ENGINES[request.param]) as running:
        documents = [reply(doc_id, legs) for doc_id, legs in LEGS.items()]
        documents.append(reply("m-alone", pb.CONTEXT_LEGS_BOTH, context=""))
        await running.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=documents))
        yield running


async def test_the_text_leg_reads_the_context_only_when_it_is_named(service: Service) -> None:
    response = await service.stub.Search(search("hiking Alps kids", pb.SEARCH_MODE_FTS, top_k=10))
    assert {hit.document.id for hit in response.hits} == {"m-text", "m-both", "m-unspecified"}


async def test_the_vector_leg_embeds_the_context_only_when_it_is_named(service: Service) -> None:
    response = await service.stub.Search(
        search("hiking in the Alps with kids", pb.SEARCH_MODE_VECTOR, top_k=10)
    )
    score = {hit.document.id: hit.vector_score for hit in response.hits}
    assert score["m-vector"] == pytest.approx(score["m-both"])
    assert score["m-vector"] == pytest.approx(score["m-unspecified"])
    assert score["m-text"] == pytest.approx(score["m-alone"])  # the reply's own words alone
    assert score["m-vector"] > score["m-text"] + 0.1


async def test_hits_return_the_context_apart_from_the_text(service: Service) -> None:
    response = await service.stub.Search(search("Saturday", pb.SEARCH_MODE_HYBRID, top_k=10))
    documents = {hit.document.id: hit.document for hit in response.hits}
    assert documents["m-text"].text == REPLY
    assert documents["m-text"].context == BEFORE
    assert documents["m-text"].context_legs == pb.CONTEXT_LEGS_TEXT
    assert documents["m-unspecified"].context_legs == pb.CONTEXT_LEGS_BOTH
    assert documents["m-alone"].context == ""


async def test_a_context_longer_than_the_text_limit_is_refused(service: Service) -> None:
    assert service.app.engine is not None
    limit = service.app.engine.limits.max_text_chars
    document = reply("m-long", pb.CONTEXT_LEGS_TEXT, context="x" * (limit + 1))
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[document]))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "documents[0].context" in (refused.value.details() or "")
    assert not (await service.stub.Search(search("x", pb.SEARCH_MODE_FTS))).hits  # nothing indexed
