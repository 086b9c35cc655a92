"""Equal scores come out in document id order, as retrieval.proto and DESIGN.md promise — not in the
order of the storage keys (a UUID of tenant and id) that fusion sorts by. Exact ties, built through
a real service with ids whose key order differs from their own order:

- both leg weights 0: every candidate scores exactly 0, so the whole result is in id order and
  ``top_k`` cuts it by id;
- ``rrf_k`` 0, ``fts_weight`` half the vector weight: the passage nearest in meaning (vector rank 1,
  no shared word) scores 1/1, the one that shares the query's word and comes second in meaning
  scores 1/2 + 0.5/1 — the same float.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from strata_retrieval.model import document_key
from tests.retrieval.service_fixtures import TENANT, passage, running_service, search

FACTS = [
    "The user's cat is called Miso.",
    "Green tea every morning.",
    "Cycles to work along the canal.",
    "Learning the cello since June.",
    "Allergic to peanuts.",
    "Prefers window seats on trains.",
]
IDS = [f"doc-{n}" for n in range(1, len(FACTS) + 1)]


def by_key(ids: list[str]) -> list[str]:
    return sorted(ids, key=lambda document_id: document_key(TENANT, document_id))


async def test_with_both_weights_zero_every_hit_ties_and_ids_decide(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    assert by_key(IDS)[:2] != IDS[:2]  # key order would give another result
    documents = [passage(i, text) for i, text in zip(IDS, FACTS, strict=True)]
    async with running_service(tmp_path / "data", embedder) as service:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=documents))
        for top_k in (2, len(FACTS)):
            request = search("cat tea", pb.SEARCH_MODE_HYBRID, top_k=top_k, vector_weight=0, fts_weight=0)
            found = await service.stub.Search(request)
            assert {hit.rrf_score for hit in found.hits} == {0.0}
            assert [hit.document.id for hit in found.hits] == IDS[:top_k]


@pytest.mark.parametrize("meaning_id", ["doc-1", "doc-2"])
async def test_a_tie_between_the_legs_is_broken_by_id(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, meaning_id: str
) -> None:
    assert by_key(["doc-1", "doc-2"]) == ["doc-2", "doc-1"]
    word_id = "doc-2" if meaning_id == "doc-1" else "doc-1"
    documents = [
        passage(meaning_id, "My cat naps all afternoon on the sofa."),
        passage(word_id, "Kitten Heels Ltd: invoice 4471 for a shoe shipment to Leeds."),
    ]
    tie = {"rrf_k": 0, "vector_weight": 1.0, "fts_weight": 0.5}
    # an exact tie of RRF scores: a service fusing by RRF (the default blend also reads the scores)
    async with running_service(tmp_path / "data", embedder, fusion="rrf") as service:
        await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=documents))
        both = await service.stub.Search(search("kitten", pb.SEARCH_MODE_HYBRID, top_k=2, **tie))
        ranks = {hit.document.id: (hit.vector_rank, hit.fts_rank, hit.rrf_score) for hit in both.hits}
        assert ranks == {meaning_id: (1, 0, 1.0), word_id: (2, 1, 1.0)}  # the tie, exact
        for top_k in (1, 2):
            found = await service.stub.Search(search("kitten", pb.SEARCH_MODE_HYBRID, top_k=top_k, **tie))
            assert [hit.document.id for hit in found.hits] == ["doc-1", "doc-2"][:top_k]
