"""The same documents rank the same whatever order they were written in.

Two documents with the same text score exactly alike in both legs (same vector, same BM25). Each
index orders such equal scores by where it stored them, so before fusion a leg ranked the one
written first higher and the fused result followed the write order: importing one history twice
(or rebuilding an index) could reorder a top 10. Here two services hold the same documents written
in opposite orders; every mode must answer both alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strata.retrieval.v1 import retrieval_pb2 as pb
from strata_retrieval.embedding.onnx_embedder import OnnxSentenceEmbedder
from tests.retrieval.service_fixtures import ENGINES, passage, running_service, search

TWINS = [
    ("twin-a", "Green tea every morning before the cello."),
    ("twin-b", "Green tea every morning before the cello."),
]
OTHERS = [
    ("other-1", "The user's cat is called Miso."),
    ("other-2", "Drinks green smoothies after cycling."),
    ("other-3", "Morning practice on the cello since June."),
]


async def _ranked(
    data_dir: Path, embedder: OnnxSentenceEmbedder, order: list[tuple[str, str]], settings: dict[str, Any]
) -> list[list[str]]:
    async with running_service(data_dir, embedder, **settings) as service:
        for doc_id, text in order:  # one call each: storage order = this order
            await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[passage(doc_id, text)]))
        answers = []
        for mode in (pb.SEARCH_MODE_HYBRID, pb.SEARCH_MODE_FTS, pb.SEARCH_MODE_VECTOR):
            found = await service.stub.Search(search("green tea cello", mode, top_k=5))
            answers.append([hit.document.id for hit in found.hits])
        return answers


@pytest.mark.parametrize("engine", sorted(ENGINES))
async def test_twins_rank_alike_whatever_order_they_were_written_in(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, engine: str
) -> None:
    forwards = await _ranked(tmp_path / "forwards", embedder, [*TWINS, *OTHERS], ENGINES[engine])
    backwards = await _ranked(
        tmp_path / "backwards", embedder, [*reversed(OTHERS), *reversed(TWINS)], ENGINES[engine]
    )
    assert forwards == backwards
    assert all({"twin-a", "twin-b"} <= set(ids) for ids in forwards)


TRIPLETS = [(f"triplet-{n}", "Green tea every morning before the cello.") for n in "abc"]
CUTS = [  # (mode, top_k, extra request fields): each leg's depth falls inside the tied triplets
    (pb.SEARCH_MODE_FTS, 1, {}),
    (pb.SEARCH_MODE_VECTOR, 2, {}),
    (pb.SEARCH_MODE_HYBRID, 1, {"vector_depth": 1, "fts_depth": 2}),
]


async def _cut(
    data_dir: Path, embedder: OnnxSentenceEmbedder, order: list[tuple[str, str]], settings: dict[str, Any]
) -> list[list[str]]:
    async with running_service(data_dir, embedder, **settings) as service:
        for doc_id, text in order:  # one call each: storage order = this order
            await service.stub.UpsertDocuments(pb.UpsertDocumentsRequest(documents=[passage(doc_id, text)]))
        answers = []
        for mode, top_k, fields in CUTS:
            found = await service.stub.Search(search("green tea cello", mode, top_k=top_k, **fields))
            answers.append([hit.document.id for hit in found.hits])
        return answers


@pytest.mark.parametrize("engine", sorted(ENGINES))
async def test_which_tied_documents_make_a_legs_cut_does_not_depend_on_write_order(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, engine: str
) -> None:
    """A leg cut at its depth inside a run of equal scores keeps the tied documents of the lowest
    storage keys, as if it had read the run whole: an index that stops at the depth would keep the
    ones it happened to store first."""
    orders = {
        "forwards": [*TRIPLETS, *OTHERS],
        "backwards": [*reversed(OTHERS), *reversed(TRIPLETS)],
        "middle first": [TRIPLETS[1], *OTHERS, TRIPLETS[2], TRIPLETS[0]],
    }
    answers = {
        name: await _cut(tmp_path / name.replace(" ", "-"), embedder, order, ENGINES[engine])
        for name, order in orders.items()
    }
    assert answers["forwards"] == answers["backwards"] == answers["middle first"], answers
    assert [len(ids) for ids in answers["forwards"]] == [1, 2, 1]
    assert all(set(ids) <= {doc_id for doc_id, _ in TRIPLETS} for ids in answers["forwards"])
