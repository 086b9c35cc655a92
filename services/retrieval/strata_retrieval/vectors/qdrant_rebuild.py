"""The copying half of a server-engine rebuild: reading the serving generation, writing the next one.

:meth:`~strata_retrieval.vectors.qdrant_joint.QdrantJointIndex.rebuild` decides when to copy and
holds the write lock around each page; the functions here only read and write Qdrant. Rules:
- A generation is read in pages of point ids (``scroll``), and each page's points are read again
  whole just before they are copied, so a page holds what the serving generation holds then.
- Every payload holds its document whole (:mod:`.payload`), so a point is rebuilt from its own
  payload: the BM25 sparse vectors (the text with its context, the text alone) are computed again
  with the new generation's parameters, and the dense vector is copied when the model is
  unchanged, else embedded again.
- ``avg_len`` for BM25 is the serving generation's mean document length in BM25 tokens (None when
  it is empty), measured over every point before the copy starts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import qdrant_edge as qe
from qdrant_client import QdrantClient, models

from strata_retrieval.embedding.protocol import Vectors
from strata_retrieval.vectors import generations
from strata_retrieval.vectors.bm25 import sparse_vectors
from strata_retrieval.vectors.payload import FULL_TEXT_FIELDS, VECTOR_NAME, from_payload, full_text_of

REBUILD_PAGE = 256
Embed = Callable[[Sequence[str]], Vectors]


@dataclass(frozen=True)
class Building:
    """The generation being built, which writes are mirrored into until the swap."""

    collection: str
    bm25: qe.Bm25


def mean_length(client: QdrantClient, collection: str) -> float | None:
    """``collection``'s mean document length in BM25 tokens; None when it is empty."""
    total = count = 0
    for records in _pages(client, collection, page_size=REBUILD_PAGE, with_payload=list(FULL_TEXT_FIELDS)):
        total += sum(generations.document_length(full_text_of(r.payload or {})) for r in records)
        count += len(records)
    return total / count if count else None


def key_pages(client: QdrantClient, collection: str, page_size: int) -> Iterator[list[str]]:
    """Every point id of ``collection``, ``page_size`` at a time."""
    for records in _pages(client, collection, page_size=page_size, with_payload=False):
        yield [str(record.id) for record in records]


def copy_points(
    client: QdrantClient,
    collection: str,
    keys: list[str],
    building: Building,
    *,
    embed: Embed,
    reuse_vectors: bool,
) -> None:
    """These keys' points as ``collection`` holds them now, into ``building``."""
    records = client.retrieve(
        collection, ids=keys, with_payload=True, with_vectors=[VECTOR_NAME] if reuse_vectors else False
    )
    if not records:
        return
    documents = [from_payload(record.payload or {}) for record in records]
    if reuse_vectors:
        dense = [dense_of(record.vector) for record in records]
    else:
        dense = [row.tolist() for row in embed([document.embedded_text for document in documents])]
    points = [
        models.PointStruct(
            id=str(record.id),
            vector={VECTOR_NAME: vector, **sparse_vectors(building.bm25, document)},
            payload=record.payload,
        )
        for record, document, vector in zip(records, documents, dense, strict=True)
    ]
    client.upsert(building.collection, points=points, wait=True)


def dense_of(vector: Any) -> list[float]:
    """The dense vector of a retrieved point's named vectors."""
    return list(vector[VECTOR_NAME])


def _pages(
    client: QdrantClient, collection: str, *, page_size: int, with_payload: bool | list[str]
) -> Iterator[list[models.Record]]:
    offset: models.ExtendedPointId | None = None
    while True:
        records, offset = client.scroll(  # type: ignore[assignment]  # REST ids only
            collection, limit=page_size, offset=offset, with_payload=with_payload
        )
        if records:
            yield records
        if offset is None:
            return
