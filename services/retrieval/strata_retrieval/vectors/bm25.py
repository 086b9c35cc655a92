"""BM25 as the server engine stores it: Qdrant's own BM25 (``qdrant_edge.Bm25``) turning a document's
text into the sparse vector a point carries (``bm25``), under parameters pinned per generation.

Term frequencies are saturated with ``k`` and length-normalised with ``b`` against ``avg_len``; the
collection's sparse vector carries the IDF modifier, so Qdrant multiplies each query term by its
inverse document frequency at search time (:mod:`.qdrant_joint`).
"""

from __future__ import annotations

from dataclasses import dataclass

import qdrant_edge as qe
from qdrant_client import models

SPARSE_NAME = "bm25"
DEFAULT_AVG_LEN = 256.0  # Qdrant's: tokens after stop words


@dataclass(frozen=True)
class Bm25Params:
    """BM25's document-side parameters (Qdrant's defaults); they shape every stored sparse vector.
    ``avg_len`` None: the collection's measured mean document length, pinned per generation
    (:mod:`.qdrant_joint`)."""

    k: float = 1.2
    b: float = 0.75
    avg_len: float | None = None


def bm25_encoder(params: Bm25Params) -> qe.Bm25:
    """Qdrant's BM25 (English stop words, Snowball stemmer) under ``params``, ``avg_len`` resolved."""
    assert params.avg_len is not None
    return qe.Bm25(qe.Bm25Config(k=params.k, b=params.b, avg_len=params.avg_len, language="english"))


def sparse_vector(bm25: qe.Bm25, text: str) -> models.SparseVector:
    """A document's text as the sparse vector its point stores."""
    sparse = bm25.embed_document(text)
    return models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
