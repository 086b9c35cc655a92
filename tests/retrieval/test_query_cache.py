"""Query vectors reused: the cache against the real model, and through a real RetrievalService."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.embedding.query_cache import QueryCache
from tests.retrieval.service_fixtures import TENANT, passage, running_service


class CountingEmbedder:
    """The real embedder, counting the query texts it embeds."""

    def __init__(self, real: OnnxSentenceEmbedder) -> None:
        self.real = real
        self.asked: list[str] = []

    @property
    def name(self) -> str:
        return self.real.name

    @property
    def dimension(self) -> int:
        return self.real.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.real.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        self.asked.append(text)
        return self.real.embed_query(text)


def test_a_text_asked_again_is_not_embedded_again_and_gets_the_models_vector(
    embedder: OnnxSentenceEmbedder,
) -> None:
    counting = CountingEmbedder(embedder)
    cache = QueryCache(counting, size=8)
    first = cache.embed_query("which seat does the user like on trains")
    again = cache.embed_query("which seat does the user like on trains")
    assert counting.asked == ["which seat does the user like on trains"]
    assert np.array_equal(again, embedder.embed_query("which seat does the user like on trains"))
    assert again is first
    assert (cache.hits, cache.misses) == (1, 1)


def test_kept_vectors_are_read_only(embedder: OnnxSentenceEmbedder) -> None:
    vector = QueryCache(embedder, size=8).embed_query("milk")
    with pytest.raises(ValueError, match="read-only"):
        vector[0] = 1.0


def test_the_least_recently_asked_text_goes_first(embedder: OnnxSentenceEmbedder) -> None:
    counting = CountingEmbedder(embedder)
    cache = QueryCache(counting, size=2)
    for text in ["apple", "river", "apple", "violin", "apple", "river"]:
        cache.embed_query(text)
    # "river" was the least recently asked when "violin" came: it was embedded again
    assert counting.asked == ["apple", "river", "violin", "river"]
    assert len(cache) == 2


def test_size_zero_keeps_nothing(embedder: OnnxSentenceEmbedder) -> None:
    counting = CountingEmbedder(embedder)
    cache = QueryCache(counting, size=0)
    cache.embed_query("milk")
    cache.embed_query("milk")
    assert counting.asked == ["milk", "milk"]
    assert len(cache) == 0
    with pytest.raises(ValueError, match="at least 0"):
        QueryCache(counting, size=-1)


@pytest.mark.parametrize(("kept", "embeds"), [(None, 1), (0, 2)])
async def test_retrieval_service_embeds_a_repeated_query_once_unless_told_to_keep_none(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, kept: int | None, embeds: int
) -> None:
    counting = CountingEmbedder(embedder)
    settings = {} if kept is None else {"query_embedding_cache": kept}
    async with running_service(tmp_path, counting, **settings) as service:
        await service.stub.UpsertDocuments(
            pb.UpsertDocumentsRequest(documents=[passage("p1", "The user prefers window seats on trains")])
        )
        request = pb.SearchRequest(
            query="which seat on trains",
            mode=pb.SEARCH_MODE_HYBRID,
            filter=pb.DocumentFilter(tenant_id=TENANT),
            top_k=5,
        )
        first = await service.stub.Search(request)
        again = await service.stub.Search(request)
    assert counting.asked == ["which seat on trains"] * embeds
    assert [h.document.id for h in again.hits] == [h.document.id for h in first.hits] == ["p1"]
    assert [h.rrf_score for h in again.hits] == [h.rrf_score for h in first.hits]
